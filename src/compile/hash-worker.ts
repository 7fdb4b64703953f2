// The worker thread of `hashInWorker` (resources.ts): hashes the files it is sent, in order, answers once with
// every outcome, and ends.
import { parentPort } from "node:worker_threads";
import { hashOutcome, type HashRequest } from "./resources.js";

parentPort!.once("message", (files: HashRequest[]) => parentPort!.postMessage(files.map(hashOutcome)));
