// Serves AWS's local durable-execution checkpoint server (the worker shipped in
// @aws/durable-execution-sdk-js-testing) over HTTP, so Go code reaches it with an
// ordinary *lambda.Client whose BaseEndpoint points here.
//
//   node server.mjs <node_modules dir> [port]
//
// Lambda REST routes (the service's own wire format, as aws-sdk-go-v2 sends it):
//   POST /2025-12-01/durable-executions/{arn}/checkpoint      CheckpointDurableExecution
//   GET  /2025-12-01/durable-executions/{arn}/state           GetDurableExecutionState
//   POST /2025-12-01/durable-execution-callbacks/{id}/succeed SendDurableExecutionCallbackSuccess
//   POST /2025-12-01/durable-execution-callbacks/{id}/fail    SendDurableExecutionCallbackFailure
//   POST /2025-12-01/durable-execution-callbacks/{id}/heartbeat
// Control routes, the part the Lambda service itself plays (the testing SDK's
// own runner calls the same worker APIs):
//   POST /harness/start   {"payload": "..."}          StartDurableExecution -> invocation input
//   POST /harness/invoke  {"executionId": "..."}      StartInvocation       -> invocation input
//   POST /harness/complete {"executionId","invocationId","error"}           CompleteInvocation
//   POST /harness/update  {"executionId","operationId","operationData","payload","error"}
//                                                     UpdateCheckpointData (timers, execution end,
//                                                     cancelled waits) -> {"Operation": ...}
// Timestamps are written as epoch seconds, as the service's JSON protocol does.
import { Worker } from "node:worker_threads";
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.argv[2];
const port = Number(process.argv[3] ?? process.env.PORT ?? 9014);
if (!modules) {
	console.error("usage: node server.mjs <node_modules dir> [port]");
	process.exit(2);
}
const workerFile = path.join(modules, "@aws/durable-execution-sdk-js-testing/dist/checkpoint-server/index.mjs");
const worker = new Worker(new URL("./worker.mjs", import.meta.url), { workerData: { entry: pathToFileURL(workerFile).href } });
const waiting = new Map();
worker.on("message", (msg) => {
	const d = msg.data;
	const p = waiting.get(d.requestId);
	if (!p) return;
	waiting.delete(d.requestId);
	if ("error" in d) p.reject(d.error);
	else p.resolve(d.response);
});
worker.on("error", (err) => {
	console.error("checkpoint worker failed:", err);
	process.exit(1);
});

function call(type, params) {
	const requestId = randomUUID();
	return new Promise((resolve, reject) => {
		waiting.set(requestId, { resolve, reject });
		worker.postMessage({ type: "API_REQUEST", data: { type, params, requestId } });
	});
}

function toJSON(value) {
	return JSON.stringify(value, function (key, v) {
		const orig = this[key];
		return orig instanceof Date ? orig.getTime() / 1000 : v;
	});
}

function invocationInput(r) {
	return {
		DurableExecutionArn: r.executionId,
		CheckpointToken: r.checkpointToken,
		InvocationId: r.invocationId,
		InitialExecutionState: { Operations: r.operationEvents.map((e) => e.operation) },
		UpdatedOperationIds: r.updatedOperationIds,
	};
}

function send(res, status, body, headers = {}) {
	res.writeHead(status, { "Content-Type": "application/json", ...headers });
	res.end(body === undefined ? "" : toJSON(body));
}

function sendError(res, err) {
	// worker.mjs sends exceptions as {name, message}.
	const name = err?.name && err.name !== "Error" ? err.name : undefined;
	const message = err?.message ?? String(err);
	let type = name ?? "ServiceException";
	let status = name === "InvalidParameterValueException" ? 400 : 500;
	if (!name && /not found/i.test(message)) {
		type = "ResourceNotFoundException";
		status = 404;
	}
	send(res, status, { __type: type, message }, { "X-Amzn-ErrorType": type });
}

async function body(req) {
	const chunks = [];
	for await (const c of req) chunks.push(c);
	return Buffer.concat(chunks);
}

const server = createServer(async (req, res) => {
	try {
		const url = new URL(req.url, "http://localhost");
		const parts = url.pathname.split("/").filter(Boolean).map(decodeURIComponent);
		const raw = await body(req);
		const json = () => (raw.length ? JSON.parse(raw.toString("utf-8")) : {});
		if (parts[0] === "2025-12-01" && parts[1] === "durable-executions" && parts.length === 4) {
			const arn = parts[2];
			if (parts[3] === "checkpoint" && req.method === "POST") {
				return send(res, 200, await call("CheckpointDurableExecutionState", { DurableExecutionArn: arn, ...json() }));
			}
			if (parts[3] === "state" && req.method === "GET") {
				return send(res, 200, await call("GetDurableExecutionState", {
					DurableExecutionArn: arn,
					CheckpointToken: url.searchParams.get("CheckpointToken") ?? undefined,
					Marker: url.searchParams.get("Marker") ?? undefined,
				}));
			}
		}
		if (parts[0] === "2025-12-01" && parts[1] === "durable-execution-callbacks" && parts.length === 4 && req.method === "POST") {
			const CallbackId = parts[2];
			switch (parts[3]) {
				case "succeed":
					return send(res, 200, await call("SendDurableExecutionCallbackSuccess", { CallbackId, Result: raw.toString("utf-8") }));
				case "fail":
					return send(res, 200, await call("SendDurableExecutionCallbackFailure", { CallbackId, Error: json() }));
				case "heartbeat":
					return send(res, 200, await call("SendDurableExecutionCallbackHeartbeat", { CallbackId }));
			}
		}
		if (parts[0] === "harness" && req.method === "POST") {
			const p = json();
			switch (parts[1]) {
				case "start":
					return send(res, 200, invocationInput(await call("StartDurableExecution", { payload: p.payload, invocationId: randomUUID() })));
				case "invoke":
					return send(res, 200, invocationInput(await call("StartInvocation", { executionId: p.executionId, invocationId: randomUUID() })));
				case "complete":
					return send(res, 200, await call("CompleteInvocation", p));
				case "update":
					// The operation as the server holds it after the update.
					return send(res, 200, { Operation: (await call("UpdateCheckpointData", p))?.operation });
			}
		}
		if (parts[0] === "ping") return send(res, 200, { ok: true });
		send(res, 404, { __type: "UnknownOperationException", message: `no route ${req.method} ${url.pathname}` }, { "X-Amzn-ErrorType": "UnknownOperationException" });
	} catch (err) {
		sendError(res, err);
	}
});
server.listen(port, "127.0.0.1", () => console.log(`checkpoint server on 127.0.0.1:${port}`));
for (const sig of ["SIGTERM", "SIGINT"]) {
	process.on(sig, () => {
		server.close();
		worker.terminate().then(() => process.exit(0));
	});
}
