// A bundle file's bytes on their way to disk, and what `FileWrites` (file-writes.ts) and its worker thread
// (write-worker.ts) share: the requests it sends, the replies it reads, and the shared counters it waits on.
import { createHash, type Hash } from "node:crypto";
import { writeSync } from "node:fs";

/** A bundle file open for writing at `fd`: bytes appended in order and hashed as they go if another file takes its hash (see `Sink`). */
export class FileOutput {
  private readonly hash: Hash | undefined;

  constructor(
    private readonly fd: number,
    hashed: boolean,
  ) {
    this.hash = hashed ? createHash("sha256") : undefined;
  }

  append(bytes: Uint8Array): void {
    this.hash?.update(bytes);
    writeFully(this.fd, bytes, null);
  }

  digest(): string {
    return this.hash!.digest("hex");
  }

  patch(offset: number, bytes: Uint8Array): void {
    writeFully(this.fd, bytes, offset);
  }
}

/** `position` null: at the file's offset, which advances. */
export function writeFully(fd: number, bytes: Uint8Array, position: number | null): void {
  for (let written = 0; written < bytes.byteLength; ) {
    written += writeSync(fd, bytes, written, bytes.byteLength - written, position === null ? null : position + written);
  }
}

/** What the writer thread is sent, in order: a file opened by the sending thread (`fd`), then its bytes, its digest asked for, its patches. */
export type WriteRequest =
  | { kind: "open"; fd: number; hashed: boolean }
  | { kind: "append"; fd: number; bytes: Uint8Array }
  | { kind: "digest"; fd: number }
  | { kind: "patch"; fd: number; offset: number; bytes: Uint8Array };

/** What the writer thread answers on its reply port: each digest asked for, or the failure it stopped at. */
export type WriteReply = { digest: string } | { failure: { message: string; code?: string; syscall?: string; path?: string; errno?: number } };

/**
 * Indexes into the shared counters. HANDLED: requests the writer thread handled, -1 once it stopped (failed or
 * ended) and handles none more; the sending thread waits on it. QUEUED_BYTES: bytes sent and not yet written.
 * STARTED: 1 once the thread runs, and would say that it stopped.
 */
export const HANDLED = 0;
export const QUEUED_BYTES = 1;
export const STARTED = 2;
export const COUNTERS = 3;
