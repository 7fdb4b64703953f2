// The worker thread of `FileWrites` (file-writes.ts) for a large bundle: writes and hashes the chunks of each file
// in the order they are sent, while the sending thread goes on rendering. It counts what it handled in shared memory,
// where that thread waits for a digest or for the last write; it stops at the first failure, which it sends back.
import { parentPort, workerData, type MessagePort } from "node:worker_threads";
import { FileOutput, HANDLED, QUEUED_BYTES, STARTED, type WriteReply, type WriteRequest } from "./file-output.js";
import type { SystemError } from "../compile/fs-error.js";

const { counters, replies, spares } = workerData as { counters: Int32Array; replies: MessagePort; spares: MessagePort };
const files = new Map<number, FileOutput>();

// However this thread ends, the sending thread stops waiting for it.
process.on("exit", stop);
Atomics.store(counters, STARTED, 1);
Atomics.notify(counters, STARTED);

parentPort!.on("message", (request: WriteRequest) => {
  if (Atomics.load(counters, HANDLED) < 0) return;
  try {
    handle(request);
  } catch (error) {
    const { message, code, syscall, path, errno } = (error ?? {}) as SystemError;
    reply({ failure: { message: String(message ?? error), code, syscall, path, errno } });
    stop();
    return;
  }
  if (request.kind === "append") {
    Atomics.sub(counters, QUEUED_BYTES, request.bytes.byteLength);
    // Back for the sending thread to fill again (see `Sink.write`).
    spares.postMessage(request.bytes.buffer, [request.bytes.buffer as ArrayBuffer]);
  }
  Atomics.add(counters, HANDLED, 1);
  Atomics.notify(counters, HANDLED);
});

function handle(request: WriteRequest): void {
  if (request.kind === "open") files.set(request.fd, new FileOutput(request.fd, request.hashed));
  else if (request.kind === "append") files.get(request.fd)!.append(request.bytes);
  else if (request.kind === "digest") reply({ digest: files.get(request.fd)!.digest() });
  else files.get(request.fd)!.patch(request.offset, request.bytes);
}

function reply(message: WriteReply): void {
  replies.postMessage(message);
}

function stop(): void {
  Atomics.store(counters, HANDLED, -1);
  Atomics.notify(counters, HANDLED);
}
