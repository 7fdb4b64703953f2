import { createHash } from "node:crypto";
import { realpathSync, rmSync, statSync, type BigIntStats } from "node:fs";
import { basename, dirname, join, resolve, sep } from "node:path";
import { readCacheFile, writeCacheFile } from "./cache-file.js";
import { BuildCache, contentSignature, isCurrentBundle, isFindingRecord, isObject, isSettledBefore, linkTarget, listingOf, signatureOf, statsOfSignature, trustedBeforeNow, type BundleRecord } from "./cache.js";
import { restoreBodies, type Compilation, type ListingSource } from "./compile.js";
import { resolveRoot, type LoadedConfig } from "./config.js";
import type { Finding } from "./diagnostics.js";
import { isPastByteLimit, isPlainRelative, leftFilesOutBySize, pathIn, statsThroughLink, type DiscoveredSkill, type EnclosedSkillFile, type RootListing, type StatsTaken } from "./discover.js";
import { RealPaths } from "./real-paths.js";
import { fileStatsOf, hashFile, identityKey, type FileStats } from "./resources.js";
import { systemCallPath } from "./system-path.js";

/** Bumped when any of the files' layout changes. */
const FORMAT = 3;

/**
 * The last build, for a rebuild where nothing changed: `<config>.inputs.json` holds what it read (each folder's and
 * file's signature, or its contents where it changed too recently to sign: see `BuildCache.unchangedInputs`) and
 * the bundle it wrote; `<config>.result.json` its compilation, less the bodies; `<config>.listings.json` what its
 * walk found in each root. When every signature is the same, the bundle untouched and the config the same plain
 * data, the compilation is the last one: a rebuild stats what was read instead of walking, reading, parsing,
 * selecting and rendering again. When only files of skills changed (or nothing did, but the bundle was touched or the
 * compilation kept is gone), the listings are: a rebuild goes by them instead of walking. Only for configs that are
 * plain data (no format function, no `frontmatter` schema: what code does cannot be compared) and without `context`
 * globs (which can match new files anywhere).
 */
interface InputsFile {
  inputs: string;
  bundle: BundleRecord;
}

type StoredCompilation = Pick<Compilation, "agents" | "skillsChecked" | "diagnostics" | "inputs">;

/**
 * What is still good of the last build: its compilation when nothing it read changed (with how many folders and
 * files the check found so), or its listings when only skill files' contents did.
 */
export type LastBuild = { compilation: Compilation; folders: number; files: { skillMdFiles: number; filesOfSkills: number } } | { listings: ReadonlyMap<string, RootListing> };

/**
 * The compilation of the last build when nothing it read has changed since, and the bundle it wrote is untouched.
 * Where only files of skills changed (an edit: every folder, link and .gitignore as it was), the roots' listings
 * the last build walked to, for this build to go by instead of walking (see `storedListings`). Undefined otherwise.
 * What it stat'ed past the first change goes to `taken` (for the walk that may follow). Each body is read on first
 * use, from the SKILL.md just stat'ed (see `restoreBodies`). A folder or file the last build found too recently
 * changed to sign is compared by its contents; once settled, it is signed in the inputs file instead, so that the
 * next rebuild stats it rather than reading it again.
 */
export function lastBuild(loaded: LoadedConfig, outDir: string, taken: StatsTaken): LastBuild | undefined {
  const roots = rootsNow(loaded);
  const key = snapshotKey(loaded, outDir, roots);
  if (key === undefined) return undefined;
  const files = snapshotFiles(loaded);
  const index = readCacheFile(files.inputs, FORMAT, key) as InputsFile | undefined;
  if (typeof index?.inputs !== "string" || typeof index.bundle?.fingerprint !== "string") return undefined;
  const verified = new CheckedFiles(index.inputs, loaded.dir);
  const comparing: ContentComparison = { trustedBefore: trustedBeforeNow(), folders: roots.flatMap((root) => (root?.startsWith("d") ? [root.slice(1)] : [])), realPaths: new RealPaths(), contents: new Map() };
  const lines = new InputLines(index.inputs);
  const changes: InputChanges = { files: new Map(), structural: false };
  let folders = 0;
  // Lines compared by contents and settled now, each with the `d` or `f` line signing it.
  const resigned: { from: number; to: number; line: string }[] = [];
  // Past the first change, the folders and files are still stat'ed, and their stats kept: the walk that follows
  // takes them from here. Before it nothing is kept: ten thousand stats kept cost more to collect than to take,
  // and a rebuild with nothing changed keeps none of them.
  let same = true;
  for (let read = lines.next(); read !== false; read = lines.next()) {
    if (read === undefined) return undefined;
    const { kind, path, signature } = lines;
    const absolute = inputPath(loaded.dir, path);
    if (kind === "l") {
      if (linkTarget(absolute, comparing.realPaths) !== signature) {
        same = false;
        changes.structural = true;
      }
      continue;
    }
    // Folders were signed through links (as listed); files as found, a link to a file by the file it leads to.
    const isFolder = kind === "d" || kind === "D";
    const stats = isFolder ? statSync(systemCallPath(absolute), { bigint: true, throwIfNoEntry: false }) : statsThroughLink(absolute);
    if (!same) {
      if (stats) (isFolder ? taken.folders : taken.files).set(absolute, stats);
      if (!changes.structural) noteChange(kind, absolute, stats, signature, changes);
      continue;
    }
    const verdict = stats && verifiedLine(lines, absolute, stats, verified, comparing);
    if (verdict === undefined) {
      same = false;
      noteChange(kind, absolute, stats, signature, changes);
    } else {
      if (isFolder) folders++;
      if (verdict !== true) resigned.push({ from: lines.from, to: lines.to, line: verdict });
    }
  }
  if (changes.structural) return undefined;
  const stored = same ? storedCompilation(files.result, `${key}:${index.bundle.fingerprint}`, index.bundle, outDir) : undefined;
  const agents = stored && restoreBodies(stored.agents, verified);
  if (!stored || !agents) {
    // Every folder, link and .gitignore is as it was: the last walk's listings hold, if they are the last build's.
    // So they do where nothing changed but the bundle was touched or the compilation kept is gone.
    const changed = new Set([...changes.files].flatMap(([path, state]) => (state.same ? [] : [path])));
    // The lines as the last build wrote them, not as `resigned` would sign them.
    const input = { folders: signedFolders(index.inputs, loaded.dir), file: (path: string) => (verified.has(path) ? { stats: verified.get(path)!, same: true } : changes.files.get(path)), changed };
    const listings = storedListings(readCacheFile(files.listings, FORMAT, `${key}:${index.bundle.fingerprint}`), loaded, input, comparing);
    return listings && { listings };
  }
  if (resigned.length > 0) writeCacheFile(files.inputs, FORMAT, key, { inputs: withLinesReplaced(index.inputs, resigned), bundle: index.bundle } satisfies InputsFile);
  return { compilation: { config: loaded, outDir, agents, skillsChecked: stored.skillsChecked, diagnostics: stored.diagnostics, inputs: stored.inputs, verified }, folders, files: verified };
}

/** The compilation the last build kept, if it is there and the bundle it wrote is untouched. */
function storedCompilation(file: string, key: string, bundle: BundleRecord, outDir: string): StoredCompilation | undefined {
  if (!isCurrentBundle(bundle, outDir, bundle.fingerprint)) return undefined;
  const stored = readCacheFile(file, FORMAT, key) as StoredCompilation | undefined;
  if (!Array.isArray(stored?.agents) || typeof stored.skillsChecked !== "number" || !Array.isArray(stored.diagnostics) || !Array.isArray(stored.inputs?.folders) || !Array.isArray(stored.inputs.files)) return undefined;
  return stored;
}

/**
 * The inputs file's lines, read in place: each line's first three tab-separated fields (as `split` would give them)
 * as slices of the text, without an array of lines or one per line: a nothing-changed check of the real catalogues'
 * 10,023 lines splits them in ~5 ms, and reads them so in ~2.
 * @internal
 */
export class InputLines {
  /** Where the line last read begins and ends (before its line feed). */
  from = 0;
  to = -1;
  kind = "";
  path = "";
  signature = "";

  constructor(private readonly text: string) {}

  /**
   * Reads the next line: false past the last one, undefined for a line of fewer than three fields, after which there
   * is no next line (its search for a tab ran on past it: reading on could cost the rest of the text each line).
   */
  next(): boolean | undefined {
    const { text } = this;
    if (this.to >= text.length) return false;
    const from = this.to + 1;
    const newline = text.indexOf("\n", from);
    const to = newline < 0 ? text.length : newline;
    this.from = from;
    this.to = to;
    const tab = text.indexOf("\t", from);
    const second = tab < 0 || tab > to ? -1 : text.indexOf("\t", tab + 1);
    if (second < 0 || second > to) {
      this.to = text.length;
      return undefined;
    }
    const third = text.indexOf("\t", second + 1);
    this.kind = text.slice(from, tab);
    this.path = text.slice(tab + 1, second);
    this.signature = text.slice(second + 1, third < 0 || third > to ? to : third);
    return true;
  }

  /** Reads the line that begins at `from`, where `next` found one before. */
  readAt(from: number): void {
    this.to = from - 1;
    this.next();
  }
}

/** The absolute path of an inputs line's `path`: most name one below the config folder, joined without `resolve`'s normalizing (thousands a build). */
function inputPath(configDir: string, path: string): string {
  return isPlainRelative(path) ? pathIn(configDir, path) : resolve(configDir, path);
}

/**
 * The files a nothing-changed check found as their lines sign them (`f`) or as their contents were (`h`), by
 * absolute path, with their stats. A SKILL.md's are kept as found, for its body to be read by; any other file's
 * line is kept as where it lies in the inputs text, its stats made from its signature when first asked for. A build
 * with nothing changed never asks, and thousands of stats and paths kept to the end of the check made the
 * collector's work as large as a quarter of the check.
 * @internal
 */
export class CheckedFiles implements ReadonlyMap<string, FileStats> {
  /** SKILL.md files (by name: a SKILL.md inside another skill's folder too), and files compared by contents. */
  private readonly kept = new Map<string, FileStats>();
  /** Where the line of each other file begins in the inputs text. */
  private readonly lineStarts: number[] = [];
  private everyFile: Map<string, FileStats> | undefined;
  /** How many are SKILL.md files, and how many files of skills (all but .gitignore files, which are checked too). */
  skillMdFiles = 0;
  filesOfSkills = 0;

  constructor(
    private readonly inputs: string,
    private readonly configDir: string,
  ) {}

  /** Adds the file of the line `lines` read last, found at `absolute` as the line signs it (`stats`). */
  add(lines: InputLines, absolute: string, stats: FileStats): void {
    if (this.isSkillMd(absolute)) this.kept.set(absolute, fileStatsOf(stats));
    else this.lineStarts.push(lines.from);
  }

  /** Adds a file compared by its contents (`stats` those it was hashed with). */
  keep(absolute: string, stats: FileStats): void {
    this.isSkillMd(absolute);
    this.kept.set(absolute, fileStatsOf(stats));
  }

  /** Counts the file at `absolute`, and tells whether it is a SKILL.md. */
  private isSkillMd(absolute: string): boolean {
    const name = basename(absolute);
    if (name !== ".gitignore") this.filesOfSkills++;
    if (name !== "SKILL.md") return false;
    this.skillMdFiles++;
    return true;
  }

  get(path: string): FileStats | undefined {
    return this.kept.get(path) ?? this.all().get(path);
  }

  has(path: string): boolean {
    return this.kept.has(path) || this.all().has(path);
  }

  get size(): number {
    return this.all().size;
  }

  forEach(callback: (stats: FileStats, path: string, map: ReadonlyMap<string, FileStats>) => void): void {
    for (const [path, stats] of this.all()) callback(stats, path, this);
  }

  entries(): MapIterator<[string, FileStats]> {
    return this.all().entries();
  }

  keys(): MapIterator<string> {
    return this.all().keys();
  }

  values(): MapIterator<FileStats> {
    return this.all().values();
  }

  [Symbol.iterator](): MapIterator<[string, FileStats]> {
    return this.entries();
  }

  /** Every file: the kept ones, then the others with their stats made from their lines. */
  private all(): Map<string, FileStats> {
    if (this.everyFile) return this.everyFile;
    const all = new Map(this.kept);
    const lines = new InputLines(this.inputs);
    for (const from of this.lineStarts) {
      lines.readAt(from);
      all.set(inputPath(this.configDir, lines.path), statsOfSignature(lines.signature));
    }
    this.everyFile = all;
    return all;
  }
}

/** `text` with each of `lines` (in order: where one began and ended) replaced. */
function withLinesReplaced(text: string, lines: readonly { from: number; to: number; line: string }[]): string {
  let replaced = "";
  let at = 0;
  for (const { from, to, line } of lines) {
    replaced += text.slice(at, from) + line;
    at = to;
  }
  return replaced + text.slice(at);
}

/**
 * The lines from the first change on: each file with its stats now and whether it is as it was (a file compared by
 * contents is not compared there: it is only known to be a file now), and whether anything but a file changed.
 */
interface InputChanges {
  files: Map<string, FileState>;
  structural: boolean;
}

/** A file an inputs line names: its stats now, and whether they are as the line signs them. */
interface FileState {
  stats: FileStats;
  same: boolean;
}

/** Notes the line of the first change, or one after it: a folder that changed, a link, or anything gone, is a structural change. */
function noteChange(kind: string, absolute: string, stats: BigIntStats | undefined, signature: string, changes: InputChanges): void {
  if (kind === "d" && stats?.isDirectory() && signatureOf(stats) === signature) return;
  if ((kind === "f" || kind === "h") && stats?.isFile()) changes.files.set(absolute, { stats: fileStatsOf(stats), same: kind === "f" && signatureOf(stats) === signature });
  else changes.structural = true;
}

/**
 * The folders the inputs file signs by their stats (`d` lines): each is one this machine's last build listed, as
 * only it could sign it. One compared by its entries (`D`, listed too recently to sign) is not: any file may say
 * what a folder inside a root holds.
 */
function signedFolders(inputs: string, configDir: string): Set<string> {
  const folders = new Set<string>();
  const lines = new InputLines(inputs);
  for (let read = lines.next(); read !== false; read = lines.next()) {
    if (read && lines.kind === "d") folders.add(inputPath(configDir, lines.path));
  }
  return folders;
}

/**
 * A root's listing as the listings file holds it: a skill's identities are its files' stats now, taken by the check.
 * Paths below the root are kept relative to it (`storedPath`), a skill by its folder (its SKILL.md is that
 * folder's), with its real path where that is another.
 */
interface StoredListing {
  key: string;
  root: string;
  skills: { dir: string; files: string[]; realFile?: string; hidden?: true }[];
  enclosed: EnclosedSkillFile[];
  findings: Finding[];
  folders: string[];
  ignoreFiles: string[];
  unusable?: RootListing["unusable"];
}

/**
 * The listings the last build walked to (the listings file, `stored`), each skill's files identified by their stats
 * now, when they are what a walk would find: every folder they list is one the inputs file signs (each as it was:
 * the check found no folder changed), each file that changed a skill's and inside a root, no .gitignore changed,
 * and no skill's files crossing the limit of their total size. Undefined otherwise, or where the file is not what
 * a build writes: it is as untrusted as any file a pull request commits, and may name any path.
 */
function storedListings(stored: unknown, loaded: LoadedConfig, input: ChecksInputs, rootFolders: RootFolders): Map<string, RootListing> | undefined {
  if (!Array.isArray(stored)) return undefined;
  const unclaimed = new Set(input.changed);
  const roots = new Set(Object.values(loaded.config.agents).flatMap((agent) => agent.skills.map((source) => resolveRoot(source.root, loaded.dir))));
  const listings = new Map<string, RootListing>();
  for (const entry of stored as StoredListing[]) {
    if (!isObject(entry) || !roots.has(entry.root) || (entry.key !== `flat:${entry.root}` && entry.key !== `nested:${entry.root}`)) return undefined;
    const { root } = entry;
    if (!isStringArray(entry.folders) || !isStringArray(entry.ignoreFiles) || !Array.isArray(entry.skills)) return undefined;
    if (!Array.isArray(entry.findings) || !entry.findings.every(isFindingRecord) || !Array.isArray(entry.enclosed) || !entry.enclosed.every(isEnclosedRecord)) return undefined;
    const folders = entry.folders.map((folder) => absolutePath(root, folder));
    if (!folders.every((folder) => input.folders.has(folder))) return undefined;
    const ignoreFiles = new Map<string, FileStats>();
    for (const file of entry.ignoreFiles.map((path) => absolutePath(root, path))) {
      const state = input.file(file);
      if (!state?.same) return undefined;
      ignoreFiles.set(file, state.stats);
    }
    // A root that left a skill's files out by their sizes may keep others now: walked again.
    if (leftFilesOutBySize(entry)) return undefined;
    const skills: DiscoveredSkill[] = [];
    for (const skill of entry.skills) {
      if (!isObject(skill) || typeof skill.dir !== "string" || (skill.dir !== "" && !isPlainRelative(skill.dir)) || !isStringArray(skill.files) || (skill.realFile !== undefined && typeof skill.realFile !== "string")) return undefined;
      const file = skillFileOf(root, skill.dir);
      const identities = identitiesNow(file, skill.files, input, rootFolders);
      if (!identities || isPastByteLimit(identities)) return undefined;
      for (const path of skill.files) unclaimed.delete(pathIn(dirname(file), path));
      skills.push({ file, dir: skill.dir, realFile: skill.realFile ?? file, files: skill.files, identities, ...(skill.hidden === true ? { hidden: true as const } : {}) });
    }
    if (entry.unusable !== undefined && !isUnusableRecord(entry.unusable)) return undefined;
    listings.set(entry.key, { root, skills, enclosed: entry.enclosed, findings: entry.findings, folders, ignoreFiles, ...(entry.unusable ? { unusable: entry.unusable } : {}) });
  }
  // A file that changed and is no skill's is not one these listings describe.
  return unclaimed.size === 0 ? listings : undefined;
}

/** What a check found of the inputs file's paths: the folders it signs, each file's state now, and the files that changed. */
interface ChecksInputs {
  folders: ReadonlySet<string>;
  file: (path: string) => FileState | undefined;
  changed: ReadonlySet<string>;
}

/**
 * The stats now of each of a skill's files (`files`, relative to its SKILL.md's folder), each in a folder the inputs
 * file signs: a file its line signs as it was is the one the last build read there; one that changed since, or
 * that the last build did not read (a skill no agent built), must lie inside a root. Undefined where one does not.
 */
function identitiesNow(skillFile: string, files: readonly string[], input: ChecksInputs, rootFolders: RootFolders): Map<string, FileStats> | undefined {
  const folder = dirname(skillFile);
  const identities = new Map<string, FileStats>();
  for (const path of files) {
    if (!isPlainRelative(path)) return undefined;
    const absolute = pathIn(folder, path);
    if (!input.folders.has(dirname(absolute))) return undefined;
    const state = input.file(absolute) ?? unreadFile(absolute);
    if (!state || (!state.same && !isInsideRoots(absolute, rootFolders))) return undefined;
    identities.set(path, state.stats);
  }
  return identities.has("SKILL.md") ? identities : undefined;
}

/** A file no line names, as discovery would identify it: a file, or a link to one (through it). */
function unreadFile(absolute: string): FileState | undefined {
  const stats = statsThroughLink(absolute);
  return stats?.isFile() ? { stats: fileStatsOf(stats), same: false } : undefined;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function isUnusableRecord(value: unknown): value is RootListing["unusable"] {
  return isObject(value) && (value.code === "root-missing" || value.code === "root-not-folder") && typeof value.reason === "string";
}

function isEnclosedRecord(value: unknown): value is EnclosedSkillFile {
  return isObject(value) && typeof value.file === "string" && typeof value.dir === "string" && typeof value.realFile === "string" && typeof value.within === "string" && typeof value.hidden === "boolean";
}

/** The listings a build went by, as `storedListings` reads them; undefined where a skill is not named as its folder gives (none is). */
function listingsToStore(listings: ReadonlyMap<string, RootListing>): StoredListing[] | undefined {
  if ([...listings.values()].some((listing) => listing.skills.some((skill) => skill.file !== skillFileOf(listing.root, skill.dir)))) return undefined;
  return [...listings].map(([key, listing]) => {
    const { root } = listing;
    const skills = listing.skills.map((skill) => {
      const realFile = skill.realFile === skill.file ? {} : { realFile: skill.realFile };
      return { dir: skill.dir, files: skill.files, ...realFile, ...(skill.hidden ? { hidden: true as const } : {}) };
    });
    const stored = (path: string) => storedPath(root, path);
    return { key, root, skills, enclosed: listing.enclosed, findings: listing.findings, folders: listing.folders.map(stored), ignoreFiles: [...listing.ignoreFiles.keys()].map(stored), ...(listing.unusable ? { unusable: listing.unusable } : {}) };
  });
}

/** `path` relative to `root` where it lies below it (`/`-separated), as it is elsewhere ("" for the root itself). */
function storedPath(root: string, path: string): string {
  if (path === root) return "";
  const below = root.endsWith(sep) ? root : root + sep;
  return path.startsWith(below) ? path.slice(below.length).split(sep).join("/") : path;
}

/** The absolute path `storedPath` stored. */
function absolutePath(root: string, stored: string): string {
  return stored === "" ? root : isPlainRelative(stored) ? pathIn(root, stored) : stored;
}

/** The SKILL.md of the skill folder `dir` (relative to `root`, "" for the root itself), as discovery names it. */
function skillFileOf(root: string, dir: string): string {
  return pathIn(dir === "" ? root : pathIn(root, dir), "SKILL.md");
}

/** The real paths of the roots that are folders, and the real paths of what is checked against them, each folder looked up once. */
interface RootFolders {
  folders: readonly string[];
  realPaths: RealPaths;
}

/**
 * How `D` and `h` lines are compared: the moment before which a change is settled; the roots' folders, the only
 * places whose contents are read; each folder's listing or file's hash, by identity.
 */
interface ContentComparison extends RootFolders {
  trustedBefore: bigint;
  contents: Map<string, string | ReturnType<typeof hashFile> | undefined>;
}

/**
 * Whether the folder or file at `absolute` (`stats` just taken, through a link) is as its line of the inputs file
 * says: true, or undefined when it changed. A `D` or `h` line (compared by contents) that is settled now comes back
 * as the `d` or `f` line signing it, to take its place. A file's stats go to `verified`, for its body to be read by.
 */
function verifiedLine(lines: InputLines, absolute: string, stats: BigIntStats, verified: CheckedFiles, comparing: ContentComparison): true | string | undefined {
  const { kind, path, signature } = lines;
  switch (kind) {
    case "d":
    case "f":
      if (signatureOf(stats) !== signature) return undefined;
      if (kind === "f") verified.add(lines, absolute, stats);
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
      verified.keep(absolute, hashed.stats);
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
  const contents = isInsideRoots(absolute, comparing) ? read(absolute, stats) : undefined;
  comparing.contents.set(identity, contents);
  return contents;
}

/** Whether the real path of `absolute` lies inside one of the roots' folders (real paths). */
function isInsideRoots(absolute: string, { folders, realPaths }: RootFolders): boolean {
  let real: string;
  try {
    real = realPaths.of(absolute);
  } catch {
    return false;
  }
  return folders.some((root) => real === root || real.startsWith(root.endsWith(sep) ? root : root + sep));
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
export function saveSnapshot(compilation: Compilation, cache: BuildCache, listings: ReadonlyMap<string, RootListing> | undefined): void {
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
  // The result and listings first: an inputs file is never read with another build's (their key names the fingerprint).
  // Each agent's skills a skill at a time (compilation → agents → agent → skills), as each root's in the listings.
  writeCacheFile(files.result, FORMAT, `${key}:${bundle.fingerprint}`, stored, 4);
  const kept = listings && listingsToStore(listings);
  if (kept) writeCacheFile(files.listings, FORMAT, `${key}:${bundle.fingerprint}`, kept, 3);
  else rmSync(files.listings, { force: true });
  // Where its files hold each skill is the build cache's business: this file only tells that the bundle is untouched.
  const { outDir: bundleDir, fingerprint, paths } = bundle;
  writeCacheFile(files.inputs, FORMAT, key, { inputs, bundle: { outDir: bundleDir, fingerprint, paths } } satisfies InputsFile);
}

function snapshotFiles(loaded: LoadedConfig): { inputs: string; result: string; listings: string } {
  const base = join(loaded.dir, "node_modules", ".cache", "skillbake", basename(loaded.file));
  return { inputs: `${base}.inputs.json`, result: `${base}.result.json`, listings: `${base}.listings.json` };
}

/**
 * The listings a one-off build goes by (see `lastBuild`): the last build's where only skill files' contents changed,
 * none where the roots are walked; and the listings the build went by, kept for `saveSnapshot`.
 */
export class LastListings implements ListingSource {
  readonly remembersFolders = false;
  remembered: ReadonlyMap<string, RootListing> | undefined;

  constructor(private readonly last: ReadonlyMap<string, RootListing> | undefined) {}

  takeListings(): ReadonlyMap<string, RootListing> {
    return this.last ?? new Map();
  }

  remember(listings: ReadonlyMap<string, RootListing>): void {
    this.remembered = listings;
  }
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
