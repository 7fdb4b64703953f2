#!/usr/bin/env node
// The `skills` command (dist/launch.cjs, a script: a run whose config runs as a script too starts no ES module
// loader, see `bundleConfig`): starts the CLI (dist/cli.cjs, from bin.ts) from V8's code cache. Compiling the 2 MB
// bundle took ~30 ms of every run and compiling its functions as they first ran as much again: about half of what
// a small build costs beyond Node's own start. Node 20 keeps no code cache for ES modules, so the CLI is a script
// run here, its cache kept beside it as Python keeps __pycache__, and used only as readCache says. esbuild's
// JavaScript, which transpiles a config, is run the same way (see `requireCached`).
import { isAscii } from "node:buffer";
import { createHash } from "node:crypto";
import { accessSync, closeSync, constants, fstatSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

const folder = dirname(fileURLToPath(import.meta.url));
const file = join(folder, "cli.cjs");
/** The cache file: a digest of the source and of the Node that made it, a digest of the payload, then V8's payload. */
const HEADER_BYTES = 64;
/** V8's cache of the whole CLI is about half its source's size; a file past this is no cache of it. */
const MAX_CACHE_BYTES = 32 * 1024 * 1024;
/** What `requireCached` loaded, by package. */
const requiredModules = new Map<string, { exports: unknown }>();
// A script has no module loader for `import()`: the config loader imports through this module's (see config.ts).
const script = cachedScript(file, `${file}.cache`, "__skillbakeImport, __skillbakeRequire");
const module = { exports: {} };
script.runInThisContext()(module.exports, createRequire(file), module, file, folder, (url: string) => import(url), requireCached);

/**
 * `require(id)` of a CommonJS package beside the CLI (`esbuild`), or of a file in its folder (`./zod.cjs`), its main
 * file run from a code cache kept beside cli.cjs (`esbuild.cjs.cache`, `zod.cjs.cache`), once per process. esbuild is
 * loaded at each first build after a config changed: compiling its 97 KB of JavaScript took ~2 ms of that
 * build, half of what requiring it costs.
 */
function requireCached(id: string): unknown {
  const loaded = requiredModules.get(id);
  if (loaded) return loaded.exports;
  const main = createRequire(file).resolve(id);
  const module = { exports: {} };
  requiredModules.set(id, module);
  try {
    const cacheFile = join(folder, `${basename(id, ".cjs")}.cjs.cache`);
    // Called as Node calls a CommonJS module: `this` is its exports.
    cachedScript(main, cacheFile).runInThisContext().call(module.exports, module.exports, createRequire(main), module, main, dirname(main));
  } catch (error) {
    requiredModules.delete(id);
    throw error;
  }
  return module.exports;
}

/**
 * `file` compiled as a CommonJS module's function (with `parameters` after the usual five), from the code cache in
 * `cacheFile` when that is one for its text; otherwise the cache is written as the process exits.
 */
function cachedScript(file: string, cacheFile: string, parameters = ""): Script {
  const sourceBytes = readFileSync(file);
  // Built as ASCII, it is copied into a string rather than decoded.
  const source = sourceBytes.toString(isAscii(sourceBytes) ? "latin1" : "utf8");
  // V8 checks that a cache is its own (its version and flags) and the source's length, not its text: the cache file
  // begins with a digest of the text and of the Node that made it, so an updated file never runs stale code.
  const key = sha256(Buffer.from(`${process.version}\0${process.arch}\0`), sourceBytes);
  const cachedData = readCache(cacheFile, key);
  const wrapped = `(function (exports, require, module, __filename, __dirname${parameters && `, ${parameters}`}) {${source}\n})`;
  const script = new Script(wrapped, { filename: file, cachedData });
  if (cachedData === undefined || script.cachedDataRejected) process.once("exit", () => saveCache(cacheFile, key, script));
  return script;
}

/**
 * Writes the cache as the process exits, so that it holds the functions this run compiled too. Written whole under
 * another name and renamed into place, so a concurrent start reads the old cache or the new one. Where the install
 * is read-only, nothing is tried: the next start compiles again.
 */
function saveCache(cacheFile: string, key: Buffer, script: Script): void {
  try {
    accessSync(folder, constants.W_OK);
  } catch {
    return;
  }
  // Created anew (O_EXCL): whatever is at that name already is neither written through nor removed.
  const temporary = `${cacheFile}.${process.pid}`;
  let created = false;
  try {
    // Never group- or world-writable, whatever the umask: readCache would refuse it.
    const fd = openSync(temporary, "wx", 0o644);
    created = true;
    try {
      const payload = script.createCachedData();
      writeFileSync(fd, Buffer.concat([key, sha256(payload), payload]));
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, cacheFile);
  } catch {
    try {
      if (created) rmSync(temporary, { force: true });
    } catch {
      // left behind; it harms nothing, and the next start compiles as before
    }
  }
}

/**
 * The payload of the cache file when it is one this CLI's owner wrote for this text: read only from a regular file
 * (opened without following a link, non-blocking: a link to /dev/zero or a FIFO there is never read from) owned by
 * the owner of cli.cjs and writable by no one else (in a shared, world-writable install folder, another user could
 * create the file, though not cli.cjs), at most `MAX_CACHE_BYTES`, with both digests right (a payload damaged on
 * disk makes V8 abort the process, every run). Anything else is undefined: the CLI compiles, and replaces the file.
 */
function readCache(cacheFile: string, key: Buffer): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(cacheFile, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.size <= HEADER_BYTES || stats.size > MAX_CACHE_BYTES) return undefined;
    // Windows has no owner or mode bits to go by (every writable file is 0o666 there).
    if (process.platform !== "win32" && (stats.uid !== statSync(file).uid || (stats.mode & 0o022) !== 0)) return undefined;
    const bytes = Buffer.alloc(stats.size);
    for (let read = 0; read < bytes.length; ) {
      const chunk = readSync(fd, bytes, read, bytes.length - read, read);
      if (chunk === 0) return undefined; // cut short meanwhile
      read += chunk;
    }
    const payload = bytes.subarray(HEADER_BYTES);
    return bytes.subarray(0, 32).equals(key) && bytes.subarray(32, HEADER_BYTES).equals(sha256(payload)) ? payload : undefined;
  } catch {
    return undefined; // no cache yet, or a link
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function sha256(...parts: Buffer[]): Buffer {
  const hash = createHash("sha256");
  for (const part of parts) hash.update(part);
  return hash.digest();
}
