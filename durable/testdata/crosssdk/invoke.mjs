// Runs one invocation of a durable function written with the official
// TypeScript SDK (@aws/durable-execution-sdk-js) against the checkpoint
// server at <endpoint>: the invocation payload is read from stdin, the
// handler's output is written to stdout. TestCrossSDK drives an execution
// with it and with cairn in turns.
//
//   node invoke.mjs <node_modules dir> <endpoint> < input.json
import path from "node:path";
import { createRequire } from "node:module";
const require = createRequire(path.join(process.argv[2], "x.js"));
const { withDurableExecution } = require("@aws/durable-execution-sdk-js");
const { LambdaClient } = require("@aws-sdk/client-lambda");

const client = new LambdaClient({
	endpoint: process.argv[3],
	region: "us-east-1",
	credentials: { accessKeyId: "test", secretAccessKey: "test" },
	maxAttempts: 1,
});

// The same function as crossFunc in crosssdk_test.go: step, wait 1 s, step.
const handler = withDurableExecution(async (event, ctx) => {
	const first = await ctx.step("first", async () => ({ order: event.order, amount: 42 }));
	await ctx.wait("pause", { seconds: 1 });
	const second = await ctx.step("second", async () => `${first.order}:${first.amount * 2}`);
	return { first, second };
}, { client });

const chunks = [];
for await (const c of process.stdin) chunks.push(c);
const out = await handler(JSON.parse(Buffer.concat(chunks).toString("utf-8")), {
	awsRequestId: "cross-sdk",
	getRemainingTimeInMillis: () => 60000,
	functionName: "cross-sdk",
	invokedFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:cross-sdk",
});
process.stdout.write(JSON.stringify(out));
