#!/usr/bin/env node
// The `skills` command: starts the CLI (dist/cli.cjs, from bin.ts) from V8's code cache. Compiling the 1.4 MB
// bundle took ~30 ms of every run and compiling its functions as they first ran as much again: about half of what
// a small build costs beyond Node's own start. Node 20 keeps no code cache for ES modules, so the CLI is a script
// run here, its cache kept beside it as Python keeps __pycache__: as trusted as the code it sits next to.
import { createHash } from "node:crypto";
import { accessSync, closeSync, constants, openSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

const folder = dirname(fileURLToPath(import.meta.url));
const file = join(folder, "cli.cjs");
const cacheFile = `${file}.cache`;
const source = readFileSync(file, "utf8");
// V8 checks that a cache is its own (its version and flags) and the source's length, not its text: the cache file
// begins with a digest of the text and of the Node that made it, so an updated CLI never runs stale code.
const key = createHash("sha256").update(`${process.version}\0${process.arch}\0`).update(source).digest();
let cachedData: Buffer | undefined;
try {
  const bytes = readFileSync(cacheFile);
  if (bytes.subarray(0, key.length).equals(key)) cachedData = bytes.subarray(key.length);
} catch {
  // no cache yet
}
// A script has no module loader for `import()`: the config loader imports through this module's (see config.ts).
const script = new Script(`(function (exports, require, module, __filename, __dirname, __skillbakeImport) {${source}\n})`, { filename: file, cachedData });
if (cachedData === undefined || script.cachedDataRejected) process.once("exit", saveCache);
const module = { exports: {} };
script.runInThisContext()(module.exports, createRequire(file), module, file, folder, (url: string) => import(url));

/**
 * Writes the cache as the process exits, so that it holds the functions this run compiled too. Written whole under
 * another name and renamed into place, so a concurrent start reads the old cache or the new one. Where the install
 * is read-only, nothing is tried: the next start compiles again.
 */
function saveCache(): void {
  try {
    accessSync(folder, constants.W_OK);
  } catch {
    return;
  }
  // Created anew (O_EXCL): whatever is at that name already is neither written through nor removed.
  const temporary = `${cacheFile}.${process.pid}`;
  let created = false;
  try {
    const fd = openSync(temporary, "wx");
    created = true;
    try {
      writeFileSync(fd, Buffer.concat([key, script.createCachedData()]));
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
