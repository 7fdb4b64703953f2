import { closeSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from "node:worker_threads";
import type { Sink } from "./bundle.js";
import { COUNTERS, FileOutput, HANDLED, QUEUED_BYTES, STARTED, type WriteReply, type WriteRequest } from "./file-output.js";

/** The script of the writer thread (src/bundle/write-worker.ts and what it imports), put in by the build (scripts/embedded-text.mjs). */
declare const __SKILLBAKE_WRITE_WORKER__: string;

/**
 * Bodies from which a bundle's files are written by a worker thread. Its start (~30–70 ms on a busy machine) is
 * on the way until rendering outlasts it. Measured on 2 cores under load (writeBundle alone, cold, generated skills
 * of ~17 KB of bundle each, median of 7 per process, 3 processes each way), with the thread vs without: 500 skills
 * 130–158 vs 70–88 ms, 1,000 176–241 vs 98–148 ms, 2,000 172–234 vs 229–266 ms, 10,000 1,098–1,354 vs 1,185–1,326 ms.
 * @internal Exported for its tests, which build a bundle of this many skills.
 */
export const WRITER_THREAD_MIN_BODIES = 2000;

/** How long rendering waits for the writer thread to start, when it must: a thread starts in ~20–60 ms on a busy machine. */
const START_TIMEOUT_MS = 60_000;

/** Bytes handed to the writer thread and not yet written past which rendering waits: memory stays bounded where the disk is slower. */
const MAX_QUEUED_BYTES = 32 << 20;

/**
 * Where `writeFiles` (emit.ts) writes the bundle's files: opened in this thread (a failure to create one is this
 * thread's), written and hashed here for a small bundle, and for a large one by a worker thread while this one
 * renders, which costs ~5 ms of this thread to start it but takes the writes and the hashing (~120 ms for the 170 MB
 * of 10,000 skills) off the rendering thread. Files are closed all at once, by `close`, after the thread ended: no
 * write of its can reach a file opened later under the same number.
 */
export class FileWrites {
  private readonly fds: number[] = [];

  private constructor(private readonly thread: WriterThread | undefined) {}

  /** Writes for a bundle of `bodies` bodies; where no thread can be started, in this one. */
  static start(bodies: number): FileWrites {
    return new FileWrites(bodies >= WRITER_THREAD_MIN_BODIES ? WriterThread.start() : undefined);
  }

  /** Creates `path` (its folders too) for the bundle file's bytes; `hashed` as `renderBundle` opens it. */
  open(path: string, hashed: boolean): Sink {
    mkdirSync(dirname(path), { recursive: true });
    const fd = openSync(path, "wx");
    this.fds.push(fd);
    const { thread } = this;
    if (!thread) {
      const output = new FileOutput(fd, hashed);
      return { write: (bytes) => (output.append(bytes), bytes), reserve: (bytes) => output.append(bytes), digest: () => output.digest(), patch: (offset, bytes) => output.patch(offset, bytes), end: () => {} };
    }
    thread.send({ kind: "open", fd, hashed });
    return {
      write: (bytes) => thread.append(fd, bytes),
      reserve: (bytes) => void thread.append(fd, bytes),
      digest: () => thread.digest(fd),
      // A copy of its own: a patch's bytes may share memory with other buffers.
      patch: (offset, bytes) => thread.send({ kind: "patch", fd, offset, bytes: new Uint8Array(bytes) }),
      end: () => {},
    };
  }

  /** Waits until every byte handed to a sink is in its file; throws the writer thread's failure. */
  flush(): void {
    this.thread?.flush();
  }

  /** Ends the writer thread, then closes every file opened. */
  async close(): Promise<void> {
    await this.thread?.stop();
    for (const fd of this.fds.splice(0)) closeSync(fd);
  }
}

/**
 * The worker thread of write-worker.ts and the waits for it. This thread waits with `Atomics.wait` on the shared
 * counters, so rendering stays synchronous (a digest is needed before the hashes are patched in); the worker's
 * answers are read from a port with `receiveMessageOnPort`. Requests sent before the thread runs wait for it.
 */
class WriterThread {
  private sent = 0;

  private constructor(
    private readonly worker: Worker,
    private readonly counters: Int32Array,
    private readonly replies: MessagePort,
    /** The memory of appended bytes, once written, sent back to be filled again. */
    private readonly spares: MessagePort,
  ) {}

  /** Undefined where no thread can be had (a limit on threads, say). */
  static start(): WriterThread | undefined {
    const counters = new Int32Array(new SharedArrayBuffer(COUNTERS * Int32Array.BYTES_PER_ELEMENT));
    const replies = new MessageChannel();
    const spares = new MessageChannel();
    try {
      const workerData = { counters, replies: replies.port2, spares: spares.port2 };
      const worker = new Worker(__SKILLBAKE_WRITE_WORKER__, { eval: true, workerData, transferList: [replies.port2, spares.port2] });
      // Its failures reach this thread through the counters and the port; the event would be thrown if unheard.
      worker.on("error", () => {});
      return new WriterThread(worker, counters, replies.port1, spares.port1);
    } catch {
      for (const port of [replies.port1, spares.port1]) port.close();
      return undefined;
    }
  }

  send(request: WriteRequest, transfer: ArrayBuffer[] = []): void {
    if (Atomics.load(this.counters, HANDLED) < 0) throw this.failure();
    this.worker.postMessage(request, transfer);
    this.sent++;
  }

  /** Hands `bytes` over, its memory with it, once the thread is not too far behind; returns memory it wrote from before, if any (see `Sink.write`). */
  append(fd: number, bytes: Uint8Array): Uint8Array | undefined {
    this.waitUntil(() => Atomics.load(this.counters, QUEUED_BYTES) <= MAX_QUEUED_BYTES);
    Atomics.add(this.counters, QUEUED_BYTES, bytes.byteLength);
    this.send({ kind: "append", fd, bytes }, [bytes.buffer as ArrayBuffer]);
    const spare = receiveMessageOnPort(this.spares);
    return spare && new Uint8Array(spare.message as ArrayBuffer);
  }

  digest(fd: number): string {
    this.send({ kind: "digest", fd });
    this.flush();
    return (receiveMessageOnPort(this.replies)!.message as { digest: string }).digest;
  }

  flush(): void {
    const sent = this.sent;
    this.waitUntil((handled) => handled >= sent);
  }

  async stop(): Promise<void> {
    await this.worker.terminate();
    this.replies.close();
    this.spares.close();
  }

  private waitUntil(done: (handled: number) => boolean): void {
    for (;;) {
      const handled = Atomics.load(this.counters, HANDLED);
      if (handled < 0) throw this.failure();
      if (done(handled)) return;
      if (Atomics.load(this.counters, STARTED) === 1) Atomics.wait(this.counters, HANDLED, handled);
      // A thread that ends before it runs (out of memory) cannot say so: its start is waited for a while only.
      else if (Atomics.wait(this.counters, STARTED, 0, START_TIMEOUT_MS) === "timed-out") throw new Error("skillbake: the thread to write the bundle's files did not start");
    }
  }

  /** The failure the thread stopped at, as the error it caught (a system error's code, call and path kept), or that it ended. */
  private failure(): Error {
    for (let received; (received = receiveMessageOnPort(this.replies)); ) {
      const reply = received.message as WriteReply;
      if ("failure" in reply) return Object.assign(new Error(reply.failure.message), reply.failure);
    }
    return new Error("skillbake: the thread writing the bundle's files ended");
  }
}
