import { createHash } from "node:crypto";
import { lstatSync, readdirSync, rmSync, statSync, type Dirent } from "node:fs";
import { basename, join, resolve } from "node:path";
import { readCacheFile, readCachePayload, writeCacheFile, writeCacheJson, type PayloadOnDisk } from "./cache-file.js";
import type { LoadedConfig } from "./config.js";
import { declaredFields } from "./custom-fields.js";
import type { Finding } from "./diagnostics.js";
import { RULES } from "./rules.js";
import type { FolderEntry, TakenStats } from "./discover.js";
import { fileStatsOf, type FileStats } from "./resources.js";
import { defineOwn, type SkillContent, type ValidationResult } from "./validate.js";
import { TOOL_VERSION } from "./version.js";
import { RealPaths } from "./real-paths.js";
import { systemCallPath } from "./system-path.js";

/** Bumped when the file's layout changes. */
const FORMAT = 2;

/**
 * Timestamp granularity allowed for: a file changed less than this before a build looked at it may change again
 * within the same timestamp, keeping its size, mtime and ctime (FAT keeps mtimes in 2-second steps, ext3 and
 * HFS+ in 1-second ones; Linux's ext4 and tmpfs stamp with a clock that ticks every few milliseconds).
 */
const RACY_NS = 2_000_000_000n;

/**
 * What one SKILL.md yields, less its body: the body is most of the bytes, and a build that rewrites the bundle
 * reads it anyway, so caching it would only double the reading; a build that leaves the bundle alone needs it
 * only for the skills it inlines.
 */
interface SkillRecord {
  /** sha256 of the SKILL.md bytes: with the path and folder name, what the record is valid for. */
  hash: string;
  /** The folder name `name` was checked against. */
  folder: string;
  findings: Finding[];
  content?: Omit<SkillContent, "body">;
}

/** The bundle last written, and how to tell that nobody has touched it since. */
export interface BundleRecord {
  outDir: string;
  /** Digest of the compilation it was written from (`bundleFingerprint`). */
  fingerprint: string;
  /** The manifest's `inputsHash`, which the fingerprint covers: a compilation with another has another bundle. */
  inputsHash?: string;
  /** Each file and folder written, relative to outDir, with its stat signature right after writing (`bundleFileSignature`). */
  paths: Record<string, string>;
  /** Where each file holding skills holds each skill's entry and body, by path: what the next bundle copies instead of making them again. */
  places?: Record<string, FilePlaces>;
}

/** Where a bundle file holds what it holds of each skill: the offset and length, in bytes, of its text. */
export interface FilePlaces {
  /** Each skill's entry (its manifest record, its module function), by `entryKey`. */
  entries: Record<string, [offset: number, length: number]>;
  /** Each body, escaped for the file, by the sha256 of its SKILL.md. */
  bodies: Record<string, [offset: number, length: number]>;
}

/** A folder as a build listed it: its stats just before, and its entries. */
export interface ListedFolder {
  stats: FileStats;
  entries: readonly FolderEntry[];
}

/** A skill file (SKILL.md or another) as a build found and hashed it. */
interface FileRecord {
  /** `signatureOf` the file when it was hashed. */
  stat: string;
  size: number;
  sha256: string;
}

/** A folder as a build listed it. */
interface FolderRecord {
  /** `signatureOf` the folder (through links) just before it was listed. */
  stat: string;
  /** Its entries, each its kind (`f` file, `d` folder, `l` link) then its name. */
  entries: string[];
}

interface CacheContents {
  /** By SKILL.md path relative to the config folder. */
  skills: Record<string, SkillRecord>;
  /** By path relative to the config folder, as walked (a linked folder by the link's path). */
  folders: Record<string, FolderRecord>;
  /** By path relative to the config folder, as discovered (a linked folder's files under the link's path). */
  files: Record<string, FileRecord>;
  bundle?: BundleRecord;
  /** The tokens of each line of text the last build counted, in its encoding, as the token worker wrote them (`TokenCounter.used`). */
  tokens?: { encoding: string; counts: string };
}

/**
 * The build cache (`node_modules/.cache/skillbake/<config file name>.json` beside the config). It holds each
 * skill file's size and sha256 with its stat signature (device, inode, size, mtime and ctime in nanoseconds),
 * so a rebuild neither reads nor hashes a file whose signature is unchanged; each folder's entries with its
 * signature, so a rebuild does not list a folder nothing was added to, removed from or renamed in (any of
 * which gives the folder a new mtime and ctime; editing a file in it does not, and is seen by the file's own
 * signature, which discovery takes for every file); each SKILL.md's parse and
 * validation outcome, keyed by the sha256 of its bytes, so a rebuild re-parses only what changed; and the
 * fingerprint of the last bundle written, so a rebuild whose compilation is unchanged writes nothing. The whole
 * file is keyed by the tool's version and the settings that change what a SKILL.md yields (`yaml`,
 * `descriptionFallback`, the names of the `frontmatter` schema's fields: their values are checked after the
 * cache); a file that is unreadable, corrupt (its checksum disagrees), or written by another version or for
 * other settings is ignored and replaced.
 *
 * A signature is recorded only for a file whose mtime and ctime are safely older (by `RACY_NS`) than the moment
 * the build began: git's "racily clean" rule. A file changed that recently could change again within the same
 * timestamp, size unchanged, and keep the signature; it is hashed again by the next build instead. Any later
 * write, rename over or replacement gives a file a newer ctime (and a new file a new inode or ctime), so a
 * signature recorded by this rule changes with the file.
 *
 * In watch mode one cache serves every rebuild (`nextBuild`), so nothing is read back from disk between them.
 */
export class BuildCache {
  /** SKILL.md files parsed this run, and those whose outcome came from the cache. */
  readonly stats = { parsed: 0, reused: 0 };
  /** Skill files read and hashed this run, and those whose hash came from the cache (their signature unchanged). */
  readonly fileStats = { hashed: 0, unchanged: 0 };
  /** Folders listed this run, and those whose listing came from the cache (their signature unchanged). */
  readonly folderStats = { listed: 0, unlisted: 0 };
  private next: CacheContents = emptyContents();
  /** Makes the fingerprint of the bundle recorded this build, until it is taken (see `recordBundle`). */
  private fingerprintToTake: (() => string) | undefined;
  /** Whether every folder this build listed and every file it read has a record or a racy one: what `unchangedInputs` needs. */
  private complete = true;
  /**
   * What this build listed and read too recently to sign (the racy rule), by path: each folder's entries, each
   * file's size and sha256. The build cache keeps none of them; the rebuild where nothing changed compares them by
   * content (`unchangedInputs`), as git hashes its racily clean entries again rather than trusting their stats.
   */
  private racy = { folders: new Map<string, string[]>(), files: new Map<string, { size: number; sha256: string }>() };
  /** Files changed after this moment (less the granularity) get no signature: see `RACY_NS`. */
  private trustedBefore = trustedBeforeNow();
  /** The record each stats object (as discovery gave it) was found to match: see `knownFile`. */
  private readonly matched = new WeakMap<FileStats, FileRecord>();

  /** The records as the cache file holds them (read, or last written): what a record is dropped from. */
  private saved: CacheContents;

  private constructor(
    private readonly file: string,
    readonly key: string,
    private previous: CacheContents,
    /** Whether this cache is written for the next build (see `open`); when not, nothing else that serves only the next build is worth making. */
    readonly saves: boolean,
    /** The cache file as read or last written, and the records its file of changes holds; undefined when there is none to add changes to. */
    private onDisk: OnDisk | undefined,
  ) {
    this.saved = previous;
  }

  /**
   * The cache for `loaded`, read from disk. `create: false`: where no cache file is found, none is written either
   * (a build on a fresh CI checkout, which no later build in that place will follow); one that is found, even for
   * other settings (restored by a CI cache step), is used and replaced as usual. `readOnly`: used, never written
   * (`check`). A cache that is not written records nothing: it only answers from what an earlier build recorded.
   */
  static open(loaded: LoadedConfig, { create = true, readOnly = false }: { create?: boolean; readOnly?: boolean } = {}): BuildCache {
    const key = BuildCache.keyOf(loaded);
    const file = join(loaded.dir, "node_modules", ".cache", "skillbake", `${basename(loaded.file)}.json`);
    const read = readContents(file, key);
    return new BuildCache(file, key, read?.contents ?? emptyContents(), !readOnly && (create || lstatSync(file, { throwIfNoEntry: false }) !== undefined), read?.onDisk);
  }

  /** The settings' digest a cache for `loaded` has: a config edit that changes it needs a cache of its own. */
  static keyOf(loaded: LoadedConfig): string {
    const { config } = loaded;
    const customFields = config.frontmatter ? declaredFields(config.frontmatter) : [];
    return sha256(JSON.stringify({ tool: TOOL_VERSION, yaml: config.yaml, descriptionFallback: config.descriptionFallback ?? null, customFields }));
  }

  /**
   * Starts another build on this cache (watch mode): what this build recorded is what the next one reuses. What it
   * changed is still to be written (`dirty`): a session saves when it ends.
   */
  nextBuild(): void {
    this.takeFingerprint();
    this.keepBundle();
    this.previous = this.next;
    this.next = emptyContents();
    this.complete = true;
    this.racy = { folders: new Map(), files: new Map() };
    this.trustedBefore = trustedBeforeNow();
    Object.assign(this.stats, { parsed: 0, reused: 0 });
    Object.assign(this.fileStats, { hashed: 0, unchanged: 0 });
    Object.assign(this.folderStats, { listed: 0, unlisted: 0 });
  }

  /**
   * A folder's entries (discovery's `ListFolder`): as an earlier build listed them when the folder's signature is
   * the same, else listed now. The signature is taken before the listing, so a change between the two shows as
   * a new signature next time; a folder changed too recently to tell (the racy rule), or holding anything but
   * files, folders and links, is not recorded. `taken`: its stats, if this build took them already; `seen` gets the
   * stats the listing is vouched for by, and the entries.
   */
  listFolder(dir: string, displayPath: string, taken?: TakenStats, seen?: Map<string, ListedFolder>): FolderEntry[] {
    const record = recordAt(this.previous.folders, displayPath);
    // Its stats tell whether a record still holds, make one, and vouch for a watching session's listing.
    const stats = taken ?? (record || seen || this.saves ? statSync(systemCallPath(dir), { bigint: true, throwIfNoEntry: false }) : undefined);
    if (stats && record && record.stat === signatureOf(stats) && Array.isArray(record.entries) && record.entries.every(isEntryRecord)) {
      this.folderStats.unlisted++;
      this.next.folders[displayPath] = record;
      const entries = record.entries.map((entry) => new CachedEntry(entry));
      seen?.set(dir, { stats: fileStatsOf(stats), entries });
      return entries;
    }
    const entries = readdirSync(systemCallPath(dir), { withFileTypes: true });
    if (stats) seen?.set(dir, { stats: fileStatsOf(stats), entries });
    this.folderStats.listed++;
    if (!this.saves) return entries;
    if (stats?.isDirectory() && entries.every((entry) => entry.isFile() || entry.isDirectory() || entry.isSymbolicLink())) {
      const listed = entries.map((entry) => `${kindOf(entry)}${entry.name}`);
      if (this.isSettled(stats)) {
        this.next.folders[displayPath] = { stat: signatureOf(stats), entries: listed };
      } else this.racy.folders.set(displayPath, listed);
    } else this.complete = false;
    return entries;
  }

  /**
   * Keeps the records of folders this build did not list, their listings taken from an earlier build (see
   * `ListingSource`). One without a record (listed too recently to sign) cannot be vouched for by the inputs.
   */
  keepFolders(displayPaths: Iterable<string>): void {
    for (const path of displayPaths) {
      const record = recordAt(this.previous.folders, path);
      if (!record) {
        this.complete = false;
        continue;
      }
      this.folderStats.unlisted++;
      this.next.folders[path] = record;
    }
  }

  /**
   * The size and sha256 an earlier build recorded for the file at `displayPath` when it had these stats (as the
   * walk found it inside the root, before any read); undefined when it did not, so the file must be read.
   */
  knownFile(displayPath: string, stats: FileStats): { size: number; sha256: string } | undefined {
    const record = recordAt(this.previous.files, displayPath);
    if (!record) return undefined;
    // A watching session hands the same stats object again for a file it did not see change: compared once.
    if (this.matched.get(stats) !== record) {
      if (typeof record.stat !== "string" || record.stat !== signatureOf(stats) || typeof record.sha256 !== "string" || !Number.isInteger(record.size)) return undefined;
      this.matched.set(stats, record);
    }
    this.fileStats.unchanged++;
    this.next.files[displayPath] = record;
    return { size: record.size, sha256: record.sha256 };
  }

  /** Whether an earlier build recorded any file: false for a cold build (no cache, or one for other settings). */
  hasFileRecords(): boolean {
    for (const _ in this.previous.files) return true;
    return false;
  }

  /** Records a file just hashed, with the stats it was read with (the open file's own); a racily clean one is left out. */
  recordFile(displayPath: string, stats: FileStats, size: number, sha256: string): void {
    this.fileStats.hashed++;
    if (!this.saves) return;
    if (!this.isSettled(stats)) {
      this.racy.files.set(displayPath, { size, sha256 });
      return;
    }
    this.next.files[displayPath] = { stat: signatureOf(stats), size, sha256 };
  }

  /** Changed safely before this build began: see `RACY_NS`. */
  private isSettled(stats: FileStats): boolean {
    return isSettledBefore(stats, this.trustedBefore);
  }

  /**
   * A SKILL.md's outcome: from the cache (without its body) when its hash, path and folder match a record, else
   * from `validate`.
   */
  skill(displayFile: string, folder: string, hash: string, validate: () => ValidationResult): { findings: Finding[]; content?: Omit<SkillContent, "body"> & { body?: string } } {
    const record = recordAt(this.previous.skills, displayFile);
    if (record && isSkillRecord(record) && record.hash === hash && record.folder === folder) {
      this.stats.reused++;
      this.next.skills[displayFile] = record;
      return record.content ? { findings: record.findings, content: record.content } : { findings: record.findings };
    }
    this.stats.parsed++;
    const result = validate();
    if (!this.saves) return result;
    const { body: _body, ...content } = result.content ?? { body: "" };
    const fresh: SkillRecord = { hash, folder, findings: result.findings, ...(result.content ? { content: content as SkillRecord["content"] } : {}) };
    // A value JSON cannot carry exactly (NaN, Infinity, -0 from YAML) would come back changed: not cached.
    if (isJsonExact(fresh)) {
      this.next.skills[displayFile] = fresh;
    } else this.complete = false;
    return result;
  }

  /** Notes a read no record vouches for (a file that could not be read, or only in part). */
  unrecorded(): void {
    this.complete = false;
  }

  /**
   * What this build read, one line per folder (`d`), file (`f`) and link (`l`): a tab, its path relative to the
   * config folder, a tab, its signature (for a link, `linkTarget`: where it leads). A folder or file changed too
   * recently to sign (the racy rule) has its contents instead: a folder (`D`) its entries (`listingOf`), a file (`h`)
   * its size and sha256 (`contentSignature`). If none of them changes, a build with the same config finds, reads and
   * yields exactly the same; undefined when that cannot be told: something was read without a record (an unreadable
   * file, say). A folder reached through a link is signed through it, as it was listed, and so is a file. The
   * .gitignore files the walk read are stat'ed now: one settled now (changed before this build began) is what the
   * walk read.
   */
  unchangedInputs(configDir: string): string | undefined {
    if (!this.complete) return undefined;
    const lines: string[] = [];
    const realPaths = new RealPaths();
    const folder = (kind: string, path: string, signature: string, entries: readonly string[]): boolean => {
      if (/[\t\n]/.test(path)) return false; // names a line cannot hold; rare enough to leave to the full build
      lines.push(`${kind}\t${path}\t${signature}`);
      for (const entry of entries) {
        if (entry[0] === "l") {
          // Where a link leads can change while the link does not: where it leads now (its real path and what is there).
          const link = `${path}/${entry.slice(1)}`;
          if (/[\t\n]/.test(link)) return false;
          lines.push(`l\t${link}\t${linkTarget(resolve(configDir, link), realPaths)}`);
          continue;
        }
        if (entry !== "f.gitignore") continue;
        const file = `${path}/.gitignore`;
        const stats = statSync(resolve(configDir, file), { bigint: true, throwIfNoEntry: false });
        if (!stats?.isFile() || !this.isSettled(stats)) return false;
        lines.push(`f\t${file}\t${signatureOf(stats)}`);
      }
      return true;
    };
    for (const [path, record] of Object.entries(this.next.folders)) if (!folder("d", path, record.stat, record.entries)) return undefined;
    for (const [path, entries] of this.racy.folders) if (!folder("D", path, listingSignature(entries), entries)) return undefined;
    for (const [path, record] of Object.entries(this.next.files)) {
      if (/[\t\n]/.test(path)) return undefined;
      lines.push(`f\t${path}\t${record.stat}`);
    }
    for (const [path, file] of this.racy.files) {
      if (/[\t\n]/.test(path)) return undefined;
      lines.push(`h\t${path}\t${contentSignature(file)}`);
    }
    return lines.join("\n");
  }

  /** The bundle this build wrote or found current. */
  get bundle(): BundleRecord | undefined {
    this.takeFingerprint();
    return this.next.bundle ?? this.previous.bundle;
  }

  /** The token counts the last build made in `encoding` (see `TokenCounter.used`), to be reused where the text is the same. */
  tokenCounts(encoding: string): string | undefined {
    const tokens = this.previous.tokens;
    return tokens?.encoding === encoding && typeof tokens.counts === "string" ? tokens.counts : undefined;
  }

  /** Keeps this build's token counts for the next build. */
  recordTokenCounts(encoding: string, counts: string): void {
    const previous = this.previous.tokens;
    // The same counts keep their record: what the cache file holds already.
    this.next.tokens = previous?.encoding === encoding && previous.counts === counts ? previous : { encoding, counts };
  }

  /**
   * Whether `outDir` still holds, untouched, the bundle last written from a compilation with this fingerprint. One
   * with other inputs (`inputsHash`) has another fingerprint: it is not taken.
   */
  bundleIsCurrent(outDir: string, fingerprint: () => string, inputsHash: string): boolean {
    const record = this.previous.bundle;
    if (typeof record?.inputsHash === "string" && record.inputsHash !== inputsHash) return false;
    return isCurrentBundle(record, outDir, fingerprint());
  }

  /**
   * Records the bundle just written: every file (and the folders holding them) with its stat signature, and where its
   * files hold each skill; and each of `alone` (relative to outDir: the published folders and their files), without
   * the folders above it. Its fingerprint is taken when the record is next used or saved (`takeFingerprint`): in
   * watch mode, after the build was reported, off the time from an edit to its bundle.
   */
  recordBundle(
    outDir: string,
    fingerprint: () => string,
    inputsHash: string,
    files: Iterable<string>,
    places: ReadonlyMap<string, FilePlaces>,
    alone: Iterable<string> = [],
  ): void {
    const paths: Record<string, string> = {};
    const add = (path: string) => {
      const signature = statSignature(join(outDir, path));
      if (signature !== undefined) paths[path] = signature;
    };
    add(".");
    for (const file of files) {
      for (let slash = file.indexOf("/"); slash >= 0; slash = file.indexOf("/", slash + 1)) if (!(file.slice(0, slash) in paths)) add(file.slice(0, slash));
      add(file);
    }
    for (const path of alone) add(path);
    this.next.bundle = { outDir, fingerprint: "", inputsHash, paths, places: Object.fromEntries(places) };
    this.fingerprintToTake = fingerprint;
  }

  /** Takes the fingerprint of the bundle `recordBundle` recorded, if it is still to be taken. */
  takeFingerprint(): void {
    const take = this.fingerprintToTake;
    if (!take) return;
    this.fingerprintToTake = undefined;
    this.next.bundle!.fingerprint = take();
  }

  /** A build that found the bundle current recorded none of its own: the one it found is still the last written. */
  private keepBundle(): void {
    if (this.previous.bundle && !this.next.bundle) this.next.bundle = this.previous.bundle;
  }

  /**
   * Writes the cache if anything changed since it was read or written (a record added, dropped or replaced) and it
   * `saves`; failures are ignored. What changed goes to a file of changes beside the cache file while that stays
   * under half the cache file's size (an edit build writes a few records, not all of them); past that, the whole
   * cache is written again.
   */
  save(): void {
    if (!this.saves) return;
    this.takeFingerprint();
    this.keepBundle();
    const { saved, next, onDisk } = this;
    if (onDisk) {
      const changed = changedRecords(saved, next);
      if (isEmpty(changed)) return;
      const all = unionOf(onDisk.changed, changed);
      const json = changesJson(all, next);
      if (json.length <= onDisk.bytes / 2) {
        if (writeCacheJson(changesFile(this.file), FORMAT, `${this.key}:${onDisk.sha256}`, json)) {
          this.saved = next;
          this.onDisk = { ...onDisk, changed: all };
        }
        return;
      }
    }
    // Each record (of a skill, a file, a folder) written whole, the collections of them a record at a time.
    const written = writeCacheFile(this.file, FORMAT, this.key, next, 2);
    if (!written) return;
    // Changes to the cache file it replaced, which it holds: named by that file's sha256, never read with this one.
    rmSync(changesFile(this.file), { force: true });
    this.saved = next;
    this.onDisk = { ...written, changed: noChanges() };
  }
}

/** Whether `outDir` still holds, untouched, the bundle `record` describes, written from a compilation with this fingerprint. */
export function isCurrentBundle(record: BundleRecord | undefined, outDir: string, fingerprint: string): boolean {
  if (!record || record.outDir !== outDir || record.fingerprint !== fingerprint || typeof record.paths !== "object" || record.paths === null) return false;
  const paths = Object.entries(record.paths);
  return paths.length > 0 && paths.every(([path, signature]) => statSignature(join(outDir, path)) === signature);
}

/**
 * Records by path, as objects with no prototype: a path may be `__proto__` (a folder of that name in the config's
 * folder, under a root `.`), which assigned to a plain object would become its prototype and never be saved.
 */
function emptyContents(): CacheContents {
  return { skills: Object.create(null) as CacheContents["skills"], folders: Object.create(null) as CacheContents["folders"], files: Object.create(null) as CacheContents["files"] };
}

/** The record at `path`, if one was saved: never what an object inherits (`constructor`, `toString`). */
function recordAt<T>(records: Record<string, T>, path: string): T | undefined {
  return Object.hasOwn(records, path) ? records[path] : undefined;
}

/**
 * A folder's entries as a `D` line of `unchangedInputs` holds them: sorted (a listing's order is the file system's),
 * joined by `/`, which no name holds.
 */
function listingSignature(entries: readonly string[]): string {
  return [...entries].sort().join("/");
}

/** A folder's entries now, as `listingSignature` gives them; undefined when it cannot be listed, or holds anything but files, folders and links. */
export function listingOf(dir: string): string | undefined {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return undefined;
  }
  return entries.every((entry) => entry.isFile() || entry.isDirectory() || entry.isSymbolicLink()) ? listingSignature(entries.map((entry) => `${kindOf(entry)}${entry.name}`)) : undefined;
}

/** A file as an `h` line of `unchangedInputs` holds it. */
export function contentSignature({ size, sha256 }: { size: number; sha256: string }): string {
  return `${size}:${sha256}`;
}

function kindOf(entry: Dirent): string {
  return entry.isFile() ? "f" : entry.isDirectory() ? "d" : "l";
}

function isEntryRecord(entry: unknown): boolean {
  return typeof entry === "string" && entry.length > 1 && "fdl".includes(entry[0]!);
}

/** A folder entry from the cache: a file, a folder or a link, nothing else. */
class CachedEntry implements FolderEntry {
  readonly name: string;
  private readonly kind: string;
  constructor(record: string) {
    this.kind = record[0]!;
    this.name = record.slice(1);
  }
  isFile(): boolean {
    return this.kind === "f";
  }
  isDirectory(): boolean {
    return this.kind === "d";
  }
  isSymbolicLink(): boolean {
    return this.kind === "l";
  }
  isFIFO(): boolean {
    return false;
  }
  isSocket(): boolean {
    return false;
  }
  isCharacterDevice(): boolean {
    return false;
  }
  isBlockDevice(): boolean {
    return false;
  }
}

/** The cache file as read or last written: its payload, and the records the file of changes beside it replaces (or drops). */
interface OnDisk extends PayloadOnDisk {
  changed: ChangedRecords;
}

/** Records by the collection they are in; the bundle and token counts, each one record. */
interface ChangedRecords {
  skills: Set<string>;
  files: Set<string>;
  folders: Set<string>;
  bundle: boolean;
  tokens: boolean;
}

/** The records kept in collections by path. */
const COLLECTIONS = ["skills", "files", "folders"] as const;

function noChanges(): ChangedRecords {
  return { skills: new Set(), files: new Set(), folders: new Set(), bundle: false, tokens: false };
}

/** The file of changes to the build cache `file`: records that replace its own (null: dropped), named by its sha256. */
function changesFile(file: string): string {
  return file.replace(/\.json$/, ".changes.json");
}

/** The records of `next` that are not those of `saved` (each kept record is the object read or written), and those it dropped. */
function changedRecords(saved: CacheContents, next: CacheContents): ChangedRecords {
  const changed = noChanges();
  for (const collection of COLLECTIONS) {
    const [before, after, paths] = [saved[collection] as Record<string, unknown>, next[collection] as Record<string, unknown>, changed[collection]];
    for (const path of Object.keys(after)) if (recordAt(before, path) !== after[path]) paths.add(path);
    for (const path of Object.keys(before)) if (!Object.hasOwn(after, path)) paths.add(path);
  }
  changed.bundle = saved.bundle !== next.bundle;
  changed.tokens = saved.tokens !== next.tokens;
  return changed;
}

function isEmpty(changed: ChangedRecords): boolean {
  return !changed.bundle && !changed.tokens && COLLECTIONS.every((collection) => changed[collection].size === 0);
}

function unionOf(a: ChangedRecords, b: ChangedRecords): ChangedRecords {
  const union = noChanges();
  for (const collection of COLLECTIONS) union[collection] = new Set([...a[collection], ...b[collection]]);
  return { ...union, bundle: a.bundle || b.bundle, tokens: a.tokens || b.tokens };
}

/** The file of changes for `changed`: each record as `next` has it, or null where it has none. */
function changesJson(changed: ChangedRecords, next: CacheContents): string {
  const changes: Record<string, unknown> = {};
  for (const collection of COLLECTIONS) {
    const records: Record<string, unknown> = Object.create(null);
    for (const path of changed[collection]) records[path] = recordAt(next[collection] as Record<string, unknown>, path) ?? null;
    changes[collection] = records;
  }
  if (changed.bundle) changes.bundle = next.bundle ?? null;
  if (changed.tokens) changes.tokens = next.tokens ?? null;
  return JSON.stringify(changes);
}

/** The cache file's records with its file of changes applied, and what it is on disk; undefined when it is missing, corrupt, or for other settings. */
function readContents(file: string, key: string): { contents: CacheContents; onDisk: OnDisk } | undefined {
  const read = readCachePayload(file, FORMAT, key);
  const contents = read?.value as CacheContents | undefined;
  if (!read || !isObject(contents) || !isObject(contents.skills) || !isObject(contents.files) || !isObject(contents.folders)) return undefined;
  const changes = readCacheFile(changesFile(file), FORMAT, `${key}:${read.sha256}`);
  return { contents, onDisk: { sha256: read.sha256, bytes: read.bytes, changed: applyChanges(contents, changes) } };
}

/**
 * Applies a file of changes (as `changesJson` writes it) to the records it was written for, in place; what it
 * changed. One of another shape changes nothing: the cache file alone is a cache some build wrote.
 */
function applyChanges(contents: CacheContents, changes: unknown): ChangedRecords {
  const changed = noChanges();
  if (!isObject(changes) || !COLLECTIONS.every((collection) => isObject(changes[collection]))) return changed;
  for (const collection of COLLECTIONS) {
    const records = contents[collection] as Record<string, unknown>;
    for (const [path, record] of Object.entries(changes[collection] as Record<string, unknown>)) {
      if (record === null) delete records[path];
      else defineOwn(records, path, record); // a path named `__proto__` is a record like any other
      changed[collection].add(path);
    }
  }
  for (const single of ["bundle", "tokens"] as const) {
    if (!Object.hasOwn(changes, single)) continue;
    const record = changes[single];
    if (record === null) delete contents[single];
    else contents[single] = record as never;
    changed[single] = true;
  }
  return changed;
}

/** The shape a record must have to be used; anything else is treated as absent. */
function isSkillRecord(value: SkillRecord): boolean {
  const content = value.content;
  return (
    typeof value.hash === "string" &&
    typeof value.folder === "string" &&
    Array.isArray(value.findings) &&
    value.findings.every(isFindingRecord) &&
    (content === undefined ||
      (typeof content.name === "string" &&
        typeof content.description === "string" &&
        Number.isInteger(content.bodyLine) &&
        Array.isArray(content.links) &&
        isObject(content.fields) &&
        isObject(content.extra)))
  );
}

/** A finding as a cache file holds one: a rule's code, a message, and where (the fields a report reads). */
export function isFindingRecord(finding: unknown): finding is Finding {
  return isObject(finding) && typeof finding.message === "string" && typeof finding.code === "string" && Object.hasOwn(RULES, finding.code) && (finding.file === undefined || typeof finding.file === "string");
}

/** A JSON object (not an array): what a record read from a cache file must be before its members are used. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isJsonExact(value: unknown): boolean {
  if (typeof value === "number") return Number.isFinite(value) && !Object.is(value, -0);
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (Array.isArray(value)) return value.every(isJsonExact);
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) return Object.values(value).every((item) => item === undefined || isJsonExact(item));
  return false;
}

/** inode, size, and mtime and ctime in nanoseconds: any write, rename over or replacement changes one of them. */
function statSignature(path: string): string | undefined {
  try {
    return bundleFileSignature(statSync(path, { bigint: true }));
  } catch {
    return undefined;
  }
}

/**
 * Where a link leads, as discovery goes by it: the kind (`d` folder, `f` file, `o` other) and real path of its
 * target, or `-` for a link that leads nowhere (broken, a loop).
 */
export function linkTarget(path: string, realPaths: RealPaths): string {
  try {
    const real = realPaths.of(path);
    const stats = lstatSync(real);
    return `${stats.isDirectory() ? "d" : stats.isFile() ? "f" : "o"}${real}`;
  } catch {
    return "-";
  }
}

/** How `BundleRecord.paths` signs a file or folder of the bundle. (Not `BigIntStats`: the declarations need no @types/node.) */
export function bundleFileSignature(stats: { ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string {
  return `${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
}

/**
 * A skill file's signature: `statSignature`'s, and the device, as two folders' files may share inode numbers.
 * Joined, not a template: a template's result is a tree of nine strings, which records keep (26,000 signatures of a
 * 10,000-skill catalogue: ~250,000 objects that every full garbage collection of a watcher marks); a join is one.
 */
export function signatureOf(stats: FileStats): string {
  return [stats.dev, stats.ino, stats.size, stats.mtimeNs, stats.ctimeNs].join(":");
}

/** The stats a `signatureOf` gave (cut at its colons: splitting into an array took twice as long). */
export function statsOfSignature(signature: string): FileStats {
  const ino = signature.indexOf(":") + 1;
  const size = signature.indexOf(":", ino) + 1;
  const mtime = signature.indexOf(":", size) + 1;
  const ctime = signature.indexOf(":", mtime) + 1;
  const field = (from: number, to: number) => BigInt(signature.slice(from, to - 1));
  return { dev: field(0, ino), ino: field(ino, size), size: field(size, mtime), mtimeNs: field(mtime, ctime), ctimeNs: BigInt(signature.slice(ctime)) };
}

/**
 * The stat signatures of `files` when each is settled (changed safely before `since`, by the racy rule): what
 * tells that none of them changed since. Undefined when one is missing or changed too recently to tell.
 */
export function settledSignatures(files: readonly string[], since: bigint): string | undefined {
  const signatures: string[] = [];
  for (const file of files) {
    const stats = statSync(file, { bigint: true, throwIfNoEntry: false });
    if (!stats || (stats.mtimeNs > stats.ctimeNs ? stats.mtimeNs : stats.ctimeNs) >= since - RACY_NS) return undefined;
    signatures.push(signatureOf(stats));
  }
  return signatures.join("\n");
}

/** Whether `stats` were changed safely before `trustedBefore` (a build's start less `RACY_NS`): see `RACY_NS`. */
export function isSettledBefore(stats: FileStats, trustedBefore: bigint): boolean {
  return (stats.mtimeNs > stats.ctimeNs ? stats.mtimeNs : stats.ctimeNs) < trustedBefore;
}

/** The moment before which a change is settled for a build beginning now: see `RACY_NS`. */
export function trustedBeforeNow(): bigint {
  return nowNs() - RACY_NS;
}

export function nowNs(): bigint {
  return BigInt(Date.now()) * 1_000_000n;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
