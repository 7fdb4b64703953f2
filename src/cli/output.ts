import { fstatSync, writeSync } from "node:fs";

/** Where a command writes what it reports: standard output or error, or what a test collects. */
export interface Output {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

/** The process's standard output or error as the CLI writes to it; `flush` calls back once all of it is written. */
export interface ProcessOutput extends Output {
  flush(done: () => void): void;
}

/**
 * Standard output or error: `fd`, with `stream`, Node's stream of it, made when first asked for. Into a pipe, a
 * socket or a file (CI logs, scripts, a redirect), text is written at once with write(2): Node's stream for a pipe
 * is a socket, whose modules took ~2 ms of every start to load and set up. A terminal gets Node's stream (and its
 * `isTTY`), as does all that follows a write that could not finish (a full non-blocking pipe, a closed one): the
 * stream queues it, in order, and reports its errors as it always has.
 */
export function processOutput(fd: number, stream: () => NodeJS.WritableStream & { isTTY?: boolean }): ProcessOutput {
  if (!writtenDirectly(fd)) {
    return {
      write: (text) => stream().write(text),
      get isTTY() {
        return stream().isTTY;
      },
      flush: (done) => stream().write("", done),
    };
  }
  let fallback: NodeJS.WritableStream | undefined;
  return {
    isTTY: false,
    write(text) {
      if (fallback) return fallback.write(text);
      const bytes = Buffer.from(text);
      let written = 0;
      try {
        while (written < bytes.length) written += writeSync(fd, bytes, written);
      } catch {
        fallback = stream();
        fallback.write(bytes.subarray(written));
      }
      return true;
    },
    flush: (done) => (fallback ? fallback.write("", done) : done()),
  };
}

/** A pipe, a socket or a regular file: never a terminal. A character device may be one, so it gets Node's stream. */
function writtenDirectly(fd: number): boolean {
  try {
    const stats = fstatSync(fd);
    return stats.isFIFO() || stats.isSocket() || stats.isFile();
  } catch {
    return false; // closed: Node's stream decides what that means
  }
}
