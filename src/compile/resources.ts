import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readSync, type BigIntStats } from "node:fs";

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
 */
export function hashFile(path: string): { size: number; sha256: string; stats: BigIntStats } {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = fstatSync(fd, { bigint: true });
    // A device put in a listed file's place (/dev/zero) would be read forever.
    if (!stats.isFile()) throw Object.assign(new Error(`${path} is not a regular file`), { code: "EISDIR" });
    const hash = createHash("sha256");
    let size = 0;
    for (let bytesRead; (bytesRead = readSync(fd, CHUNK, 0, CHUNK.length, null)) > 0; size += bytesRead) hash.update(CHUNK.subarray(0, bytesRead));
    return { size, sha256: hash.digest("hex"), stats };
  } finally {
    closeSync(fd);
  }
}
