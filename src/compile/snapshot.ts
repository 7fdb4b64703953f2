import { createHash } from "node:crypto";
import { lstatSync, realpathSync, rmSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { readCacheFile, writeCacheFile } from "./cache-file.js";
import { BuildCache, isCurrentBundle, linkTarget, signatureOf, type BundleRecord } from "./cache.js";
import { restoreBodies, type Compilation } from "./compile.js";
import { resolveRoot, type LoadedConfig } from "./config.js";
import { isPlainRelative, pathIn, type StatsTaken } from "./discover.js";
import { fileStatsOf, type FileStats } from "./resources.js";

/** Bumped when either file's layout changes. */
const FORMAT = 1;

/**
 * The last build, for a rebuild where nothing changed: `<config>.inputs.json` holds what it read (each folder's and
 * file's signature, see `BuildCache.unchangedInputs`) and the bundle it wrote; `<config>.result.json` its
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
 * is read on first use, from the SKILL.md just stat'ed (see `restoreBodies`).
 */
export function unchangedCompilation(loaded: LoadedConfig, outDir: string, taken: StatsTaken): { compilation: Compilation; folders: number } | undefined {
  const key = snapshotKey(loaded, outDir);
  if (key === undefined) return undefined;
  const files = snapshotFiles(loaded);
  const index = readCacheFile(files.inputs, FORMAT, key) as InputsFile | undefined;
  if (typeof index?.inputs !== "string" || typeof index.bundle?.fingerprint !== "string") return undefined;
  const verified = new Map<string, FileStats>();
  let folders = 0;
  // Past the first change, the folders and files are still stat'ed, and their stats kept: the walk that follows
  // takes them from here. Before it nothing is kept: ten thousand stats kept cost more to collect than to take,
  // and a rebuild with nothing changed keeps none of them.
  let same = true;
  for (const line of index.inputs.split("\n")) {
    const [kind, path, signature] = line.split("\t");
    if (path === undefined) return undefined;
    // Most lines name a path below the config folder, joined without `resolve`'s normalizing (thousands a build).
    const absolute = isPlainRelative(path) ? pathIn(loaded.dir, path) : resolve(loaded.dir, path);
    if (kind === "l") {
      if (same && linkTarget(absolute) !== signature) same = false;
      continue;
    }
    // Folders were signed through links (as listed); files as found, a link to a file by the file it leads to.
    const found = kind === "d" ? statSync(absolute, { bigint: true, throwIfNoEntry: false }) : lstatSync(absolute, { bigint: true, throwIfNoEntry: false });
    const stats = found?.isSymbolicLink() ? statSync(absolute, { bigint: true, throwIfNoEntry: false }) : found;
    if (!same) {
      if (stats) (kind === "d" ? taken.folders : taken.files).set(absolute, stats);
      continue;
    }
    if (!stats || signatureOf(stats) !== signature) same = false;
    else if (kind === "d") folders++;
    else verified.set(absolute, fileStatsOf(stats));
  }
  if (!same || !isCurrentBundle(index.bundle, outDir, index.bundle.fingerprint)) return undefined;
  const stored = readCacheFile(files.result, FORMAT, `${key}:${index.bundle.fingerprint}`) as StoredCompilation | undefined;
  if (!Array.isArray(stored?.agents) || typeof stored.skillsChecked !== "number" || !Array.isArray(stored.diagnostics) || !Array.isArray(stored.inputs?.folders) || !Array.isArray(stored.inputs.files)) return undefined;
  const agents = restoreBodies(stored.agents, verified);
  return agents && { compilation: { config: loaded, outDir, agents, skillsChecked: stored.skillsChecked, diagnostics: stored.diagnostics, inputs: stored.inputs, verified }, folders };
}

/**
 * Keeps `compilation` for the next build when the cache is kept (`saves`), can tell that its inputs did not change
 * (`unchangedInputs`) and describes the bundle now in the outDir; else removes the last build's, which no longer
 * describes it.
 */
export function saveSnapshot(compilation: Compilation, cache: BuildCache): void {
  const { config: loaded, outDir } = compilation;
  const files = snapshotFiles(loaded);
  const key = cache.saves ? snapshotKey(loaded, outDir) : undefined;
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
function snapshotKey(loaded: LoadedConfig, outDir: string): string | undefined {
  const { config } = loaded;
  const agents = Object.values(config.agents);
  if (!isPlainData(config) || agents.some((agent) => agent.context !== undefined && agent.context.length > 0)) return undefined;
  // A root that is missing, a file, or a link is found again by what it is now, as the walk found it.
  const roots = [...new Set(agents.flatMap((agent) => agent.skills.map((source) => resolveRoot(source.root, loaded.dir))))].map((root) => {
    try {
      const real = realpathSync.native(root);
      return `${statSync(real).isDirectory() ? "d" : "f"}${real}`;
    } catch {
      return null;
    }
  });
  const described = { cache: BuildCache.keyOf(loaded), file: loaded.file, dir: loaded.dir, inputs: loaded.inputs, config, environmentBudget: loaded.environmentBudget ?? null, outDir, roots };
  return createHash("sha256").update(JSON.stringify(described)).digest("hex");
}

/** Strings, numbers, booleans, null, and arrays and plain objects of them: what JSON gives back as it was. */
function isPlainData(value: unknown): boolean {
  if (value === null || value === undefined || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isPlainData);
  return typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype && Object.values(value).every(isPlainData);
}
