import { createHash } from "node:crypto";
import { lstatSync, realpathSync, rmSync, statSync, type BigIntStats } from "node:fs";
import { basename, join, resolve, sep } from "node:path";
import { readCacheFile, writeCacheFile } from "./cache-file.js";
import { BuildCache, contentSignature, isCurrentBundle, isSettledBefore, linkTarget, listingOf, signatureOf, trustedBeforeNow, type BundleRecord } from "./cache.js";
import { restoreBodies, type Compilation } from "./compile.js";
import { resolveRoot, type LoadedConfig } from "./config.js";
import { isPlainRelative, pathIn, type StatsTaken } from "./discover.js";
import { fileStatsOf, hashFile, identityKey, type FileStats } from "./resources.js";

/** Bumped when either file's layout changes. */
const FORMAT = 2;

/**
 * The last build, for a rebuild where nothing changed: `<config>.inputs.json` holds what it read (each folder's and
 * file's signature, or its contents where it changed too recently to sign: see `BuildCache.unchangedInputs`) and
 * the bundle it wrote; `<config>.result.json` its
 * compilation, less the bodies. When every signature is the same, the bundle untouched and the config the same plain
 * data, the compilation is the last one: a rebuild stats what was read instead of walking, reading, parsing,
 * selecting and rendering again. Only for configs that are plain data (no format function, no `frontmatter` schema:
 * what code does cannot be compared) and without `context` globs (which can match new files anywhere).
 */
interface InputsFile {
  inputs: string;
  bundle: BundleRecord;
}

type StoredCompilation = Pick<Compilation, "agents" | "skillsChecked" | "diagnostics" | "inputs">;

/**
 * The compilation of the last build when nothing it read has changed since, and the bundle it wrote is untouched;
 * undefined otherwise, with what it stat'ed past the first change in `taken` (for the walk that follows). Each body
 * is read on first use, from the SKILL.md just stat'ed (see `restoreBodies`). A folder or file the last build found
 * too recently changed to sign is compared by its contents; once settled, it is signed in the inputs file instead,
 * so that the next rebuild stats it rather than reading it again.
 */
export function unchangedCompilation(loaded: LoadedConfig, outDir: string, taken: StatsTaken): { compilation: Compilation; folders: number } | undefined {
  const roots = rootsNow(loaded);
  const key = snapshotKey(loaded, outDir, roots);
  if (key === undefined) return undefined;
  const files = snapshotFiles(loaded);
  const index = readCacheFile(files.inputs, FORMAT, key) as InputsFile | undefined;
  if (typeof index?.inputs !== "string" || typeof index.bundle?.fingerprint !== "string") return undefined;
  const verified = new Map<string, FileStats>();
  const comparing: ContentComparison = { trustedBefore: trustedBeforeNow(), folders: roots.flatMap((root) => (root?.startsWith("d") ? [root.slice(1)] : [])), contents: new Map() };
  const lines = index.inputs.split("\n");
  let folders = 0;
  let signed = false;
  // Past the first change, the folders and files are still stat'ed, and their stats kept: the walk that follows
  // takes them from here. Before it nothing is kept: ten thousand stats kept cost more to collect than to take,
  // and a rebuild with nothing changed keeps none of them.
  let same = true;
  for (let at = 0; at < lines.length; at++) {
    const [kind, path, signature] = lines[at]!.split("\t");
    if (path === undefined || signature === undefined) return undefined;
    // Most lines name a path below the config folder, joined without `resolve`'s normalizing (thousands a build).
    const absolute = isPlainRelative(path) ? pathIn(loaded.dir, path) : resolve(loaded.dir, path);
    if (kind === "l") {
      if (same && linkTarget(absolute) !== signature) same = false;
      continue;
    }
    // Folders were signed through links (as listed); files as found, a link to a file by the file it leads to.
    const isFolder = kind === "d" || kind === "D";
    const found = isFolder ? statSync(absolute, { bigint: true, throwIfNoEntry: false }) : lstatSync(absolute, { bigint: true, throwIfNoEntry: false });
    const stats = found?.isSymbolicLink() ? statSync(absolute, { bigint: true, throwIfNoEntry: false }) : found;
    if (!same) {
      if (stats) (isFolder ? taken.folders : taken.files).set(absolute, stats);
      continue;
    }
    const verdict = stats && verifiedLine(kind!, path, absolute, stats, signature, verified, comparing);
    if (verdict === undefined) same = false;
    else {
      if (isFolder) folders++;
      if (verdict !== true) [lines[at], signed] = [verdict, true];
    }
  }
  if (!same || !isCurrentBundle(index.bundle, outDir, index.bundle.fingerprint)) return undefined;
  const stored = readCacheFile(files.result, FORMAT, `${key}:${index.bundle.fingerprint}`) as StoredCompilation | undefined;
  if (!Array.isArray(stored?.agents) || typeof stored.skillsChecked !== "number" || !Array.isArray(stored.diagnostics) || !Array.isArray(stored.inputs?.folders) || !Array.isArray(stored.inputs.files)) return undefined;
  const agents = restoreBodies(stored.agents, verified);
  if (!agents) return undefined;
  if (signed) writeCacheFile(files.inputs, FORMAT, key, JSON.stringify({ inputs: lines.join("\n"), bundle: index.bundle } satisfies InputsFile));
  return { compilation: { config: loaded, outDir, agents, skillsChecked: stored.skillsChecked, diagnostics: stored.diagnostics, inputs: stored.inputs, verified }, folders };
}

/**
 * How `D` and `h` lines are compared: the moment before which a change is settled; the real paths of the roots that
 * are folders, the only places whose contents are read; each folder's listing or file's hash, by identity.
 */
interface ContentComparison {
  trustedBefore: bigint;
  folders: string[];
  contents: Map<string, string | ReturnType<typeof hashFile> | undefined>;
}

/**
 * Whether the folder or file at `absolute` (`stats` just taken, through a link) is as its line of the inputs file
 * says: true, or undefined when it changed. A `D` or `h` line (compared by contents) that is settled now comes back
 * as the `d` or `f` line signing it, to take its place. A file's stats go to `verified`, for its body to be read by.
 */
function verifiedLine(kind: string, path: string, absolute: string, stats: BigIntStats, signature: string, verified: Map<string, FileStats>, comparing: ContentComparison): true | string | undefined {
  switch (kind) {
    case "d":
    case "f":
      if (signatureOf(stats) !== signature) return undefined;
      if (kind === "f") verified.set(absolute, fileStatsOf(stats));
      return true;
    case "D": {
      // Stat'ed before it is listed, as a build lists a folder: a change in between shows in its signature next time.
      const listing = stats.isDirectory() ? contentsOf(absolute, stats, comparing, listingOf) : undefined;
      if (listing !== signature) return undefined;
      return isSettledBefore(stats, comparing.trustedBefore) ? `d\t${path}\t${signatureOf(stats)}` : true;
    }
    case "h": {
      const hashed = stats.isFile() ? contentsOf(absolute, stats, comparing, hashedOrUndefined) : undefined;
      if (!hashed || contentSignature(hashed) !== signature) return undefined;
      verified.set(absolute, fileStatsOf(hashed.stats));
      return isSettledBefore(hashed.stats, comparing.trustedBefore) ? `f\t${path}\t${signatureOf(hashed.stats)}` : true;
    }
    default:
      return undefined;
  }
}

/**
 * `read` of the folder or file at `absolute` (`stats`) when it lies inside a root (an inputs file is as untrusted as
 * any file a pull request commits: it may name any path), each folder or file read once however many lines name it.
 */
function contentsOf<T extends string | ReturnType<typeof hashFile>>(absolute: string, stats: BigIntStats, comparing: ContentComparison, read: (path: string, stats: BigIntStats) => T | undefined): T | undefined {
  const identity = identityKey(stats);
  if (comparing.contents.has(identity)) return comparing.contents.get(identity) as T | undefined;
  let real: string | undefined;
  try {
    real = realpathSync.native(absolute);
  } catch {
    real = undefined;
  }
  const inside = real !== undefined && comparing.folders.some((root) => real === root || real.startsWith(root.endsWith(sep) ? root : root + sep));
  const contents = inside ? read(absolute, stats) : undefined;
  comparing.contents.set(identity, contents);
  return contents;
}

/** `hashFile` of the file discovery would find at `path` (`stats`), or undefined where it is another file now or cannot be read. */
function hashedOrUndefined(path: string, stats: BigIntStats): ReturnType<typeof hashFile> | undefined {
  try {
    return hashFile(path, stats);
  } catch {
    return undefined;
  }
}

/**
 * Keeps `compilation` for the next build when the cache is kept (`saves`), can tell that its inputs did not change
 * (`unchangedInputs`) and describes the bundle now in the outDir; else removes the last build's, which no longer
 * describes it.
 */
export function saveSnapshot(compilation: Compilation, cache: BuildCache): void {
  const { config: loaded, outDir } = compilation;
  const files = snapshotFiles(loaded);
  const key = cache.saves ? snapshotKey(loaded, outDir, rootsNow(loaded)) : undefined;
  const inputs = key === undefined ? undefined : cache.unchangedInputs(loaded.dir);
  const bundle = cache.bundle;
  if (key === undefined || inputs === undefined || bundle?.outDir !== outDir) {
    rmSync(files.inputs, { force: true });
    return;
  }
  const stored: StoredCompilation = { agents: compilation.agents, skillsChecked: compilation.skillsChecked, diagnostics: compilation.diagnostics, inputs: compilation.inputs };
  // The result first: an inputs file is never read with another build's result (the key names the fingerprint).
  writeCacheFile(files.result, FORMAT, `${key}:${bundle.fingerprint}`, JSON.stringify(stored));
  // Where its files hold each skill is the build cache's business: this file only tells that the bundle is untouched.
  const { outDir: bundleDir, fingerprint, paths } = bundle;
  writeCacheFile(files.inputs, FORMAT, key, JSON.stringify({ inputs, bundle: { outDir: bundleDir, fingerprint, paths } } satisfies InputsFile));
}

function snapshotFiles(loaded: LoadedConfig): { inputs: string; result: string } {
  const base = join(loaded.dir, "node_modules", ".cache", "skillbake", basename(loaded.file));
  return { inputs: `${base}.inputs.json`, result: `${base}.result.json` };
}

/**
 * What the last build's compilation depends on besides what it read: the tool, the config (as loaded: plain data),
 * the environment's budget, the outDir, and where each root leads. Undefined for a config this cannot describe.
 */
function snapshotKey(loaded: LoadedConfig, outDir: string, roots: (string | null)[]): string | undefined {
  const { config } = loaded;
  const agents = Object.values(config.agents);
  if (!isPlainData(config) || agents.some((agent) => agent.context !== undefined && agent.context.length > 0)) return undefined;
  const described = { cache: BuildCache.keyOf(loaded), file: loaded.file, dir: loaded.dir, inputs: loaded.inputs, config, environmentBudget: loaded.environmentBudget ?? null, outDir, roots };
  return createHash("sha256").update(JSON.stringify(described)).digest("hex");
}

/**
 * Each root as it is now, by what it is (`d` a folder, `f` anything else) and its real path, or null where it is
 * missing: a root that is missing, a file, or a link is found again by what it is now, as the walk found it.
 */
function rootsNow(loaded: LoadedConfig): (string | null)[] {
  const agents = Object.values(loaded.config.agents);
  return [...new Set(agents.flatMap((agent) => agent.skills.map((source) => resolveRoot(source.root, loaded.dir))))].map((root) => {
    try {
      const real = realpathSync.native(root);
      return `${statSync(real).isDirectory() ? "d" : "f"}${real}`;
    } catch {
      return null;
    }
  });
}

/** Strings, numbers, booleans, null, and arrays and plain objects of them: what JSON gives back as it was. */
function isPlainData(value: unknown): boolean {
  if (value === null || value === undefined || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isPlainData);
  return typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype && Object.values(value).every(isPlainData);
}
