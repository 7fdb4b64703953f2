import { lstatSync, statSync, watch, type FSWatcher } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join, sep } from "node:path";
import { buildInSession, BuildSession, type BuildOptions, type BuildResult } from "../api.js";
import { OutDirLockedError } from "../bundle/emit.js";
import { resolveRoot } from "../compile/config.js";
import { NEVER_WALKED } from "../compile/discover.js";

/** One build of a watch session. */
export interface WatchBuild {
  /** Absolute paths whose change started this build (empty for the first). */
  changed: string[];
  /** The build's outcome; with errors nothing was written and the last good bundle stays. */
  result?: BuildResult;
  /** What stopped the build before it had an outcome: a config that no longer loads, an outDir it cannot replace. */
  error?: unknown;
  /** Another build held the outDir's lock: this one runs again after this many milliseconds. */
  retryInMs?: number;
  /**
   * Roots the last build found that are gone now (moved away by a branch switch or `git stash`, say): no build
   * ran, so the last good bundle stays instead of an empty one; the next build runs when they are back.
   */
  missingRoots?: string[];
  /** How long the build took, in milliseconds. */
  ms: number;
  /** Folders watched after this build, and the reason some could not be (the system's limit on watches, say). */
  watching: { folders: number; failed?: string };
}

/** What in a watched folder can change the build. */
interface Interest {
  /** Discovery lists the folder: a change that can alter what it finds matters. */
  walked: boolean;
  /** Files read from the folder by name: the config and what it imports, context files. */
  names: ReadonlySet<string>;
}

/** What a folder discovery walks is watched for besides its entries: no names (one set, shared, never added to). */
const NO_NAMES: ReadonlySet<string> = new Set();

/**
 * Changes closer together than this are one change: an editor's save (a new file written, then renamed over the
 * old one) takes a millisecond or two. As short as webpack's (20 ms), since it is added to every rebuild's latency;
 * a change that comes later, even during the build (a long `git checkout`), is built next, so none is lost.
 */
const QUIET_MS = 25;
/** How long a build refused by another build's lock waits before it tries again. */
const LOCK_RETRY_MS = 1000;

/**
 * `build --watch`: builds, then rebuilds whenever a skill file, the config or a file it imports changes, until
 * `signal` aborts. A failed build writes nothing (as always), so the last good bundle stays in place.
 *
 * Each folder discovery listed gets its own non-recursive `fs.watch` (inotify on Linux), and so does each folder
 * holding a config input or a context file, filtered to those files' names (editors save by renaming a new file
 * over the old one, which a watch on the file itself would lose). Node 20's `recursive: true` is not used:
 * on Linux it is emulated in JavaScript (a walk that adds a watch per folder, racing with the changes it is
 * meant to see) and it would also watch what discovery skips (node_modules, dot folders, ignored paths). After
 * every build the set of folders is brought up to date with what that build's discovery listed, so new skill
 * folders are watched and removed ones released, and every folder and file the build went by is checked against
 * what it found: a change made before its folder was watched (or whose event an overflowing queue dropped) is
 * built next, so none is missed. Events inside the outDir are ignored: the build's own writes.
 */
export async function watchBuild(options: BuildOptions, onBuild: (build: WatchBuild) => void | Promise<void>, signal: AbortSignal): Promise<void> {
  // V8 lets the heap grow to up to four times what it held after a collection before collecting again: a watcher
  // keeping a 10,000-skill catalogue's records (~100 MB), each rebuild making ~100–200 MB of garbage, sat near 700 MB.
  // Collecting at 1.6 times keeps it near its first build's size: at 10,000 skills, peak 323–341 MB over 16
  // rebuilds, where 1.75 times peaked at 358–410 MB and was no faster (median 984 ms a rebuild against 1,026).
  // Required here: loading node:v8 cost every other command ~1 ms of its start. (Not `import()`: the CLI runs as a
  // script, which has no loader of its own for it.)
  const { setFlagsFromString } = createRequire(import.meta.url)("node:v8") as typeof import("node:v8");
  setFlagsFromString("--heap-growing-percent=60");
  await new FolderWatcher(options, onBuild, signal).run();
}

/** A watch session's state: the folders watched, the changes pending, the build running, and what the last build read. */
class FolderWatcher {
  /** Watched folder → its watcher and the folder's identity, whether discovery lists it, and the names in it that matter besides. */
  private readonly watched = new Map<string, { watcher: FSWatcher; identity: string } & Interest>();
  private outDir: string | undefined;
  /** Folders of the skills in the bundle: every file in them (and below) is listed in the manifest. */
  private skillFolders = new Set<string>();
  /** The roots (absolute) that were folders at the last build, and the config's own files. */
  private roots: string[] = [];
  private configFiles = new Set<string>();
  private failed: string | undefined;
  /**
   * What the last full `follow` went by (outDir, config files, roots, files and folders read) when it watched every
   * folder it wanted, how many, and each of those folders with every folder above it.
   */
  private followed: { paths: readonly string[]; folders: number; watchedOrAbove: ReadonlySet<string> } | undefined;
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private building: Promise<void> | undefined;
  /**
   * The config, the build cache and the last discovery, kept between builds: a rebuild reads and hashes only what
   * changed, and walks the roots again only when a change can alter what discovery finds.
   */
  private readonly session = new BuildSession({ watched: true });

  constructor(
    private readonly options: BuildOptions,
    private readonly onBuild: (build: WatchBuild) => void | Promise<void>,
    private readonly signal: AbortSignal,
  ) {}

  /** Builds, then watches until the signal aborts; the build cache is saved once the last build has ended. */
  async run(): Promise<void> {
    await this.runBuild([]);
    if (this.watched.size === 0) return; // nothing to watch: the first build could not even load the config
    await new Promise<void>((resolve) => {
      const stop = () => {
        clearTimeout(this.timer);
        for (const { watcher } of this.watched.values()) watcher.close();
        this.watched.clear();
        void (this.building ?? Promise.resolve()).finally(() => {
          this.session.save();
          resolve();
        });
      };
      if (this.signal.aborted) stop();
      else this.signal.addEventListener("abort", stop, { once: true });
    });
  }

  private isOwnOutput(path: string): boolean {
    const { outDir } = this;
    return outDir !== undefined && (path === outDir || path.startsWith(outDir + sep) || (dirname(path) === dirname(outDir) && basename(path).startsWith(`.${basename(outDir)}.`)));
  }

  /**
   * Whether a change to `name` in a folder discovery lists can change the build: SKILL.md, .gitignore, a folder
   * or link coming or going (of dot entries, a folder: discovery looks in them for skills to name); any file of a
   * bundled skill (the manifest lists and hashes them). Other files (a log beside the skills, say) and what
   * discovery skips (.git, node_modules, dot files and links) cannot.
   */
  private mattersToDiscovery(folder: string, name: string): boolean {
    if (name === "SKILL.md" || name === ".gitignore") return true;
    if (NEVER_WALKED.has(name)) return false;
    const dotEntry = name.startsWith(".");
    if (!dotEntry && isAtOrBelow(folder, this.skillFolders)) return true;
    try {
      const stats = lstatSync(join(folder, name));
      return dotEntry ? stats.isDirectory() : !stats.isFile();
    } catch {
      return true; // gone: it may have been a folder
    }
  }

  private onChange(folder: string, name: string | null): void {
    const entry = this.watched.get(folder);
    if (!entry) return;
    if (name !== null && !entry.names.has(name) && !(entry.walked && this.mattersToDiscovery(folder, name))) return;
    // A watched folder moved or deleted is reported by its own name, as if it held an entry of that name.
    const itself = name === null || (name === basename(folder) && identityOf(join(folder, name)) === undefined);
    const path = itself ? folder : join(folder, name);
    if (this.isOwnOutput(path)) return;
    this.pending.add(path);
    this.schedule();
  }

  private schedule(delay = QUIET_MS): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (this.building) return; // the running build schedules again when it ends
      this.building = this.runBuild([...this.pending]).then((retryInMs) => {
        this.building = undefined;
        if (!this.signal.aborted && (retryInMs !== undefined || this.pending.size > 0)) this.schedule(retryInMs);
      });
    }, delay);
  }

  /** Runs a build and reports it; returns when to try again, for a build another build's lock refused. */
  private async runBuild(changed: string[]): Promise<number | undefined> {
    const { pending, session, signal } = this;
    pending.clear();
    const watching = () => ({ folders: this.watched.size, ...(this.failed ? { failed: this.failed } : {}) });
    const missingRoots = changed.some((path) => this.configFiles.has(path)) ? [] : this.roots.filter((root) => !isFolder(root));
    if (missingRoots.length > 0) {
      await this.onBuild({ changed, missingRoots, ms: 0, watching: watching() });
      return undefined;
    }
    const start = performance.now();
    let result: BuildResult | undefined;
    let error: unknown;
    session.noteChanges(changed);
    try {
      result = await buildInSession(this.options, session);
    } catch (caught) {
      error = caught;
    }
    const ms = performance.now() - start;
    if (result && !signal.aborted) this.follow(result, changed);
    const retryInMs = error instanceof OutDirLockedError && changed.length > 0 ? LOCK_RETRY_MS : undefined;
    if (retryInMs !== undefined) for (const path of changed) pending.add(path);
    await this.onBuild({ changed, ...(result ? { result } : { error }), ...(retryInMs !== undefined ? { retryInMs } : {}), ms, watching: watching() });
    // The bundle this build replaced goes once the build is reported; its fingerprint is taken then.
    await session.afterReport();
    // A change no event told of (made before its folder was watched, or dropped by an overflowing queue) is built next.
    if (result && !signal.aborted) for (const path of session.missedChanges()) pending.add(path);
    return retryInMs;
  }

  /** Watches what this build read, and stops watching what it no longer reads; `changed`: what started the build. */
  private follow(result: BuildResult, changed: readonly string[]): void {
    this.outDir = result.outDir;
    this.skillFolders = new Set(result.agents.flatMap((agent) => agent.skills.map((skill) => skill.sourceDir)));
    const allRoots = Object.values(result.config.config.agents).flatMap((agent) => agent.skills.map((source) => resolveRoot(source.root, result.config.dir)));
    this.roots = [...new Set(allRoots)].filter(isFolder);
    this.configFiles = new Set(result.config.inputs);
    // The same folders and files read as last time, every watch still up, none failed, and no change at or above a
    // watched folder (which could have replaced it): the full pass below would leave every watch as it is. At
    // 10,000 skills that pass took ~20 ms of each rebuild, before it is reported.
    const paths = [result.outDir, ...result.config.inputs, ...allRoots, "", ...result.inputs.files, "", ...result.inputs.folders];
    // Only a folder at or below a changed path can have been replaced by another since it was watched: there is
    // one when a changed path is a watched folder or a folder above one.
    const { followed } = this;
    if (followed && this.failed === undefined && this.watched.size === followed.folders && sameList(paths, followed.paths) && !changed.some((path) => followed.watchedOrAbove.has(path))) return;
    // By each folder's ancestors, not each changed path in turn: a branch switch changes thousands of paths under thousands of folders.
    const changedPaths = new Set(changed);
    const mayBeReplaced = (folder: string) => isAtOrBelow(folder, changedPaths);
    const wanted = new Map<string, Interest>();
    // Tens of thousands of folders are walked, a few hold files read by name: those get a set of their own.
    for (const folder of result.inputs.folders) if (!this.isOwnOutput(folder)) wanted.set(folder, { walked: true, names: NO_NAMES });
    // A root's parent, for the root's name: a root that goes away and comes back (a branch switch) is seen.
    for (const file of [...result.config.inputs, ...result.inputs.files, ...allRoots]) {
      const folder = dirname(file);
      const interest = wanted.get(folder);
      if (!interest) wanted.set(folder, { walked: false, names: new Set([basename(file)]) });
      else if (interest.names === NO_NAMES) interest.names = new Set([basename(file)]);
      else (interest.names as Set<string>).add(basename(file)); // a set made just above, in this pass: added to, not copied
    }
    for (const [folder, entry] of this.watched) {
      // A folder replaced by another of the same name (moved away and back, checked out anew) is watched anew:
      // the old watch follows the old folder wherever it went.
      if (wanted.has(folder) && (!mayBeReplaced(folder) || identityOf(folder) === entry.identity)) continue;
      entry.watcher.close();
      this.watched.delete(folder);
    }
    this.failed = undefined;
    for (const [folder, interestIn] of wanted) {
      const entry = this.watched.get(folder);
      if (entry) Object.assign(entry, interestIn);
      else this.watchFolder(folder, interestIn);
    }
    // Only a pass that watched every folder it wanted vouches for the next: one gone meanwhile (deleted, then made
    // again before the next build lists it) is tried again by a full pass.
    this.followed = this.watched.size === wanted.size ? { paths, folders: wanted.size, watchedOrAbove: withFoldersAbove(this.watched.keys()) } : undefined;
  }

  /** Starts watching `folder`; a folder gone since the build listed it is left (its parent's watch saw that). */
  private watchFolder(folder: string, interest: Interest): void {
    try {
      const identity = identityOf(folder);
      if (identity === undefined) return;
      const watcher = watch(folder, { persistent: true }, (_event, name) => this.onChange(folder, name === null ? null : String(name)));
      // The folder went away (its parent's watch reports that too): stop watching; the rebuild decides.
      watcher.on("error", () => {
        watcher.close();
        this.watched.delete(folder);
        this.pending.add(folder);
        this.schedule();
      });
      this.watched.set(folder, { watcher, identity, ...interest });
    } catch (caught) {
      const code = (caught as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return;
      this.failed ??= code === "ENOSPC" ? "the system's limit on file watches is reached (on Linux, raise fs.inotify.max_user_watches)" : (caught as Error).message;
    }
  }
}

/** Whether `path` or a folder above it is in `paths`: as many lookups as `path` is deep. */
export function isAtOrBelow(path: string, paths: ReadonlySet<string>): boolean {
  for (let current = path; ; current = dirname(current)) {
    if (paths.has(current)) return true;
    if (dirname(current) === current) return false;
  }
}

/** `folders` and every folder above each: as many entries as the folders' distinct ancestors, however deep they are. */
function withFoldersAbove(folders: Iterable<string>): Set<string> {
  const found = new Set<string>();
  for (const folder of folders) {
    for (let current = folder; !found.has(current); current = dirname(current)) {
      found.add(current);
      if (dirname(current) === current) break;
    }
  }
  return found;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let index = 0; index < a.length; index++) if (a[index] !== b[index]) return false;
  return true;
}

/** A folder's device and inode (undefined: nothing there), to tell a folder from another put in its place. */
function identityOf(path: string): string | undefined {
  try {
    const stats = lstatSync(path);
    return `${stats.dev}:${stats.ino}`;
  } catch {
    return undefined;
  }
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
