import * as crypto from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync, type BigIntStats } from "node:fs";
import { createRequire } from "node:module";
import { asFileSystemError, FileSystemError } from "./fs-error.js";

/** The script of the hashing worker (src/compile/hash-worker.ts and what it imports), put in by the build (scripts/embedded-text.mjs). */
declare const __SKILLBAKE_HASH_WORKER__: string;

/** One file of a skill folder, as the manifest lists it. */
export interface SkillFile {
  /** Relative to the skill folder, `/`-separated. */
  path: string;
  size: number;
  sha256: string;
}

/** Read size of `hashFile`: one buffer serves every call, since reads are synchronous. */
const CHUNK = Buffer.allocUnsafe(256 * 1024);

/**
 * Size and sha256 of a file, and its identity and times (which tell the cache whether it changed), read in
 * chunks so a large asset is never held in memory whole. Synchronous: most skill files are a few kilobytes,
 * and a stream's setup costs more than reading them. Opened non-blocking, so a FIFO cannot hang the build.
 * With `expected` (what discovery verified inside the root), a file that is another one now is not read: it
 * throws a `PathChangedError`.
 * @internal Left out of the package's declarations: its `BigIntStats` would make them need `@types/node`.
 */
export function hashFile(path: string, expected?: FileIdentity): { size: number; sha256: string; stats: BigIntStats } {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = fstatSync(fd, { bigint: true });
    // A device put in a listed file's place (/dev/zero) would be read forever.
    if (!stats.isFile()) throw Object.assign(new Error(`${path} is not a regular file`), { code: "EISDIR" });
    if (expected && !isSameFile(stats, expected)) throw new PathChangedError(path);
    return { ...hashOpenFile(fd, Number(stats.size)), stats };
  } finally {
    closeSync(fd);
  }
}

/**
 * A skill file's bytes for the bundle to carry (`files: "embed"`, a published archive): read only while `path` is
 * still the file discovery verified (`expected`'s identity), and returned only as the bytes whose size and sha256 the
 * manifest records. A file changed since throws a `FileSystemError` naming it (`display`), as any failure to read.
 * @internal Left out of the package's declarations: its `Buffer` would make them need `@types/node`.
 */
export function readRecordedFile(path: string, display: string, expected: FileIdentity & { size: number; sha256: string }): Buffer {
  const changed = () => new FileSystemError(`read ${display}`, new Error("it changed during the build; run `skills build` again"));
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const stats = fstatSync(fd, { bigint: true });
    if (!stats.isFile() || !isSameFile(stats, expected) || stats.size !== BigInt(expected.size)) throw changed();
    const bytes = Buffer.allocUnsafe(expected.size);
    for (let filled = 0; filled < bytes.length; ) {
      const read = readSync(fd, bytes, filled, bytes.length - filled, filled);
      if (read === 0) throw changed();
      filled += read;
    }
    if (sha256Hex(bytes) !== expected.sha256) throw changed();
    return bytes;
  } catch (error) {
    throw asFileSystemError(error, `read ${display}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Size and sha256 of an open regular file, read from its current offset. With `expectedSize` (its size by fstat),
 * a file read whole in one read is hashed at once, without the read that would find its end: most skill files
 * are a few kilobytes, where those two cost about as much as the hashing.
 */
export function hashOpenFile(fd: number, expectedSize?: number): { size: number; sha256: string } {
  const first = readSync(fd, CHUNK, 0, CHUNK.length, null);
  if (first === expectedSize && first < CHUNK.length) return { size: first, sha256: sha256Hex(CHUNK.subarray(0, first)) };
  const hash = crypto.createHash("sha256");
  let size = 0;
  for (let bytesRead = first; bytesRead > 0; size += bytesRead, bytesRead = readSync(fd, CHUNK, 0, CHUNK.length, null)) hash.update(CHUNK.subarray(0, bytesRead));
  return { size, sha256: hash.digest("hex") };
}

/** Node's one-shot digest (20.12 and later): for small inputs, several times faster than a Hash object. */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: Uint8Array | string, encoding: "hex") => string }).hash;

/** The sha256 of `bytes` (a string as UTF-8), in hex. */
export function sha256Hex(bytes: Uint8Array | string): string {
  return oneShotHash ? oneShotHash("sha256", bytes, "hex") : crypto.createHash("sha256").update(bytes).digest("hex");
}

/** A file to hash, and the identity discovery verified for it (see `hashFile`). */
export interface HashRequest {
  path: string;
  expected?: FileIdentity;
}

/** What hashing a file gave: its size, sha256 and stats, or why it was not read (`PATH_CHANGED`, else an errno code). */
export type HashOutcome = { size: number; sha256: string; stats: FileStats } | { failure: string };

/** The failure of a file that is no longer the one discovery verified (`PathChangedError`). */
export const PATH_CHANGED = "path-changed";

/** `hashFile` as data: what a worker thread can send back. */
export function hashOutcome({ path, expected }: HashRequest): HashOutcome {
  try {
    const { size, sha256, stats } = hashFile(path, expected);
    return { size, sha256, stats: fileStatsOf(stats) };
  } catch (error) {
    return { failure: error instanceof PathChangedError ? PATH_CHANGED : String((error as NodeJS.ErrnoException).code ?? error) };
  }
}

/**
 * Hashes `files` in a worker thread (src/compile/hash-worker.ts) while this one goes on: tens of thousands of
 * small files cost a syscall-bound half second or more, which the thread parsing skills need not wait for. The
 * worker does not keep the process alive until its outcomes are asked for, so a build that fails first is not
 * held up. Outcomes by path; empty if the worker failed, which leaves every file to be hashed here.
 */
export function hashInWorker(files: readonly HashRequest[]): () => Promise<Map<string, HashOutcome>> {
  const worker = new (workerThreads().Worker)(__SKILLBAKE_HASH_WORKER__, { eval: true });
  worker.unref();
  const outcomes = new Promise<Map<string, HashOutcome>>((resolve) => {
    worker.once("message", (list: HashOutcome[]) => resolve(new Map(files.map((file, index) => [file.path, list[index]!]))));
    worker.once("error", () => resolve(new Map()));
    worker.once("exit", () => resolve(new Map()));
  });
  worker.postMessage(files);
  return () => {
    worker.ref();
    return outcomes;
  };
}

/** Which file a path led to when discovery checked it was inside its root: device and inode. */
export interface FileIdentity {
  dev: bigint;
  ino: bigint;
}

/** A file's identity and what changes when it is written: what the walk found, and what the build cache compares. */
export interface FileStats extends FileIdentity {
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

/**
 * The fields of `stats` (Node's `BigIntStats`) a `FileStats` holds: kept for every file of a build, so without the
 * other thirteen BigInts.
 */
export function fileStatsOf(stats: FileStats): FileStats {
  return { dev: stats.dev, ino: stats.ino, size: stats.size, mtimeNs: stats.mtimeNs, ctimeNs: stats.ctimeNs };
}

/** A file's device and inode, as one key: the same file, whatever path reaches it. */
export function identityKey(identity: FileIdentity): string {
  return `${identity.dev}:${identity.ino}`;
}

export function isSameFile(stats: { dev: bigint; ino: bigint }, identity: FileIdentity): boolean {
  return stats.dev === identity.dev && stats.ino === identity.ino;
}

/** A file under a root that is no longer the one discovery verified (swapped for a link, say): it is not read. */
export class PathChangedError extends Error {
  override name = "PathChangedError";
  constructor(readonly path: string) {
    super(`${path} changed after it was found`);
  }
}

/**
 * node:worker_threads, loaded when a worker starts: a build that starts none (most small ones) does not pay for
 * loading it (~2 ms of every start).
 * @internal Left out of the package's declarations: its type would make them need `@types/node`.
 */
export function workerThreads(): typeof import("node:worker_threads") {
  return createRequire(import.meta.url)("node:worker_threads") as typeof import("node:worker_threads");
}
