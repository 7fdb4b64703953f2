import { createHash } from "node:crypto";
import { readdirSync } from "node:fs";
import { isBuiltin } from "node:module";
import { isProxy } from "node:util/types";
import { basename, dirname, join } from "node:path";
import { readCacheFile, readRegularFile, writeCacheFile } from "./cache-file.js";
import { TOOL_VERSION } from "./version.js";

/** Bumped when the entry's layout changes. */
const FORMAT = 2;

/** What esbuild made of a config (TypeScript or an ES module), and what it read to make it. */
export interface TranspiledConfig {
  /** esbuild's output: the config and its local imports as one script or ES module, with an inline source map. */
  code: string;
  /** The config and the local files bundled into `code`, absolute. */
  inputs: string[];
  /** How `code` runs: as a script, or as an ES module (see `bundleConfig` in config.ts). */
  kind: "script" | "module";
}

interface Entry {
  code: string;
  kind: TranspiledConfig["kind"];
  /** Each bundled file with the sha256 of its bytes. */
  inputs: Record<string, string>;
  /** Each folder an import was resolved in (`./agents` becomes agents.ts where it was agents.js) with the sha256 of its entry names. */
  folders: Record<string, string>;
  /** Each tsconfig.json, jsconfig.json and package.json esbuild may read for a bundled file (compiler settings, `sideEffects`): the sha256 of its bytes, "" when absent. */
  settings: Record<string, string>;
}

/**
 * The transpiled-config cache: `node_modules/.cache/skillbake/config/<config file name>.json` beside the config,
 * so that a build whose config and local imports are unchanged does not start esbuild (~0.1–0.2 s of a small
 * build). An entry is used only when every file it was built from still has the same sha256, no folder an
 * import was resolved in has gained or lost an entry, and no tsconfig.json, jsconfig.json or package.json on
 * the way up from a bundled file has changed, appeared or gone; and only for the same tool build, config path
 * and working folder (esbuild's output names both). One that is unreadable, corrupt (its checksum disagrees)
 * or stale is ignored and replaced. A config that imports a package (other than `skillbake` and Node's own
 * modules) or whose tsconfig `extends` another is not cached: where a package resolves to is not a file's bytes.
 */
export function readTranspiledConfig(file: string, cwd: string): TranspiledConfig | undefined {
  const entry = readEntry(file, cwd);
  if (!entry) return undefined;
  for (const [path, digest] of Object.entries(entry.inputs)) if (fileDigest(path) !== digest) return undefined;
  for (const [path, digest] of Object.entries(entry.folders)) if (listingDigest(path) !== digest) return undefined;
  for (const [path, digest] of Object.entries(entry.settings)) if ((fileDigest(path) ?? "") !== digest) return undefined;
  return { code: entry.code, inputs: Object.keys(entry.inputs).sort(), kind: entry.kind };
}

/** One import esbuild's metafile records. */
interface MetafileImport {
  path: string;
  external?: boolean;
}

/**
 * Saves what esbuild made of the config, when it can be cached (see `readTranspiledConfig`); failures are
 * ignored: the cache only saves time. `imports` lists each bundled file's imports as esbuild resolved them (absolute
 * paths), `sources` each bundled file's text as esbuild read it.
 */
export function writeTranspiledConfig(
  file: string,
  cwd: string,
  transpiled: TranspiledConfig,
  imports: ReadonlyMap<string, readonly MetafileImport[]>,
  sources: ReadonlyMap<string, string>,
): void {
  const folders: Record<string, string> = {};
  for (const [importer, list] of imports) {
    for (const imported of list) {
      if (imported.external && !isBuiltin(imported.path)) return;
      if (!imported.external) for (const folder of [dirname(importer), dirname(imported.path)]) folders[folder] = listingDigest(folder);
    }
  }
  const settings: Record<string, string> = {};
  for (const input of transpiled.inputs) {
    // Up to the root, whose parent is itself: the loop stops there, its files recorded.
    for (let folder = dirname(input); !(join(folder, SETTINGS_FILES[0]) in settings); folder = dirname(folder)) {
      for (const name of SETTINGS_FILES) {
        const bytes = readRegularFile(join(folder, name), { followLinks: true });
        if (name !== "package.json" && bytes?.includes('"extends"')) return;
        settings[join(folder, name)] = bytes ? sha256(bytes) : "";
      }
    }
  }
  // Each file as esbuild read it (its text in the source map): one edited or removed since is not recorded as that code's input.
  const inputs: Record<string, string> = {};
  for (const input of transpiled.inputs) {
    const digest = fileDigest(input);
    const read = sources.get(input);
    if (read === undefined || digest !== sha256(Buffer.from(read))) return;
    inputs[input] = digest;
  }
  writeCacheFile(entryPath(file), FORMAT, entryKey(file, cwd), { code: transpiled.code, kind: transpiled.kind, inputs, folders, settings } satisfies Entry);
}

/** Bumped when the validated config's entry changes. */
const VALIDATED_FORMAT = 1;

/**
 * The validated-config cache: `node_modules/.cache/skillbake/config/<config file name>.validated.json`, the config's
 * value as `dataJson` wrote it and what validating that value resolved to. A build whose config gives the same
 * value again (as data) takes the result without building the config's schema (~2 ms of a small build, and ~1 MB
 * the collector then cleans up); only for the same tool build and config path. Undefined when there is no entry for
 * this value.
 */
export function readValidatedConfig(file: string, value: string): unknown {
  const entry = readCacheFile(validatedPath(file), VALIDATED_FORMAT, validatedKey(file)) as { value?: unknown; resolved?: unknown } | undefined;
  if (entry?.value !== value || typeof entry.resolved !== "string") return undefined;
  try {
    return JSON.parse(entry.resolved);
  } catch {
    return undefined;
  }
}

/** Records what `value` (`dataJson`'s text) resolved to, when that is data too; failures are ignored. */
export function writeValidatedConfig(file: string, value: string, resolved: unknown): void {
  const resolvedJson = dataJson(resolved);
  if (resolvedJson !== undefined) writeCacheFile(validatedPath(file), VALIDATED_FORMAT, validatedKey(file), { value, resolved: resolvedJson });
}

/**
 * `value` as JSON when it is data that JSON gives back as it is: null, booleans, strings, finite numbers but -0, and
 * arrays (without holes or other properties) and plain objects (of Object's prototype, with enumerable data
 * properties under string keys only) of such values, once each. Undefined for anything else (a function, a zod
 * schema, `undefined`, a getter, a proxy, a cycle…), which only validation can judge.
 */
export function dataJson(value: unknown): string | undefined {
  const visiting = new Set<object>();
  const isData = (item: unknown): boolean => {
    if (item === null || typeof item === "string" || typeof item === "boolean") return true;
    if (typeof item === "number") return Number.isFinite(item) && !Object.is(item, -0);
    if (typeof item !== "object" || isProxy(item) || visiting.has(item)) return false;
    visiting.add(item);
    const descriptors = Object.getOwnPropertyDescriptors(item);
    const keys = Reflect.ownKeys(descriptors);
    const array = Array.isArray(item);
    const shaped = array
      ? Object.getPrototypeOf(item) === Array.prototype && keys.length === item.length + 1 && keys.every((key, index) => (index === item.length ? key === "length" : key === String(index)))
      : Object.getPrototypeOf(item) === Object.prototype && keys.every((key) => typeof key === "string" && descriptors[key]!.enumerable === true);
    // An array's own `length` is no element; an object's `length` is a property like any other.
    const elements = array ? keys.slice(0, -1) : keys;
    const data = shaped && elements.every((key) => "value" in descriptors[key as string]! && isData(descriptors[key as string]!.value));
    visiting.delete(item);
    return data;
  };
  return isData(value) ? JSON.stringify(value) : undefined;
}

function validatedPath(file: string): string {
  return join(dirname(file), "node_modules", ".cache", "skillbake", "config", `${basename(file)}.validated.json`);
}

function validatedKey(file: string): string {
  return sha256(JSON.stringify({ tool: TOOL_VERSION, file }));
}

/** The files esbuild consults for a bundled file, in its folder and every folder above. */
const SETTINGS_FILES = ["tsconfig.json", "jsconfig.json", "package.json"] as const;

function entryPath(file: string): string {
  return join(dirname(file), "node_modules", ".cache", "skillbake", "config", `${basename(file)}.json`);
}

function entryKey(file: string, cwd: string): string {
  return sha256(JSON.stringify({ tool: TOOL_VERSION, file, cwd }));
}

function readEntry(file: string, cwd: string): Entry | undefined {
  const entry = readCacheFile(entryPath(file), FORMAT, entryKey(file, cwd)) as Entry | undefined;
  const valid = typeof entry?.code === "string" && (entry.kind === "script" || entry.kind === "module") && isDigestRecord(entry.inputs) && Object.keys(entry.inputs).length > 0 && isDigestRecord(entry.folders) && isDigestRecord(entry.settings);
  return valid ? entry : undefined;
}

function isDigestRecord(value: unknown): value is Record<string, string> {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.values(value).every((digest) => typeof digest === "string");
}

function fileDigest(path: string): string | undefined {
  const bytes = readRegularFile(path, { followLinks: true });
  return bytes && sha256(bytes);
}

/** The names in a folder but `node_modules`, which no relative import resolves into (and where this cache lives). */
function listingDigest(folder: string): string {
  try {
    return sha256(
      readdirSync(folder)
        .filter((name) => name !== "node_modules")
        .sort()
        .join("\0"),
    );
  } catch {
    return "";
  }
}

function sha256(text: string | Buffer): string {
  return createHash("sha256").update(text).digest("hex");
}
