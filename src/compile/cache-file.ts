import { isAscii } from "node:buffer";
import { createHash } from "node:crypto";
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { types } from "node:util";
import { forEachEscapedPiece } from "./ascii.js";

/**
 * A cache file of skillbake's (`node_modules/.cache/skillbake/…`): a header line `{ format, key, sha256 }`, then
 * the JSON payload the sha256 is of. The header tells a file written for other settings (or by another version)
 * and one that is corrupt, so that it is ignored, never half used. The payload is written in ASCII (characters past
 * it \u-escaped), which decodes as fast as it is copied and parses as one-byte text.
 */

/** The payload, parsed; undefined when the file is missing, unreadable, corrupt, or of another format or key. */
export function readCacheFile(file: string, format: number, key: string): unknown {
  return readCachePayload(file, format, key)?.value;
}

/** What a cache file's payload is on disk: its sha256 (as its header holds it) and its length in bytes. */
export interface PayloadOnDisk {
  sha256: string;
  bytes: number;
}

/** `readCacheFile`, with what the payload is on disk. */
export function readCachePayload(file: string, format: number, key: string): (PayloadOnDisk & { value: unknown }) | undefined {
  // The cache is renamed into place as a regular file: a link in its place (to /dev/zero, say) is not followed.
  const bytes = readRegularFile(file, { followLinks: false, maxBytes: CACHE_MAX_BYTES });
  if (!bytes) return undefined;
  try {
    // The payload is checked as bytes (the text it was hashed as), then decoded once: ~10 MB at 10,000 skills.
    const newline = bytes.indexOf(0x0a);
    if (newline < 0) return undefined;
    const header = JSON.parse(bytes.toString("utf8", 0, newline)) as { format?: unknown; key?: unknown; sha256?: unknown };
    if (header.format !== format || header.key !== key) return undefined;
    const payload = bytes.subarray(newline + 1);
    const sha256 = createHash("sha256").update(payload).digest("hex");
    if (header.sha256 !== sha256) return undefined;
    // A payload of other bytes than ASCII is UTF-8 (one a copy of skillbake wrote before it wrote ASCII).
    return { value: JSON.parse(payload.toString(isAscii(payload) ? "latin1" : "utf8")), sha256, bytes: payload.length };
  } catch {
    return undefined;
  }
}

/**
 * Past this, a payload is longer than the longest text Node makes (which JSON.parse needs), so a cache file that
 * large is not one skillbake wrote: not read (a pull request could commit gigabytes in its place).
 */
const CACHE_MAX_BYTES = 512 * 1024 * 1024;

/**
 * Writes `value` as JSON under its header; failures are ignored: a cache only saves time (undefined comes back).
 * `levels`: how many levels of its arrays and objects are written a member at a time (see `jsonPieces`), down to the
 * level of its records.
 */
export function writeCacheFile(file: string, format: number, key: string, value: unknown, levels = 0): PayloadOnDisk | undefined {
  return writeCachePieces(file, format, key, jsonPieces(value, levels));
}

/** `writeCacheFile` of a value given as its JSON text. */
export function writeCacheJson(file: string, format: number, key: string, json: string): PayloadOnDisk | undefined {
  return writeCachePieces(file, format, key, [json]);
}

function writeCachePieces(file: string, format: number, key: string, pieces: Iterable<string>): PayloadOnDisk | undefined {
  // The header holds the payload's sha256, known once the payload is written: zeros in its place until then.
  const header = `${JSON.stringify({ format, key, sha256: HASH_PLACEHOLDER })}\n`;
  const hashAt = Buffer.byteLength(header.slice(0, header.lastIndexOf(HASH_PLACEHOLDER)));
  // A sibling temporary file renamed into place: a concurrent build reads the old file or the new one. Created
  // anew (O_EXCL): a link put at that name beforehand is neither followed (writing the file it leads to) nor removed.
  const temporary = `${file}.${process.pid}.tmp`;
  let created = false;
  try {
    mkdirSync(dirname(file), { recursive: true });
    const fd = openSync(temporary, "wx");
    created = true;
    let written: PayloadOnDisk;
    try {
      writeFileSync(fd, header);
      written = writeAscii(fd, pieces);
      writeSync(fd, written.sha256, hashAt, "latin1");
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, file);
    return written;
  } catch {
    if (created) rmSync(temporary, { force: true });
    return undefined;
  }
}

const HASH_PLACEHOLDER = "0".repeat(64);

/** How much of a payload is encoded and written at a time. */
const CHUNK_BYTES = 1 << 20;

/**
 * `JSON.stringify(value)` (of a value it writes: not undefined or a function), in pieces: arrays and objects
 * `levels` deep are written a member at a time, each member below them by `JSON.stringify`. A cache's payload as
 * one string (~14 MB at 10,000 skills, two of them) would sit in memory that only a full collection frees, which V8
 * does not run before the build ends.
 * @internal Exported for the test that compares it with `JSON.stringify`.
 */
export function* jsonPieces(value: unknown, levels: number): Generator<string, void, undefined> {
  if (levels <= 0 || !isWalked(value)) {
    yield JSON.stringify(value);
    return;
  }
  // Members written whole go out together, up to `PIECE_LENGTH` characters a piece: ten thousand small pieces, each
  // yielded and encoded on its own, took longer than one string of them all.
  let text = "";
  const array = Array.isArray(value);
  const keys = array ? undefined : Object.keys(value);
  const count = keys ? keys.length : (value as unknown[]).length;
  let written = 0;
  for (let index = 0; index < count; index++) {
    const key = keys ? keys[index]! : String(index);
    const item: unknown = (value as Record<string, unknown>)[key];
    const walked = levels > 1 && isWalked(item);
    const json = walked ? "" : memberJson(key, item);
    // What JSON.stringify leaves out of an object, and writes as null in an array.
    if (json === undefined && !array) continue;
    text += `${written === 0 ? (array ? "[" : "{") : ","}${array ? "" : `${JSON.stringify(key)}:`}${json ?? "null"}`;
    written++;
    if (walked) {
      yield text;
      text = "";
      yield* jsonPieces(item, levels - 1);
    } else if (text.length >= PIECE_LENGTH) {
      yield text;
      text = "";
    }
  }
  yield `${text}${written === 0 ? (array ? "[]" : "{}") : array ? "]" : "}"}`;
}

const PIECE_LENGTH = 1 << 16;

/** What JSON.stringify writes of `value` as the member `key` of an object or array (its `toJSON` is given the key); undefined where it leaves it out. */
function memberJson(key: string, value: unknown): string | undefined {
  if (!hasToJson(value)) return JSON.stringify(value) as string | undefined;
  const text = JSON.stringify({ [key]: value });
  return text === "{}" ? undefined : text.slice(JSON.stringify(key).length + 2, -1);
}

function hasToJson(value: unknown): boolean {
  return ((typeof value === "object" && value !== null) || typeof value === "bigint") && typeof (value as { toJSON?: unknown }).toJSON === "function";
}

/** An array, or an object JSON.stringify writes by its own enumerable keys: not a boxed primitive, none with `toJSON`. */
function isWalked(value: unknown): value is object {
  return typeof value === "object" && value !== null && !hasToJson(value) && !types.isBoxedPrimitive(value);
}

/**
 * Writes JSON text in pieces at the file's offset in ASCII, characters past it \u-escaped; the sha256 and number of
 * the bytes written. Through one buffer of a megabyte: a buffer of the whole payload (~14 MB at 10,000 skills) would
 * be fresh memory, each page first touched by the copy, which took longer than the write itself (a 14 MB payload:
 * 41-61 ms encoded whole, hashed and written, 18-19 a chunk at a time).
 */
function writeAscii(fd: number, pieces: Iterable<string>): PayloadOnDisk {
  const hash = createHash("sha256");
  const chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  let filled = 0;
  let bytes = 0;
  const flush = () => {
    hash.update(chunk.subarray(0, filled));
    bytes += filled;
    for (let written = 0; written < filled; ) written += writeSync(fd, chunk, written, filled - written);
    filled = 0;
  };
  const put = (piece: string) => {
    for (let at = 0; at < piece.length; ) {
      if (filled === CHUNK_BYTES) flush();
      const end = Math.min(piece.length, at + CHUNK_BYTES - filled);
      filled += chunk.write(at === 0 && end === piece.length ? piece : piece.slice(at, end), filled, "latin1");
      at = end;
    }
  };
  for (const text of pieces) {
    // The byte count tells ASCII text (most is) in less than half the time of a search for what to escape.
    if (Buffer.byteLength(text) === text.length) put(text);
    else forEachEscapedPiece(text, /[\u0080-\uffff]+/g, put);
  }
  flush();
  return { sha256: hash.digest("hex"), bytes };
}

/**
 * A regular file's bytes; undefined for anything else (a FIFO, a device, a folder), one over `maxBytes`, or a
 * failure. Opened non-blocking, so a FIFO cannot hang a build, and checked by the open file's own stats before
 * reading: a cache file, or a path one names, may be anything a pull request committed.
 */
export function readRegularFile(path: string, { followLinks, maxBytes = Infinity }: { followLinks: boolean; maxBytes?: number }): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | (followLinks ? 0 : constants.O_NOFOLLOW));
    const stats = fstatSync(fd);
    return stats.isFile() && stats.size <= maxBytes ? readFileSync(fd) : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
