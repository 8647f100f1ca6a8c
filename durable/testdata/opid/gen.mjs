// Generates ids.json: the operation IDs and parent IDs that the official
// TypeScript SDK (@aws/durable-execution-sdk-js) assigns, by running a durable
// function with nested child contexts, a combinator and a wait-for-callback in
// its own local test runner and reading the recorded operations back. The Go
// tests compare against the file without Node.
//
//   node gen.mjs <node_modules dir> > ids.json
import path from "node:path";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
const require = createRequire(path.join(process.argv[2], "x.js"));
const { withDurableExecution } = require("@aws/durable-execution-sdk-js");
const { LocalDurableTestRunner } = require("@aws/durable-execution-sdk-js-testing");

const handler = withDurableExecution(async (event, ctx) => {
	await ctx.step("a", async () => 1);
	await ctx.step("b", async () => 2);
	await ctx.runInChildContext("child", async (c) => {
		await c.step("c1", async () => 3);
		await c.runInChildContext("grandchild", async (g) => {
			await g.step("g1", async () => 4);
			await g.step("g2", async () => 5);
		});
		await c.step("c2", async () => 6);
	});
	await ctx.parallel("par", [async (c) => c.step("p1", async () => 7), async (c) => c.step("p2", async () => 8)]);
	await ctx.map("m", [10, 20], async (c, item) => c.step("item", async () => item * 2));
	await ctx.wait("pause", { seconds: 1 });
	for (let i = 0; i < 8; i++) await ctx.step(`s${i}`, async () => i);
	const w1 = ctx.wait("w1", { seconds: 1 });
	const w2 = ctx.wait("w2", { seconds: 2 });
	await ctx.promise.race("race", [w1, w2]);
	// Nobody answers: the callback times out, which is caught.
	await ctx.waitForCallback("approve", async () => {}, { timeout: { seconds: 1 } }).catch(() => "timed out");
	return "done";
});

await LocalDurableTestRunner.setupTestEnvironment({ skipTime: true });
const runner = new LocalDurableTestRunner({ handlerFunction: handler });
const execution = await runner.run({ payload: {} });
const ops = execution.getOperations().map((o) => {
	const d = o.getOperationData();
	return { name: d.Name ?? "", type: d.Type, subType: d.SubType ?? "", id: d.Id, parentId: d.ParentId ?? "" };
});
await LocalDurableTestRunner.teardownTestEnvironment();
console.log(JSON.stringify({ generator: "@aws/durable-execution-sdk-js " + JSON.parse(readFileSync(path.join(process.argv[2], "@aws/durable-execution-sdk-js/package.json"), "utf-8")).version, status: execution.getStatus(), operations: ops }, null, 2));
