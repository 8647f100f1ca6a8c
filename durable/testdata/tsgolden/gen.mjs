// Generates examples.json: the operations, with their payloads and error
// objects, that the official TypeScript SDK (@aws/durable-execution-sdk-js)
// records for the eight operation kinds of its documented examples (a step
// with retries, a wait, a wait-for-callback, parallel, map, a child context,
// wait-for-condition and a chained invoke), run in its own local test runner.
// TestPayloadsMatchOfficialSDK runs the same functions written with cairn and
// compares, without Node.
//
//   node gen.mjs <node_modules dir> > examples.json
import path from "node:path";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(path.join(process.argv[2], "x.js"));
const { withDurableExecution, createRetryStrategy } = require("@aws/durable-execution-sdk-js");
const { LocalDurableTestRunner, WaitingOperationStatus } = require("@aws/durable-execution-sdk-js-testing");

const examples = {
	// A step that fails twice and succeeds on its third attempt, then a step
	// returning nothing, and one that fails for good.
	"step-with-retry": {
		input: { order: "o-1" },
		handler: async (event, ctx) => {
			const charged = await ctx.step("charge", async (sc) => {
				if (sc.attempt < 3) throw new Error(`card declined (${calls})`);
				return { order: event.order, amount: 42, currency: "EUR" };
			}, { retryStrategy: createRetryStrategy({ maxAttempts: 3, initialDelay: { seconds: 1 }, backoffRate: 2, jitter: "NONE" }) });
			await ctx.step("notify", async () => {});
			const r = await ctx.step("audit", async () => { throw new Error("audit store down"); },
				{ retryStrategy: createRetryStrategy({ maxAttempts: 1 }) }).catch((e) => ({ caught: e.name, message: e.message }));
			return { charged, audit: r };
		},
	},
	"wait": {
		input: {},
		handler: async (event, ctx) => {
			const before = await ctx.step("before", async () => "started");
			await ctx.wait("cool-off", { seconds: 2 });
			return { before, after: await ctx.step("after", async () => 7) };
		},
	},
	"wait-for-callback": {
		input: {},
		callbacks: { approve: '{"approved":true,"by":"ops"}', raw: "succeeded" },
		handler: async (event, ctx) => {
			const a = await ctx.waitForCallback("approve", async (id) => {}, { timeout: { seconds: 60 } });
			const b = await ctx.waitForCallback("raw", async (id) => {});
			return { a: JSON.parse(a), b };
		},
	},
	"parallel": {
		input: {},
		handler: async (event, ctx) => {
			const ok = await ctx.parallel("fan-out", [
				async (c) => c.step("p1", async () => ({ n: 1 })),
				async (c) => c.step("p2", async () => "two"),
				async (c) => { await c.step("p3", async () => {}); },
			]);
			const failing = await ctx.parallel("with-failure", [
				async (c) => c.step("ok", async () => 1),
				async (c) => c.step("bad", async () => { throw new Error("branch broke"); }, { retryStrategy: createRetryStrategy({ maxAttempts: 1 }) }),
			], { maxConcurrency: 1 }); // one at a time: which branches started does not depend on timing
			return { ok: ok.getResults(), reason: failing.completionReason, failed: failing.failureCount };
		},
	},
	"map": {
		input: { items: [1, 2, 3, 4] },
		handler: async (event, ctx) => {
			const r = await ctx.map("double", event.items, async (c, item, i) => c.step(`item-${i}`, async () => item * 2), { maxConcurrency: 2 });
			const tolerant = await ctx.map("tolerant", [1, 2, 3], async (c, item) => {
				if (item === 2) throw new Error("item 2 is bad");
				return item;
			}, { completionConfig: { toleratedFailureCount: 1 } });
			return { doubled: r.getResults(), tolerant: tolerant.getResults(), reason: tolerant.completionReason };
		},
	},
	"run-in-child-context": {
		input: {},
		handler: async (event, ctx) => {
			const v = await ctx.runInChildContext("child", async (c) => {
				const x = await c.step("x", async () => 2);
				const y = await c.step("y", async () => 3);
				return { sum: x + y };
			});
			await ctx.runInChildContext("empty", async (c) => { await c.step("z", async () => "z"); });
			const f = await ctx.runInChildContext("failing", async (c) => { throw new Error("child broke"); }).catch((e) => ({ caught: e.name, message: e.message }));
			return { v, f };
		},
	},
	"wait-for-condition": {
		input: {},
		handler: async (event, ctx) => {
			const s = await ctx.waitForCondition("poll", async (state) => ({ count: state.count + 1 }), {
				initialState: { count: 0 },
				waitStrategy: (state) => (state.count >= 3 ? { shouldContinue: false } : { shouldContinue: true, delay: { seconds: 1 } }),
			});
			return s;
		},
	},
	"invoke": {
		input: {},
		handler: async (event, ctx) => {
			const r = await ctx.invoke("price", "pricing", { sku: "A-1", qty: 2 });
			return { total: r.total };
		},
		functions: { pricing: async (event) => ({ total: event.qty * 10, sku: event.sku }) },
	},
};

const safe = (f) => { try { return f(); } catch (e) { return { thrown: e.message }; } };
const version = JSON.parse(readFileSync(path.join(process.argv[2], "@aws/durable-execution-sdk-js/package.json"), "utf-8")).version;
await LocalDurableTestRunner.setupTestEnvironment({ skipTime: true });
const out = { generator: "@aws/durable-execution-sdk-js " + version, examples: {} };
for (const [name, ex] of Object.entries(examples)) {
	const runner = new LocalDurableTestRunner({ handlerFunction: withDurableExecution(ex.handler) });
	for (const [fn, h] of Object.entries(ex.functions ?? {})) runner.registerFunction(fn, h);
	const answered = Object.entries(ex.callbacks ?? {}).map(async ([op, result]) => {
		const cb = runner.getOperation(op);
		await cb.waitForData(WaitingOperationStatus.SUBMITTED);
		await cb.sendCallbackSuccess(result);
	});
	const execution = await runner.run({ payload: ex.input });
	await Promise.all(answered);
	const ops = execution.getOperations().map((o) => {
		const d = o.getOperationData();
		const det = d.StepDetails ?? d.ContextDetails ?? d.CallbackDetails ?? d.ChainedInvokeDetails ?? {};
		const rec = { id: d.Id, parentId: d.ParentId ?? "", name: d.Name ?? "", type: d.Type, subType: d.SubType ?? "", status: d.Status };
		if (det.Result !== undefined) rec.result = det.Result;
		if (det.Error !== undefined) rec.error = det.Error;
		if (d.StepDetails?.Attempt !== undefined) rec.attempt = d.StepDetails.Attempt;
		if (d.ContextDetails?.ReplayChildren) rec.replayChildren = true;
		if (d.ChainedInvokeDetails && d.Type === "CHAINED_INVOKE") rec.functionName = d.ChainedInvokeOptions?.FunctionName;
		if (d.WaitDetails?.ScheduledEndTimestamp !== undefined) rec.wait = true;
		return rec;
	});
	out.examples[name] = { input: ex.input, callbacks: ex.callbacks ?? {}, status: execution.getStatus(), result: JSON.stringify(execution.getResult()), error: execution.getStatus() === "FAILED" ? safe(() => execution.getError()) : undefined, operations: ops };
}
await LocalDurableTestRunner.teardownTestEnvironment();
console.log(JSON.stringify(out, null, 2));
