import { closeSync, fstatSync, lstatSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { bundleFingerprint, bundleInputsHash, bundleOf, stagedCopies, type Bundle, type StagedCopy } from "./bundle/bundle.js";
import { BuildCache, nowNs, settledSignatures } from "./compile/cache.js";
import { compile, type Compilation, type CompileOptions } from "./compile/compile.js";
import { implicitConfig, loadConfig, type LoadedConfig } from "./compile/config.js";
import type { StatsTaken } from "./compile/discover.js";
import { DiscoveryMemo } from "./compile/discovery-memo.js";
import { SkillMemo } from "./compile/skill-memo.js";
import { LastListings, lastBuild, saveSnapshot } from "./compile/snapshot.js";
import { tokenCounter } from "./compile/tokens.js";
import { compareStrings, countBySeverity } from "./compile/diagnostics.js";
import { LINE_MAX, unifiedDiff } from "./review/diff.js";
import { fixFiles, fixTargets, type FileFixes } from "./lint/files.js";
import { gate, type GateOptions } from "./lint/gate.js";
import { compareBundle, filesUnder, hashBundleFile, linkBelow, openBundleFile, OutputError, writeBundle, writePublished } from "./bundle/emit.js";
import { publishedFolders, type PublishedFolder } from "./bundle/well-known.js";
import { sha256Hex } from "./compile/resources.js";

export interface CheckOptions extends GateOptions {
  /** Config file; found in `cwd` when omitted. */
  config?: string;
  /**
   * Folders to check without a config (`skills check PATH…`), relative to `cwd`: one agent over them, every skill
   * under them (in dot folders and inside other skills' folders too), the default rules.
   */
  paths?: readonly string[];
  cwd?: string;
  /** Warnings fail the run too. */
  strict?: boolean;
  /** More warnings than this fail the run (`--max-warnings`). */
  maxWarnings?: number;
  /** Progress of reading and checking SKILL.md files. */
  onProgress?: CompileOptions["onProgress"];
  /** Overrides the config's `outDir`; relative to `cwd`. Staged locations (`stage: true`) point into it. */
  outDir?: string;
  /**
   * `true` (`--fix`): first rewrite the SKILL.md files whose findings can be mended without changing what they mean
   * (a value YAML misreads is quoted, a missing `name` set to the folder's); `"dry-run"` (`--fix-dry-run`): work out
   * those fixes and their diffs, and write nothing.
   */
  fix?: boolean | "dry-run";
}

export interface CheckResult extends Compilation {
  /**
   * What the run reports: the compilation's diagnostics (as the manifest records them) less those
   * skills-suppressions.json covers, with one `suppression-stale` for each of its stale entries; errors alone with `quiet`.
   */
  diagnostics: Compilation["diagnostics"];
  /** The findings skills-suppressions.json covers: neither reported nor counted. */
  suppressed: Compilation["diagnostics"];
  /** The suppressions file, when this run wrote it (`suppress`, `pruneSuppressions`). */
  suppressionsWritten?: string;
  errors: number;
  warnings: number;
  /** No error, and no more warnings than `maxWarnings` allows (none with `strict`). */
  ok: boolean;
  /**
   * SKILL.md files parsed this run, and those whose outcome the build cache held (their bytes unchanged); skill
   * files (SKILL.md and the others) read and hashed, and those whose hash it held (their stat signature
   * unchanged); folders listed, and those whose entries it held (their stat signature unchanged).
   */
  cache: { parsed: number; reused: number; hashed: number; unchanged: number; listed: number; unlisted: number };
  /** With `fix`: each file fixed (or, with `"dry-run"`, that would be), with what was done and the diff. */
  fixes?: FileFixes[];
}

/** `check`'s options less those of `check` alone: a build has a config, and writes no suppressions (it honours them). */
export interface BuildOptions extends Omit<CheckOptions, "paths" | "suppress" | "pruneSuppressions"> {
  /** Compare with the bundle on disk instead of writing. */
  check?: boolean;
}

/** With `build --check`: a file where the bundle on disk and a fresh build disagree. */
export interface StaleFile {
  /** Relative to the outDir, `/`-separated. */
  path: string;
  /** `changed`: other content on disk; `missing`: not on disk; `extra`: on disk only (a build refuses to replace a folder holding it). */
  state: "changed" | "missing" | "extra";
  /** What stands on disk in place of a regular file, never read or diffed: "a symlink; not followed", "below prompts, a symlink; not followed". */
  notFollowed?: string;
}

export interface BuildResult extends CheckResult {
  outDir: string;
  /** True when the bundle was written. */
  written: boolean;
  /** With `check`: the files that differ, by path. */
  stale: StaleFile[];
  /** With `check`: a short unified diff of the first prompt that differs (else of the first changed file). */
  staleDiff?: string;
}

/** Everything `build` does except writing (the build cache is read, not written). */
export async function check(options: CheckOptions = {}): Promise<CheckResult> {
  if (!options.fix) return (await compileCached(options, { readOnly: true })).result;
  const { fixes, unchanged } = await fixFirst(options);
  return { ...(unchanged ?? (await compileCached(options, { readOnly: true })).result), fixes };
}

/**
 * `fix`: compiles once to find what can be fixed, then fixes it; `unchanged` is that compilation when no file was
 * written (so it need not be compiled again).
 */
async function fixFirst(options: CheckOptions): Promise<{ fixes: FileFixes[]; unchanged?: CheckResult }> {
  // What is fixed is what a plain run reports: a suppressed finding is left as the suppressions file accepts it.
  const { result, compilation } = await compileCached({ ...options, fix: undefined, quiet: undefined, suppress: undefined, pruneSuppressions: undefined }, { readOnly: true });
  const fixes = fixFiles(fixTargets(result), { write: options.fix === true, recover: result.config.config.yaml === "recover" });
  return { fixes, ...(fixes.some((file) => file.written) ? {} : { unchanged: withOutcome(compilation, options, result.cache) }) };
}

/**
 * Compiles and, when nothing failed, swaps the new bundle into `outDir`; when the last bundle written there
 * came from the same compilation and is untouched, it is left as it is (`written: false`).
 */
export async function build(options: BuildOptions = {}): Promise<BuildResult> {
  if (!options.fix) return buildInSession(options);
  const { fixes } = await fixFirst(options);
  return { ...(await buildInSession({ ...options, fix: undefined })), fixes };
}

/**
 * `build`, with watch mode's session: the config and the build cache kept from the session's last build.
 * @internal
 */
export async function buildInSession(options: BuildOptions, session?: BuildSession): Promise<BuildResult> {
  let loaded: LoadedConfig | undefined;
  const statsTaken: StatsTaken = { folders: new Map(), files: new Map() };
  // A one-off build keeps the listings it went by for the next one (see `lastBuild`).
  let lastListings = session ? undefined : new LastListings(undefined);
  await session?.afterReport();
  // A watch session's first build starts as any build does; its later ones follow a change, with the cache in memory.
  const first = session ? session.startBuild() : true;
  if (!options.check && first) {
    // Nothing read last time changed and the bundle is untouched: the last compilation, without compiling.
    const cwd = options.cwd ?? process.cwd();
    loaded = session ? await session.config(options.config, cwd) : await loadConfig(options.config, cwd);
    const last = lastBuild(loaded, options.outDir ? resolve(cwd, options.outDir) : resolve(loaded.dir, loaded.config.outDir), statsTaken);
    if (last && "listings" in last) lastListings = new LastListings(last.listings);
    else if (last) {
      const { compilation, folders, files } = last;
      const cacheStats = { parsed: 0, reused: files.skillMdFiles, hashed: 0, unchanged: files.filesOfSkills, listed: 0, unlisted: folders };
      return { ...withOutcome(compilation, options, cacheStats), outDir: compilation.outDir, written: false, stale: [] };
    }
  }
  const { result, compilation, cache } = await compileCached(options, { readOnly: options.check === true, session, loaded, statsTaken, lastListings });
  try {
    const { outDir } = result;
    if (!result.ok) return { ...result, outDir, written: false, stale: [] };
    // The bundle is the compilation's: suppressions and --quiet change what a run reports, not what it builds. Its
    // fingerprint only tells the next build whether to write it again.
    const fingerprint = () => (cache.saves ? bundleFingerprint(compilation) : "");
    if (!options.check && cache.bundleIsCurrent(outDir, fingerprint, bundleInputsHash(compilation))) {
      if (!session) saveSnapshot(compilation, cache, lastListings?.remembered);
      return { ...result, outDir, written: false, stale: [] };
    }
    // Entries are named for a build cache that keeps where they are, for the next bundle to copy them from this one.
    const bundle = bundleOf(compilation, { keyed: cache.saves });
    const copies = stagedCopies(compilation);
    const published = publishedFolders(compilation);
    if (options.check) return { ...result, outDir, written: false, ...(await compareWithDisk(outDir, dirname(result.config.file), bundle, copies, published)) };
    const places = await writeBundle(outDir, bundle, copies, result.config, cache.bundle, session && ((removal) => session.putOff(removal)));
    await writePublished(published, result.config, outDir);
    // A published folder is recorded by its own path: the folders above it (the user's) change for other reasons.
    const publishedPaths = published.flatMap((folder) => [folder.dir, ...folder.files.map((file) => join(folder.dir, file.path))].map((path) => relative(outDir, path)));
    cache.recordBundle(outDir, fingerprint, bundleInputsHash(compilation), [...bundle.files.map((file) => file.path), ...copies.map((copy) => copy.path)], places, publishedPaths);
    if (!session) saveSnapshot(compilation, cache, lastListings?.remembered);
    return { ...result, outDir, written: true, stale: [] };
  } finally {
    if (!options.check) {
      // Asked for last: the worker remembers the prompts' lines while the bundle is written. Only a saving of time:
      // a failure leaves the cache without them.
      const encoding = result.agents.find((agent) => agent.tokens)?.tokens?.encoding;
      const counts = encoding && (await tokenCounter(encoding).used().catch(() => undefined));
      if (encoding && counts !== undefined) cache.recordTokenCounts(encoding, counts);
      if (!session) cache.save(); // `--check` writes nothing, not even the cache; a session saves when it ends
    }
  }
}

/**
 * Loads the config and compiles with the build cache; the caller saves the cache (`cache.save()`) when done.
 * `check` and `build` use it, and so do the bundler plugins, which build in memory. `readOnly`: nothing is written,
 * not even the transpiled-config cache (`check`, `build --check`). `statsTaken`: what a failed snapshot check stat'ed,
 * for discovery to use rather than stat again; `lastListings`: the listings a one-off build may go by instead of walking.
 * @internal
 */
export async function compileCached(
  options: CheckOptions,
  { readOnly = false, session, loaded: given, statsTaken, lastListings }: { readOnly?: boolean; session?: BuildSession; loaded?: LoadedConfig; statsTaken?: StatsTaken; lastListings?: LastListings } = {},
): Promise<{ result: CheckResult; compilation: Compilation; cache: BuildCache }> {
  const cwd = options.cwd ?? process.cwd();
  const { loaded, cache } = session ? await session.next(options.config, cwd, given) : await loadWithCache(options, cwd, readOnly, given);
  // The listings are kept only with a cache that is (the snapshot they go with is saved beside it).
  const discovery = session?.discovery ?? (cache.saves ? lastListings : undefined);
  const compilation = await compile(loaded, {
    onProgress: options.onProgress,
    ...(options.outDir ? { outDir: resolve(cwd, options.outDir) } : {}),
    cache,
    statsTaken,
    ...(discovery ? { discovery } : {}),
    ...(session?.discovery ? { skills: session.skills } : {}),
  });
  return { result: withOutcome(compilation, options, { ...cache.stats, ...cache.fileStats, ...cache.folderStats }), compilation, cache };
}

/**
 * What `options` make of a compilation: the diagnostics the run reports (`gate`: suppressions, `--quiet`), counted,
 * and the verdict, so that `ok`, the exit code and every output agree.
 */
function withOutcome(compilation: Compilation, options: CheckOptions, cache: CheckResult["cache"]): CheckResult {
  const { diagnostics, suppressed, written } = gate(compilation, options);
  const { errors, warnings } = countBySeverity(diagnostics);
  const tooManyWarnings = warnings > (options.strict ? 0 : (options.maxWarnings ?? Infinity));
  return { ...compilation, diagnostics, suppressed, ...(written ? { suppressionsWritten: written } : {}), errors, warnings, ok: errors === 0 && !tooManyWarnings, cache };
}

async function loadWithCache(options: CheckOptions, cwd: string, readOnly: boolean, loaded?: LoadedConfig): Promise<{ loaded: LoadedConfig; cache: BuildCache }> {
  loaded ??= options.paths && options.paths.length > 0 ? implicitConfig(options.paths, cwd) : await loadConfig(options.config, cwd, { readOnly });
  return { loaded, cache: BuildCache.open(loaded, { create: !isCi(), readOnly }) };
}

/**
 * Whether this runs in CI (the `CI` variable set, as GitHub Actions, GitLab CI, CircleCI, Buildkite and most others
 * set it): there a build on a fresh checkout is the only one in its place, so a build cache it wrote would go unused.
 */
function isCi(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== "" && ci !== "false" && ci !== "0";
}

/**
 * What watch mode keeps between its builds: the config as loaded, used again while none of its files (the config
 * and what it imports) changed, so esbuild does not run again; and the build cache, in memory, written once when
 * the session ends (`save`) rather than after every build.
 * @internal
 */
export class BuildSession {
  /** The config last loaded, and its files' signatures (undefined: changed too recently to tell, so loaded again). */
  private loadedConfig?: { loaded: LoadedConfig; signatures: string | undefined };
  private cache?: BuildCache;
  private builds = 0;
  /** Removals of the bundles this session's builds replaced, put off until the build was reported (`afterReport`). */
  private replaced: (() => Promise<void>)[] = [];
  /** With a watcher that reports every change (`noteChanges`): the last build's discovery, and the paths changed since. */
  readonly discovery: DiscoveryMemo | undefined;
  /** With such a watcher too: the last build's skills, the same objects again where unchanged. */
  readonly skills: SkillMemo | undefined;

  /** `watched`: the session's front end reports every path that changes between builds (`noteChanges`). */
  constructor({ watched = false }: { watched?: boolean } = {}) {
    this.discovery = watched ? new DiscoveryMemo() : undefined;
    this.skills = watched ? new SkillMemo() : undefined;
  }

  /** Paths a watcher saw change (absolute): a rebuild where only files' contents changed does not walk the roots again. */
  noteChanges(paths: Iterable<string>): void {
    this.discovery?.noteChanges(paths);
  }

  /** The folders and files the last build went by that changed since without `noteChanges` being told (see `DiscoveryMemo.verify`). */
  missedChanges(): string[] {
    return this.discovery?.verify() ?? [];
  }

  /** Counts a build of the session; true for its first. */
  startBuild(): boolean {
    return this.builds++ === 0;
  }

  /** The config, loaded again only when it or a file it imports changed since it was last loaded. */
  async config(file: string | undefined, cwd: string): Promise<LoadedConfig> {
    let loaded = this.loadedConfig?.loaded;
    if (!loaded || this.loadedConfig!.signatures === undefined || settledSignatures(loaded.inputs, nowNs()) !== this.loadedConfig!.signatures) {
      const loadedAt = nowNs();
      loaded = await loadConfig(file, cwd);
      this.loadedConfig = { loaded, signatures: settledSignatures(loaded.inputs, loadedAt) };
    }
    return loaded;
  }

  /** The config (as `config` gives it, unless this build loaded it already) and the build cache for it. */
  async next(file: string | undefined, cwd: string, given?: LoadedConfig): Promise<{ loaded: LoadedConfig; cache: BuildCache }> {
    const loaded = given ?? (await this.config(file, cwd));
    // A config edit that changes what a SKILL.md yields needs the cache for those settings (`open` reads it from disk).
    if (this.cache?.key === BuildCache.keyOf(loaded)) this.cache.nextBuild();
    else {
      this.cache?.save();
      this.cache = BuildCache.open(loaded);
    }
    return { loaded, cache: this.cache };
  }

  /** Writes the build cache for the next process. */
  save(): void {
    this.cache?.save();
  }

  /** Takes a replaced bundle's removal for later. */
  putOff(removal: () => Promise<void>): void {
    this.replaced.push(removal);
  }

  /**
   * What a build leaves for after it is reported, done once it was and before the next build: removes the bundles
   * this session's builds replaced, and takes the fingerprint of the bundle written (see `BuildCache.recordBundle`).
   */
  async afterReport(): Promise<void> {
    this.cache?.takeFingerprint();
    await Promise.all(this.replaced.splice(0).map((removal) => removal()));
  }
}

/** Lines of diff `build --check` shows: enough to see what changed, short enough for a CI log. */
const STALE_DIFF_LINES = 40;
/** How much larger than the fresh text (up to 3 bytes a character) a stale file on disk may be and still be diffed. */
const DIFFED_MAX_BYTES = 1024 * 1024;

/**
 * Compares a fresh bundle with the one in `outDir`; reads only, and only regular files below it (see `openBundleFile`),
 * reached from the config's folder through folders alone (a pull request may commit a link in place of `dist`).
 */
async function compareWithDisk(outDir: string, configDir: string, bundle: Bundle, copies: readonly StagedCopy[], published: readonly PublishedFolder[]): Promise<Pick<BuildResult, "stale" | "staleDiff">> {
  const link = lstatSync(outDir, { throwIfNoEntry: false })?.isSymbolicLink() ? outDir : linkBelow(configDir, outDir);
  if (link !== undefined) throw new OutputError(`${link} is a symbolic link; not followed. Set \`outDir\` to the folder it points to.`);
  const stale: StaleFile[] = [];
  for (const [path, state] of compareBundle(outDir, bundle)) {
    if (typeof state === "object") stale.push({ path, state: "changed", notFollowed: state.notFollowed });
    else if (state !== "same") stale.push({ path, state });
  }
  // Staged copies are compared by hash: they may be large or binary, and the diff below is for text.
  for (const copy of copies) {
    const existing = hashBundleFile(outDir, copy.path);
    if ("missing" in existing) stale.push({ path: copy.path, state: "missing" });
    else if ("notFollowed" in existing) stale.push({ path: copy.path, state: "changed", notFollowed: existing.notFollowed });
    else if (existing.sha256 !== copy.sha256) stale.push({ path: copy.path, state: "changed" });
  }
  const expected = new Set([...bundle.files.map((file) => file.path), ...copies.map((copy) => copy.path)]);
  for (const path of listFiles(outDir)) if (!expected.has(path)) stale.push({ path, state: "extra" });
  // Published folders are compared by hash too (archives are binary), and named relative to the outDir as the rest.
  for (const folder of published) {
    const named = (path: string) => relative(outDir, join(folder.dir, path));
    for (const file of folder.files) {
      const existing = hashBundleFile(folder.dir, file.path);
      if ("missing" in existing) stale.push({ path: named(file.path), state: "missing" });
      else if ("notFollowed" in existing) stale.push({ path: named(file.path), state: "changed", notFollowed: existing.notFollowed });
      else if (existing.sha256 !== sha256Hex(file.bytes())) stale.push({ path: named(file.path), state: "changed" });
    }
    const files = new Set(folder.files.map((file) => file.path));
    for (const path of listFiles(folder.dir)) if (!files.has(path)) stale.push({ path: named(path), state: "extra" });
  }
  stale.sort((a, b) => compareStrings(a.path, b.path));

  // A missing file is listed, not diffed: its whole text would say nothing the listing does not. Only a file of
  // plain text is diffed (prompts first): one holding skill bodies is too large to hold whole.
  // Made as it is written, a file is one that holds bodies (see `lazyParts`); a file of text alone is an array of strings.
  const texts = new Map(bundle.files.flatMap((file) => ("parts" in file && Array.isArray(file.parts) && file.parts.every((part) => typeof part === "string") ? [[file.path, file.parts.join("")] as const] : [])));
  const changed = stale.filter((file) => file.state === "changed" && !file.notFollowed && texts.has(file.path)).map((file) => file.path);
  const shown = changed.find((path) => path.startsWith("prompts/")) ?? changed[0];
  const opened = shown === undefined ? undefined : openBundleFile(outDir, shown);
  if (shown === undefined || !opened || !("fd" in opened)) return { stale };
  const fresh = texts.get(shown)!;
  let onDisk: string | undefined;
  try {
    // A committed file far larger than the fresh one is listed, not read: it could be gigabytes, and a diff of it
    // would show little but removed lines.
    if (fstatSync(opened.fd).size <= DIFFED_MAX_BYTES + 3 * fresh.length) onDisk = readFileSync(opened.fd, "utf8");
  } finally {
    closeSync(opened.fd);
  }
  if (onDisk === undefined) return { stale };
  const staleDiff = unifiedDiff(onDisk, fresh, {
    beforeLabel: `${shown} (on disk)`,
    afterLabel: `${shown} (fresh build)`,
    maxLines: STALE_DIFF_LINES,
    lineMax: LINE_MAX,
  });
  return { stale, staleDiff };
}

/** Every file under `dir`, relative and `/`-separated; none when `dir` does not exist. */
function listFiles(dir: string): string[] {
  try {
    return filesUnder(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return [];
    throw error;
  }
}
