import { createRequire } from "node:module";
import { compareStrings } from "../compile/diagnostics.js";

/**
 * fflate, loaded with the first archive: at load it builds its tables and imports worker_threads, ~6 ms of every
 * start of the CLI (which bundles it) and ~8 ms of every import of the API, for what only a published skill of
 * several files needs.
 */
let fflate: typeof import("fflate") | undefined;

/** A file to archive: its path inside the archive (relative, `/`-separated, no `.` or `..` segment) and its bytes. */
export interface ArchivedFile {
  path: string;
  bytes: Uint8Array;
}

const BLOCK = 512;

/**
 * A .tar.gz of `files` whose bytes depend on nothing but their paths and bytes: regular files only (no folders, no
 * links), at the archive's root, in path order, each with mode 0644, owner and group 0 with no names, and time 0;
 * a path too long for the ustar header goes in a pax one. Compressed with fflate (pure JavaScript, pinned), whose
 * output is the same on every machine, which Node's zlib does not promise across versions and CPUs; the gzip header
 * has no time, no name and one operating system byte.
 */
export function tarGz(files: readonly ArchivedFile[]): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const file of [...files].sort((a, b) => compareStrings(a.path, b.path))) {
    const path = Buffer.from(file.path, "utf8");
    if (file.path === "" || file.path.split("/").some((segment) => segment === "" || segment === "." || segment === "..")) throw new Error(`skillbake: cannot archive the path ${JSON.stringify(file.path)}`);
    const split = ustarName(path);
    if (!split) parts.push(...entry(header(Buffer.from("PaxHeader", "utf8"), Buffer.alloc(0), "x", paxRecord("path", path).length), paxRecord("path", path)));
    const [prefix, name] = split ?? [Buffer.alloc(0), path.subarray(0, 100)];
    parts.push(...entry(header(name, prefix, "0", file.bytes.byteLength), file.bytes));
  }
  parts.push(new Uint8Array(2 * BLOCK)); // the end of the archive
  fflate ??= createRequire(import.meta.url)("fflate") as typeof import("fflate");
  return fflate.gzipSync(concat(parts), { level: 9, mtime: 0 });
}

/** A header and its data, padded to whole blocks. */
function entry(head: Uint8Array, data: Uint8Array): Uint8Array[] {
  const padding = (BLOCK - (data.byteLength % BLOCK)) % BLOCK;
  return [head, data, new Uint8Array(padding)];
}

/** A ustar header (POSIX.1-1988, as `tar` writes with `--format=ustar`). */
function header(name: Uint8Array, prefix: Uint8Array, type: "0" | "x", size: number): Uint8Array {
  if (size >= 8 ** 11) throw new Error("skillbake: a file of 8 GiB or more cannot be archived");
  const block = new Uint8Array(BLOCK);
  const put = (offset: number, text: string) => block.set(Buffer.from(text, "ascii"), offset);
  block.set(name, 0);
  put(100, "0000644\0"); // mode
  put(108, "0000000\0"); // uid
  put(116, "0000000\0"); // gid
  put(124, `${size.toString(8).padStart(11, "0")}\0`);
  put(136, "00000000000\0"); // mtime
  put(148, "        "); // the checksum counts its own field as spaces
  put(156, type);
  put(257, "ustar\0");
  put(263, "00");
  block.set(prefix, 345);
  const checksum = block.reduce((sum, byte) => sum + byte, 0);
  put(148, `${checksum.toString(8).padStart(6, "0")}\0 `);
  return block;
}

/** `path` as ustar's prefix and name (at most 155 and 100 bytes, split at a slash); undefined when it does not fit. */
function ustarName(path: Buffer): [Buffer, Buffer] | undefined {
  if (path.byteLength <= 100) return [Buffer.alloc(0), path];
  // The last slash that leaves a prefix short enough leaves the shortest name.
  const slash = path.lastIndexOf(0x2f, 155);
  return slash > 0 && path.byteLength - slash - 1 <= 100 ? [path.subarray(0, slash), path.subarray(slash + 1)] : undefined;
}

/** One pax extended header record, `<length> <key>=<value>\n`, its length counting itself. */
function paxRecord(key: string, value: Buffer): Buffer {
  const rest = Buffer.byteLength(` ${key}=`) + value.byteLength + 1;
  let length = rest + 1;
  while (String(length).length + rest !== length) length = String(length).length + rest;
  return Buffer.concat([Buffer.from(`${length} ${key}=`, "utf8"), value, Buffer.from("\n")]);
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const whole = new Uint8Array(parts.reduce((total, part) => total + part.byteLength, 0));
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.byteLength;
  }
  return whole;
}
