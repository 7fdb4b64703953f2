import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync, readSync, realpathSync, statSync, type BigIntStats, type Stats } from "node:fs";
import { isAscii } from "node:buffer";
import { isAbsolute, join, relative, sep } from "node:path";
import { EVERYTHING_IGNORED, isIgnored, MAX_GITIGNORE_BYTES, MAX_GITIGNORE_PATTERNS, MAX_GITIGNORE_TESTS, patternsIn, withGitignore, type GitignoreRules } from "./gitignore.js";
import { withThousands, type Finding } from "./diagnostics.js";
import { MAX_SKILL_FILE_BYTES } from "./parse.js";
import { fileStatsOf, isSameFile, type FileIdentity, type FileStats } from "./resources.js";
import { RealPaths } from "./real-paths.js";
import { systemCallPath } from "./system-path.js";

/**
 * Files (and folders) one skill folder may list, counting each path links lead to: links that fan out into a
 * lattice (two links to the next folder, at each of 20 levels) would otherwise list 2^20 paths.
 */
export const MAX_SKILL_FOLDER_ENTRIES = 10_000;

/**
 * Folders a walk goes below a root, skill folders' own included. The walk recurses a few calls a level (four with
 * `nested`, where each level may be a skill), and a chain of 1,000 nested skills ran out of stack; the public
 * catalogues go 8 deep.
 */
export const MAX_FOLDER_DEPTH = 256;

/**
 * Bytes one skill folder's files may total, counting each path links lead to: each is hashed for the manifest
 * (each file once) and copied by `stage`. 64 MiB is twelve times the largest folder of the public catalogues
 * (5.3 MB of fonts, anthropics/skills' canvas-design); links to one large file would otherwise multiply it.
 */
export const MAX_SKILL_FOLDER_BYTES = 64 * 1024 * 1024;

/** A `SKILL.md` found under a root. */
export interface DiscoveredSkill {
  /** Absolute path as discovered: a symlinked folder keeps the link's own path. */
  file: string;
  /** The skill folder relative to the root, `/`-separated ("" when the root is itself a skill). */
  dir: string;
  /** Real path of the file, which identifies it when links make it reachable twice. */
  realFile: string;
  /**
   * Every file of the skill folder, SKILL.md included, relative to it, `/`-separated, in path order: what the
   * manifest lists and `stage` copies. The walk's rules apply inside the skill folder too.
   */
  files: string[];
  /**
   * The identity of each of `files` (and of SKILL.md) when the walk found it inside the root, by the same
   * relative path: a file read later must still be that one (`path-changed`).
   */
  identities: Map<string, FileStats>;
  /** Reached only through a folder whose name starts with `.` (`.curated/…`): a source builds it only when its `include` names that folder. */
  hidden?: true;
}

/**
 * A folder entry as discovery uses it: a `Dirent`, or the build cache's copy of one. Spelled out (not a `Pick` of
 * `Dirent`) so the package's declarations need no @types/node.
 */
export interface FolderEntry {
  name: string;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isSocket(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
}

/** Lists a folder's entries (through links, as readdir does), in any order; throws as readdir does. */
export type ListFolder = (dir: string) => FolderEntry[];

/** `ListFolder` without a cache. */
export function readFolder(dir: string): FolderEntry[] {
  return readdirSync(systemCallPath(dir), { withFileTypes: true });
}

/** A stat record as the walk and the build cache read one: Node's `BigIntStats`, spelled out so the package's declarations need no @types/node. */
export interface TakenStats extends FileStats {
  isFile(): boolean;
  isDirectory(): boolean;
}

/**
 * Stats this build took already, by absolute path: folders' through links (as a listing's signature takes them),
 * files' not (as the walk identifies them). A failed snapshot check (snapshot.ts) keeps the stats it took past
 * the first change it found (on average half the folders and files); the walk uses each stat once instead of
 * taking it again. Taken earlier in the same build, a stat is as good: a change after it shows in the next build,
 * and a file read since must still match it.
 */
export interface StatsTaken {
  folders: Map<string, TakenStats>;
  files: Map<string, TakenStats>;
}

/** The stats `taken` holds of `path`, which it then holds no more. */
export function takeStats(taken: Map<string, TakenStats> | undefined, path: string): TakenStats | undefined {
  const stats = taken?.get(path);
  if (stats) taken!.delete(path);
  return stats;
}

export interface RootListing {
  root: string;
  /**
   * In path order, each real file once: the skills outside dot folders, then (`hidden`) those reached only through
   * one, and with `nested`, those inside other skills' folders.
   */
  skills: DiscoveredSkill[];
  /** Without `nested`: SKILL.md files inside other skills' folders, in path order; each is a file of that skill, not a skill. */
  enclosed: EnclosedSkillFile[];
  findings: Finding[];
  /** Every folder listed, as walked (a linked folder by the link's path): where a change can add, edit or remove a skill. */
  folders: string[];
  /** Each .gitignore read, as walked, with the stats of the file read. */
  ignoreFiles: Map<string, FileStats>;
  /** Why the root gave nothing: it does not exist or cannot be read (`root-missing`), or it is a file (`root-not-folder`). */
  unusable?: { code: "root-missing" | "root-not-folder"; reason: string };
}

/** Whether files of these sizes total more than `MAX_SKILL_FOLDER_BYTES`: a walk leaves the last of them out. */
export function isPastByteLimit(identities: ReadonlyMap<string, FileStats>): boolean {
  let total = 0n;
  for (const identity of identities.values()) total += identity.size;
  return total > BigInt(MAX_SKILL_FOLDER_BYTES);
}

/** Whether the walk of `listing` left files of a skill out by their sizes: one that shrank since may let them back in. */
export function leftFilesOutBySize(listing: Pick<RootListing, "findings">): boolean {
  return listing.findings.some((finding) => finding.code === "skill-files-too-large");
}

/**
 * A file's stats as discovery identifies it, taken again: the file's, or, for a link, those of what it leads to.
 * @internal Left out of the package's declarations: its `BigIntStats` would make them need `@types/node`.
 */
export function statsThroughLink(path: string): BigIntStats | undefined {
  const target = systemCallPath(path);
  const found = lstatSync(target, { bigint: true, throwIfNoEntry: false });
  return found?.isSymbolicLink() ? statSync(target, { bigint: true, throwIfNoEntry: false }) : found;
}

/**
 * The first of `paths` (in path order) whose sizes in `files` stay within `MAX_SKILL_FOLDER_BYTES`, SKILL.md
 * counted first and always kept; the rest are taken out of `files`, so that nothing reads them.
 */
function withinByteLimit(paths: string[], files: Map<string, FileStats>): string[] {
  let total = files.get("SKILL.md")!.size;
  const kept: string[] = [];
  for (const path of paths) {
    if (path !== "SKILL.md" && (total += files.get(path)!.size) > BigInt(MAX_SKILL_FOLDER_BYTES)) files.delete(path);
    else kept.push(path);
  }
  return kept;
}

/** A SKILL.md inside another skill's folder, which (without `nested`) is one of that skill's files. */
export interface EnclosedSkillFile {
  /** Absolute path as discovered. */
  file: string;
  /** Its folder relative to the root, `/`-separated. */
  dir: string;
  /** Real path of the file: one that is a skill too (a skill folder linked into another) is not enclosed. */
  realFile: string;
  /** The folder of the skill it is inside, relative to the root. */
  within: string;
  /** Reached only through a folder whose name starts with `.`. */
  hidden: boolean;
}

export interface DiscoverOptions {
  /** A folder with a SKILL.md inside a skill folder is a skill of its own, and not one of the enclosing skill's files. */
  nested?: boolean;
  list?: ListFolder;
  /** Stats this build took already (see `StatsTaken`). */
  filesTaken?: StatsTaken["files"];
}

/** A folder as the walk reaches it. */
interface Place {
  dir: string;
  /** Relative to the root, `/`-separated. */
  rel: string;
  real: string;
  /** Real paths of the folders above it on the way here: a link back to one of them is a cycle. */
  ancestors: readonly string[];
  /** The .gitignore rules of the folders above it. */
  ignoreRules: GitignoreRules;
  viaLink: boolean;
  /** Reached through a folder whose name starts with `.`. */
  hidden: boolean;
}

/** `place` with other ancestors and rules, field by field: a spread followed by more fields cost V8 ~1–5 µs an object. */
function placeWith(place: Place, ancestors: readonly string[], ignoreRules: GitignoreRules): Place {
  return { dir: place.dir, rel: place.rel, real: place.real, ancestors, ignoreRules, viaLink: place.viaLink, hidden: place.hidden };
}

/**
 * Walks one root: .gitignore honoured, symlinks followed while they stay inside the root, and a folder
 * holding SKILL.md is one skill whose subfolders are its resources (with `nested`, a subfolder holding a SKILL.md
 * is a skill of its own). Each folder's entries are walked in path order and each real folder is listed once, at
 * the first path that reaches it: that is the path dedupe would keep, and links that fan out cannot
 * make the walk exponential. `.git` and node_modules are never entered; other folders whose names start with `.`
 * are walked last, once everything else has been, for the skills only they hold (`hidden`, which a source builds
 * only when its `include` names the folder): a skill also reached through a link elsewhere is found there, as if
 * the dot folders were not walked at all. The result never depends on the order in which the filesystem lists
 * entries.
 *
 * Synchronous on purpose: with the page cache warm (every build after a checkout or an edit), a synchronous
 * readdir costs a fraction of a promise round trip through the thread pool, and a 10,000-skill walk is
 * mostly such calls.
 */
export function discoverRoot(root: string, display: (path: string) => string, options: DiscoverOptions = {}): RootListing {
  let rootReal: string;
  try {
    rootReal = realpathSync.native(root);
    if (!statSync(rootReal).isDirectory()) return { root, skills: [], enclosed: [], findings: [], folders: [], ignoreFiles: new Map(), unusable: { code: "root-not-folder", reason: "is a file, not a folder" } };
  } catch (error) {
    return { root, skills: [], enclosed: [], findings: [], folders: [], ignoreFiles: new Map(), unusable: { code: "root-missing", reason: describeFsError(error, "does not exist") } };
  }
  const walk = new RootWalk(rootReal, display, options);
  walk.walk({ dir: root, rel: "", real: rootReal, ancestors: [], ignoreRules: undefined, viaLink: false, hidden: false });
  return { root, ...walk.finish() };
}

/** Folders never entered: git's own store, and installed packages. */
export const NEVER_WALKED: ReadonlySet<string> = new Set([".git", "node_modules"]);

/** One root's walk: what it found so far, and the dot folders still to walk. */
class RootWalk {
  readonly findings: Finding[] = [];
  private readonly folders: string[] = [];
  private readonly ignoreFiles = new Map<string, FileStats>();
  private readonly found: DiscoveredSkill[] = [];
  private readonly enclosed: EnclosedSkillFile[] = [];
  /** Real paths of the folders walked so far. */
  private readonly listed = new Set<string>();
  /** Dot folders met so far, walked once everything else has been. */
  private readonly dotFolders: Place[] = [];
  /** What the .gitignore files honoured so far cost (see `MAX_GITIGNORE_TESTS`). */
  private gitignoreTests = 0;
  private readonly list: ListFolder;
  /** Where links lead: each folder of a deep tree looked up once, however many links lie below it. */
  private readonly realPaths = new RealPaths();

  constructor(
    private readonly rootReal: string,
    private readonly display: (path: string) => string,
    private readonly options: DiscoverOptions,
  ) {
    this.list = options.list ?? readFolder;
  }

  finish(): Pick<RootListing, "skills" | "enclosed" | "findings" | "folders" | "ignoreFiles"> {
    // A dot folder met while walking another one is walked after it: it goes on the end of the list.
    for (let index = 0; index < this.dotFolders.length; index++) this.walk(this.dotFolders[index]!);
    const seen = new Set<string>();
    const once = (skills: DiscoveredSkill[]) => skills.sort((a, b) => comparePaths(a.dir, b.dir)).filter((skill) => !seen.has(skill.realFile) && seen.add(skill.realFile));
    // A file reached both outside and inside dot folders is the skill found outside.
    const skills = [...once(this.found.filter((skill) => !skill.hidden)), ...once(this.found.filter((skill) => skill.hidden))].sort((a, b) => comparePaths(a.dir, b.dir));
    const enclosed = this.enclosed.filter((entry) => !seen.has(entry.realFile)).sort((a, b) => comparePaths(a.dir, b.dir));
    return { skills, enclosed, findings: this.findings, folders: this.folders, ignoreFiles: this.ignoreFiles };
  }

  walk(place: Place, listing?: FolderEntry[]): void {
    if (this.listed.has(place.real)) return; // reached before, through a link or as a link's target: a cycle or a second path
    // Depth is the path's, not the folder's: one too deep here may be walked where a link reaches it nearer the root.
    if (this.isTooDeep(place.dir, place.rel)) return;
    this.listed.add(place.real);
    let entries = listing;
    if (!entries) {
      try {
        entries = this.list(place.dir).sort((a, b) => comparePaths(a.name, b.name));
      } catch (error) {
        this.findings.push({ code: "path-unreadable", file: this.display(place.dir), message: `the folder ${this.display(place.dir)} ${describePathError(place.dir, error, "cannot be read")}; skills below it are left out` });
        return;
      }
      this.folders.push(place.dir);
    }
    // The folder's own .gitignore applies to everything in it, its SKILL.md included.
    const ignoreRules = this.withIgnoreFile(place, entries);
    const skillEntry = entries.find((entry) => entry.name === "SKILL.md");
    if (skillEntry && !isIgnored(ignoreRules, place.rel ? `${place.rel}/SKILL.md` : "SKILL.md", false) && this.addSkill(placeWith(place, place.ancestors, ignoreRules), skillEntry, entries)) return;

    for (const entry of entries) {
      if (NEVER_WALKED.has(entry.name)) continue;
      const rel = place.rel ? `${place.rel}/${entry.name}` : entry.name;
      const path = pathIn(place.dir, entry.name);
      const ancestors = [...place.ancestors, place.real];
      if (entry.name.startsWith(".")) {
        // Links in dot folders' names are not followed: only the folders themselves are searched.
        if (entry.isDirectory() && !isIgnored(ignoreRules, rel, true)) this.dotFolders.push({ dir: path, rel, real: pathIn(place.real, entry.name), ancestors, ignoreRules, viaLink: place.viaLink, hidden: true });
      } else if (entry.isDirectory()) {
        if (!isIgnored(ignoreRules, rel, true)) this.walk({ dir: path, rel, real: pathIn(place.real, entry.name), ancestors, ignoreRules, viaLink: place.viaLink, hidden: place.hidden });
      } else if (entry.isSymbolicLink()) {
        const target = this.resolveLink(path);
        if (!target?.stats.isDirectory() || isIgnored(ignoreRules, rel, true)) continue; // broken links and links to files are not skills
        if (!this.isInsideRoot(target.real)) {
          this.findings.push(escapeFinding(this.display(path), target.real, this.display));
          continue;
        }
        this.walk({ dir: path, rel, real: target.real, ancestors, ignoreRules, viaLink: true, hidden: place.hidden });
      }
    }
  }

  /**
   * Makes the folder at `place` (its own .gitignore among its rules) a skill; false when its SKILL.md is not a file
   * (reported), so the walk goes on below it.
   */
  private addSkill(place: Place, skillEntry: FolderEntry, entries: FolderEntry[]): boolean {
    const file = pathIn(place.dir, "SKILL.md");
    let realFile: string | undefined;
    let identity: FileStats | undefined;
    if (skillEntry.isFile()) {
      realFile = pathIn(place.real, "SKILL.md");
      identity = this.identify(file, pathIn(place.real, "SKILL.md"), "the folder is not a skill");
    } else if (skillEntry.isSymbolicLink()) {
      const target = this.resolveLink(file);
      if (target && !this.isInsideRoot(target.real)) {
        this.findings.push(escapeFinding(this.display(file), target.real, this.display));
        return true;
      }
      if (target?.stats.isFile()) {
        realFile = target.real;
        identity = fileStatsOf(target.stats);
      } else this.findings.push(notAFile(this.display(file), target ? describeKind(target.stats) : this.describeBrokenLink(file)));
    } else {
      this.findings.push(notAFile(this.display(file), describeKind(skillEntry)));
    }
    if (realFile === undefined || identity === undefined) return false;
    const files = new Map<string, FileStats>();
    const budget = { left: MAX_SKILL_FOLDER_ENTRIES };
    this.collectFiles(placeWith(place, [...place.ancestors, place.real], place.ignoreRules), "", place.rel, entries, files, budget);
    if (budget.left < 0) {
      this.findings.push({
        code: "skill-folder-too-large",
        file: this.display(file),
        message: `the skill folder ${this.display(place.dir)} holds more than ${withThousands(MAX_SKILL_FOLDER_ENTRIES)} files and folders (counting each path its links lead to); the rest are left out of its file list`,
        hint: "Move large material out of the skill folder, or remove links that lead to the same folders many times over.",
      });
    }
    files.set("SKILL.md", identity);
    const listed = files.size;
    const paths = withinByteLimit([...files.keys()].sort(comparePaths), files);
    if (paths.length < listed) {
      this.findings.push({
        code: "skill-files-too-large",
        file: this.display(file),
        message: `the files of the skill folder ${this.display(place.dir)} total more than ${MAX_SKILL_FOLDER_BYTES / 1024 / 1024} MiB (counting each path its links lead to); ${listed - paths.length} of ${listed}, the last in path order, are left out of its file list`,
        hint: "Keep large data, models and media out of the skill folder (its files are hashed for the manifest and copied with `stage`), or remove links that lead to the same file many times over.",
      });
    }
    this.found.push({ file, dir: place.rel, realFile, files: paths, identities: files, ...(place.hidden ? { hidden: true as const } : {}) });
    return true;
  }

  /**
   * A skill folder's files, by the walk's rules: dot entries, node_modules and ignored paths left out, links
   * followed while they stay inside the root, cycles ended. `entries` is the folder's listing, already read;
   * `skillRel` the folder relative to the skill's, `skillDir` the skill's relative to the root. A dot folder is
   * searched for skills later, as the walk's are; a subfolder with a SKILL.md is recorded as enclosed, or with
   * `nested` walked as a skill of its own.
   */
  private collectFiles(place: Place, skillRel: string, skillDir: string, entries: readonly FolderEntry[], files: Map<string, FileStats>, budget: { left: number }): void {
    const { ignoreRules } = place;
    for (const entry of entries) {
      const rel = place.rel ? `${place.rel}/${entry.name}` : entry.name;
      const path = pathIn(place.dir, entry.name);
      if (entry.name.startsWith(".") || entry.name === "node_modules") {
        if (!NEVER_WALKED.has(entry.name) && entry.isDirectory() && !isIgnored(ignoreRules, rel, true)) {
          this.dotFolders.push({ dir: path, rel, real: pathIn(place.real, entry.name), ancestors: [...place.ancestors, place.real], ignoreRules, viaLink: place.viaLink, hidden: true });
        }
        continue;
      }
      if (--budget.left < 0) return;
      const fileRel = skillRel ? `${skillRel}/${entry.name}` : entry.name;
      const descend = (real: string, viaLink: boolean) => {
        if (real === place.real || place.ancestors.includes(real) || this.isTooDeep(path, rel)) return; // a cycle, or too deep
        let inner: FolderEntry[];
        try {
          // In path order, so that a folder over the entry budget always lists the same files.
          inner = this.list(path).sort((a, b) => comparePaths(a.name, b.name));
        } catch (error) {
          this.findings.push({ code: "path-unreadable", file: this.display(path), message: `the folder ${this.display(path)} ${describePathError(path, error, "cannot be read")}; its files are left out of the skill` });
          return;
        }
        this.folders.push(path);
        const inside: Place = { dir: path, rel, real, ancestors: [...place.ancestors, place.real], ignoreRules, viaLink, hidden: place.hidden };
        const innerRules = this.withIgnoreFile(inside, inner);
        const skillEntry = inner.find((child) => child.name === "SKILL.md");
        if (skillEntry && !isIgnored(innerRules, `${rel}/SKILL.md`, false)) {
          if (this.options.nested) return this.walk(inside, inner);
          const file = pathIn(path, "SKILL.md");
          // `real` is the folder's real path: only a link needs resolving.
          this.enclosed.push({ file, realFile: skillEntry.isSymbolicLink() ? this.realpathOr(file) : pathIn(real, "SKILL.md"), dir: rel, within: skillDir, hidden: place.hidden });
        }
        this.collectFiles(placeWith(inside, inside.ancestors, innerRules), fileRel, skillDir, inner, files, budget);
      };
      if (entry.isFile()) {
        const identity = isIgnored(ignoreRules, rel, false) ? undefined : this.identify(path, pathIn(place.real, entry.name), "it is left out of the skill's files");
        if (identity) files.set(fileRel, identity);
      } else if (!entry.isDirectory() && !entry.isSymbolicLink()) {
        if (!isIgnored(ignoreRules, rel, false)) this.findings.push(notInFiles(this.display(path), describeKind(entry)));
      } else if (entry.isDirectory()) {
        if (!isIgnored(ignoreRules, rel, true)) descend(pathIn(place.real, entry.name), place.viaLink);
      } else if (entry.isSymbolicLink()) {
        const target = this.resolveLink(path);
        if (!target) continue; // a broken link
        if (!(target.stats.isFile() || target.stats.isDirectory())) {
          if (!isIgnored(ignoreRules, rel, false)) this.findings.push(notInFiles(this.display(path), `is a link to something that ${describeKind(target.stats)}`));
          continue;
        }
        if (isIgnored(ignoreRules, rel, target.stats.isDirectory())) continue;
        if (!this.isInsideRoot(target.real)) {
          this.findings.push(escapeFinding(this.display(path), target.real, this.display));
          continue;
        }
        if (target.stats.isFile()) files.set(fileRel, fileStatsOf(target.stats));
        else descend(target.real, true);
      }
    }
  }

  /** Where a link leads; its stats are the target's own (lstat of the real path), to be its identity. */
  private resolveLink(path: string): { real: string; stats: BigIntStats } | undefined {
    try {
      const real = this.realPaths.of(path);
      return { real, stats: lstatSync(real, { bigint: true }) };
    } catch {
      return undefined;
    }
  }

  private realpathOr(path: string): string {
    try {
      return this.realPaths.of(path);
    } catch {
      return path;
    }
  }

  private describeBrokenLink(path: string): string {
    try {
      this.realPaths.of(path);
      return "is a link that cannot be followed";
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === "ELOOP" ? "is a symlink loop" : "is a link to nothing";
    }
  }

  /** Whether the folder at `path` (`rel` from the root) lies past `MAX_FOLDER_DEPTH`: then it is reported, not listed. */
  private isTooDeep(path: string, rel: string): boolean {
    // Past the limit, `rel` holds at least that many names and slashes between them: most paths are told by length.
    if (rel.length <= 2 * MAX_FOLDER_DEPTH) return false;
    let depth = 1;
    for (let slash = rel.indexOf("/"); slash !== -1; slash = rel.indexOf("/", slash + 1)) depth++;
    if (depth <= MAX_FOLDER_DEPTH) return false;
    this.findings.push({
      code: "folder-too-deep",
      file: this.display(path),
      message: `the folder ${this.display(path)} lies more than ${MAX_FOLDER_DEPTH} folders below its root; nothing in it is read`,
      hint: `Keep skills and their files within ${MAX_FOLDER_DEPTH} folders of the root.`,
    });
    return true;
  }

  private isInsideRoot(real: string): boolean {
    const { rootReal } = this;
    return real === rootReal || real.startsWith(rootReal.endsWith(sep) ? rootReal : rootReal + sep);
  }

  /**
   * `place.ignoreRules`, with the folder's own .gitignore (when its listing has one) as the deepest. Where that
   * cannot be honoured in reasonable time (see `gitignore-too-large`), everything in the folder is left out, with a
   * finding.
   */
  private withIgnoreFile(place: Place, entries: readonly FolderEntry[]): GitignoreRules {
    if (!entries.some((entry) => entry.name === ".gitignore" && entry.isFile())) return place.ignoreRules;
    let rules: Uint8Array = new Uint8Array();
    const file = pathIn(place.dir, ".gitignore");
    let fd: number | undefined;
    try {
      fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
      const stats = fstatSync(fd, { bigint: true });
      this.ignoreFiles.set(file, fileStatsOf(stats));
      if (stats.size > MAX_GITIGNORE_BYTES) return this.leaveOut(place, file, OVER_GITIGNORE_BYTES);
      rules = readFileSync(fd);
    } catch {
      // an unreadable .gitignore ignores nothing
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    if (rules.byteLength > MAX_GITIGNORE_BYTES) return this.leaveOut(place, file, OVER_GITIGNORE_BYTES);
    const matcher = withGitignore(place.ignoreRules, place.rel, rules);
    if ("costlyLine" in matcher) {
      const why = "holds a pattern with `**` as a name twice before its last name (as `**/a/**/b` does), which takes time growing with a path's depth squared or more to try";
      return this.leaveOut(place, file, why, matcher.costlyLine, "Write the pattern with one `**` before its last name (`**/b`, `a/**/b`), or narrow discovery with the source's `exclude` globs.");
    }
    if (!("patterns" in matcher)) {
      // Each folder from the root down to this one, tried against each pattern in scope.
      this.gitignoreTests += (place.rel === "" ? 1 : place.rel.split("/").length + 1) * patternsIn(matcher);
      if (this.gitignoreTests <= MAX_GITIGNORE_TESTS) return matcher;
      return this.leaveOut(place, file, `would have the walk try the folders above the .gitignore files of this root against their patterns more than ${withThousands(MAX_GITIGNORE_TESTS)} times (each tries every folder above it against every pattern that applies there)`);
    }
    const holds = place.ignoreRules ? "and the .gitignore files above it hold" : "holds";
    return this.leaveOut(place, file, `${holds} ${withThousands(matcher.patterns)} patterns, more than the ${withThousands(MAX_GITIGNORE_PATTERNS)} a build tries each path against`);
  }

  /**
   * Reports the .gitignore at `file` that cannot be honoured (`why`; at `line` where one is at fault), and gives the
   * rules that leave out everything in its folder.
   */
  private leaveOut(place: Place, file: string, why: string, line?: number, hint = "Keep a .gitignore inside a skills root to the patterns its folder needs, or narrow discovery with the source's `exclude` globs."): GitignoreRules {
    this.findings.push({
      code: "gitignore-too-large",
      file: this.display(file),
      ...(line === undefined ? {} : { line, column: 1 }),
      message: `${this.display(file)} ${why}; everything in ${this.display(place.dir)} is left out`,
      hint,
    });
    return EVERYTHING_IGNORED;
  }

  /** The identity of a regular file the walk listed (`path`, at `realPath`); a finding when it is unreadable or no longer a file. */
  private identify(path: string, realPath: string, consequence: string): FileStats | undefined {
    let stats: TakenStats;
    try {
      stats = takeStats(this.options.filesTaken, realPath) ?? lstatSync(systemCallPath(realPath), { bigint: true });
    } catch (error) {
      this.findings.push({ code: "path-unreadable", file: this.display(path), message: `${this.display(path)} ${describePathError(path, error, "cannot be read")}; ${consequence}` });
      return undefined;
    }
    if (stats.isFile()) return fileStatsOf(stats);
    this.findings.push(pathChanged(this.display(path), this.display(path), consequence));
    return undefined;
  }
}

/**
 * Path order: depth first, each folder's entries in bytewise order of their names. That is code point
 * order with "/" below every other character, compared in place: sorting 10,000 paths calls this ~140,000 times.
 */
export function comparePaths(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    if (x === SLASH) return -1;
    if (y === SLASH) return 1;
    return a.codePointAt(i)! - b.codePointAt(i)!;
  }
  return a.length - b.length;
}
const SLASH = 0x2f;
/** A `/`-separated relative path with an empty, `.` or `..` segment, or none at all. */
const UNNORMALIZED = /^$|(^|\/)\.{0,2}(\/|$)/;

/**
 * `join(dir, rel)` for a folder path already normalized (resolved, real, or made here) and a relative path of plain
 * names (a name a listing gave, or a skill's file as `DiscoveredSkill.files` holds it, `/`-separated): without
 * join's normalizing, which at tens of thousands of calls a build made most of discovery's garbage.
 */
export function pathIn(dir: string, rel: string): string {
  if (sep !== "/" && rel.includes("/")) return join(dir, rel);
  return dir.endsWith(sep) ? dir + rel : dir + sep + rel;
}

/** Whether `rel` is a `/`-separated relative path of plain names (no empty, `.` or `..` segment), which `pathIn` joins as `resolve` would. */
export function isPlainRelative(rel: string): boolean {
  return !UNNORMALIZED.test(rel) && !isAbsolute(rel);
}

function notAFile(file: string, what: string): Finding {
  return {
    code: "path-unreadable",
    file,
    message: `${file} ${what}, not a file; the folder is not a skill`,
    hint: "A skill is a folder with a regular file named SKILL.md (or a link to one inside the root).",
  };
}

/** A FIFO, socket or device in a skill folder: it cannot be hashed or staged, so it is left out of the skill's files. */
function notInFiles(file: string, what: string): Finding {
  return {
    code: "path-unreadable",
    file,
    message: `${file} ${what}, not a regular file; it is left out of the skill's files`,
    hint: "A skill folder holds regular files and folders; remove it, or add it to a .gitignore.",
  };
}

function describeKind(entry: FolderEntry | Stats | BigIntStats): string {
  if (entry.isDirectory()) return "is a folder";
  if (entry.isFIFO()) return "is a FIFO";
  if (entry.isSocket()) return "is a socket";
  if (entry.isCharacterDevice() || entry.isBlockDevice()) return "is a device";
  return "is not a regular file";
}

function escapeFinding(file: string, target: string, display: (path: string) => string): Finding {
  return {
    code: "symlink-escape",
    file,
    message: `the link ${file} resolves outside its root (to ${display(target) || "."}); it is not followed`,
    hint: "Copy the skill into the root, or add the link's target as a source of its own in the config.",
  };
}

/**
 * SKILL.md's bytes, and the file's identity and times, which tell the cache whether it changed.
 * @internal Left out of the package's declarations: its `BigIntStats` would make them need `@types/node`.
 */
export interface SkillBytes {
  /** A view of a buffer every call reuses: valid until the next call. */
  bytes: Uint8Array;
  stats: BigIntStats;
}

/**
 * Where `readSkillBytes` reads: one buffer for every file, as reads are synchronous and used at once. Made on first
 * use, as a build that reads no SKILL.md (nothing changed) needs none: memory outside the heap counts toward the
 * limit that starts V8's full collection (two 2 MiB buffers made at load gave a build that read one file a second one).
 */
let readBuffer: Buffer | undefined;

/**
 * Reads at most one byte past the size limit: parsing reports a larger file without it ever being loaded whole.
 * Opened non-blocking, so a FIFO put in a file's place cannot hang the build.
 * @internal
 */
export function readSkillBytes(file: string, expected: FileIdentity): SkillBytes | Finding {
  let fd: number | undefined;
  try {
    fd = openSync(systemCallPath(file), constants.O_RDONLY | constants.O_NONBLOCK);
    const stats = fstatSync(fd, { bigint: true });
    if (!stats.isFile()) throw Object.assign(new Error("is not a regular file"), { code: "EISDIR" });
    if (!isSameFile(stats, expected)) return pathChanged(file, "SKILL.md", "the skill is left out");
    // Read to the end, or to the size fstat gave (no read to find an end already known), or past the size limit.
    const size = Number(stats.size);
    const buffer = (readBuffer ??= Buffer.allocUnsafe(MAX_SKILL_FILE_BYTES + 1));
    let length = 0;
    while (length < buffer.length) {
      const bytesRead = readSync(fd, buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length === size) break;
    }
    return { bytes: buffer.subarray(0, length), stats };
  } catch (error) {
    return { code: "path-unreadable", file, message: `SKILL.md ${describePathError(file, error, "cannot be read")}; the skill is left out` };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * A SKILL.md `readAhead` read: `text` is its bytes decoded, when they were cut from a group's text (see there).
 * @internal As `SkillBytes`.
 */
export interface SkillRead extends SkillBytes {
  text?: string;
}

/** About how many bytes of SKILL.md files `readAhead` reads before handing them on. */
const READ_AHEAD_BYTES = 1024 * 1024;

/**
 * The bytes of a group of files `readAhead` read, one after another: grown as they need (a build that reads a file or
 * two holds 64 KiB, not megabytes, outside the heap; see `readBuffer`), and kept for the next group.
 */
class GroupBytes {
  private buffer = Buffer.allocUnsafe(0);
  used = 0;

  /** A view of `bytes` copied in, valid until the next group starts (a buffer it outgrows is not written again). */
  append(bytes: Uint8Array): Buffer {
    const end = this.used + bytes.byteLength;
    if (end > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(end, 2 * this.buffer.length, 64 * 1024));
      this.buffer.copy(grown, 0, 0, this.used);
      this.buffer = grown;
    }
    this.buffer.set(bytes, this.used);
    this.used = end;
    return this.buffer.subarray(end - bytes.byteLength, end);
  }

  /** The group's bytes as Latin-1 text. */
  latin1(): string {
    return this.used > 0 ? this.buffer.toString("latin1", 0, this.used) : "";
  }
}

/** Where `readAhead` keeps a group's ASCII files (their bytes are their text), and the others. */
const ASCII_GROUP = new GroupBytes();
const OTHER_GROUP = new GroupBytes();
const CARRIAGE_RETURN = 0x0d;

/**
 * Each item with its SKILL.md read (`readSkillBytes`), or with what `known` says of it instead of reading it, in
 * order. Files are read a group of about 1 MiB ahead: the texts of the group's ASCII files without a carriage
 * return (as UTF-8 decoding of them gives, the CR-free text parsing needs) are cut from one string. V8 keeps a
 * string that large where its collector never copies it, and each text, with the body cut from it and kept until
 * the bundle is written, is a view of it; a file decoded on its own is a young string the collector copies twice
 * (at 10,000 skills ~45 ms of a build and ~20 MB of its peak memory). A file's bytes are valid until the next
 * group is read: until the loop asks for the item a group past it.
 * @internal
 */
export function* readAhead<T extends { file: string; stats: FileIdentity }, Known>(items: Iterable<T>, known: (item: T) => Known | undefined): Generator<[T, { known: Known } | SkillRead | Finding]> {
  const group: [T, { known: Known } | SkillRead | Finding, number][] = [];
  const handOn = function* () {
    const texts = ASCII_GROUP.latin1();
    for (const [item, read, at] of group) {
      if (at >= 0 && "bytes" in read) read.text = texts.slice(at, at + read.bytes.byteLength);
      yield [item, read] as [T, { known: Known } | SkillRead | Finding];
    }
    group.length = ASCII_GROUP.used = OTHER_GROUP.used = 0;
  };
  for (const item of items) {
    const record = known(item);
    if (record !== undefined) {
      group.push([item, { known: record }, -1]);
      continue;
    }
    const read: SkillRead | Finding = readSkillBytes(item.file, item.stats);
    let at = -1;
    if ("bytes" in read) {
      const { bytes } = read;
      if (bytes.byteLength <= MAX_SKILL_FILE_BYTES && isAscii(bytes) && !bytes.includes(CARRIAGE_RETURN)) {
        at = ASCII_GROUP.used;
        read.bytes = ASCII_GROUP.append(bytes);
      } else read.bytes = OTHER_GROUP.append(bytes);
    }
    group.push([item, read, at]);
    if (ASCII_GROUP.used >= READ_AHEAD_BYTES || OTHER_GROUP.used >= READ_AHEAD_BYTES) yield* handOn();
  }
  yield* handOn();
}

const OVER_GITIGNORE_BYTES = `is over ${MAX_GITIGNORE_BYTES / 1024 / 1024} MiB`;

/** A file that is not the one discovery verified inside the root: it was swapped (for a link out of the root, say) meanwhile. */
export function pathChanged(file: string, what: string, consequence: string): Finding {
  return {
    code: "path-changed",
    file,
    message: `${what} is no longer the file found inside the root (it was replaced after discovery); it is not read, and ${consequence}`,
    hint: "Something changed the skill folder during the build; build again once it is settled.",
  };
}

/** Names are read as UTF-8: one that is not comes back with U+FFFD in it, a path that then does not exist. */
function describePathError(path: string, error: unknown, fallback: string): string {
  if ((error as NodeJS.ErrnoException | undefined)?.code === "ENOENT" && path.includes("\uFFFD")) return "has a name that is not valid UTF-8 (rename it)";
  return describeFsError(error, fallback);
}

function describeFsError(error: unknown, fallback: string): string {
  switch ((error as NodeJS.ErrnoException | undefined)?.code) {
    case "ENOENT":
      return "does not exist";
    case "EACCES":
    case "EPERM":
      return "cannot be read (permission denied)";
    case "ENOTDIR":
      return "is not a folder";
    case "EISDIR":
      return "is not a regular file";
    case "ELOOP":
      return "is a symlink loop";
    default:
      return (error as Error | undefined)?.message && fallback !== "does not exist" ? `${fallback} (${(error as Error).message})` : fallback;
  }
}

/** `path` relative to `base` (both absolute), `/`-separated: what diagnostics and the cache name files by. */
export function relativeTo(base: string, path: string): string {
  // Below `base`, a normalized path is the rest of it: without `relative`'s resolving both (~1 µs, tens of
  // thousands of calls a build). Only for `/` paths whose rest has no empty, `.` or `..` segment.
  const rest = sep === "/" && path.startsWith(base) && path.charCodeAt(base.length) === SLASH ? path.slice(base.length + 1) : undefined;
  if (rest !== undefined && !UNNORMALIZED.test(rest)) return rest;
  const rel = relative(base, path);
  return sep === "/" ? rel : rel.split(sep).join("/");
}
