// Worker entry that loads AWS's checkpoint-server worker after wrapping its
// message port: an exception crossing a worker boundary is structured-cloned,
// which keeps an Error's message but turns a class such as
// InvalidParameterValueException into a plain "Error". The wrapper sends the
// exception's name and message as a plain object instead, so the HTTP side can
// answer with the service's error type.
import { parentPort, workerData } from "node:worker_threads";

const post = parentPort.postMessage.bind(parentPort);
parentPort.postMessage = (msg) => {
	const err = msg?.data?.error;
	if (msg?.data && "error" in msg.data) {
		msg.data.error = { name: err?.name ?? "Error", message: err?.message ?? String(err) };
	}
	post(msg);
};
await import(workerData.entry);
