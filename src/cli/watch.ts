import { lstatSync, statSync, watch, type FSWatcher } from "node:fs";
import { basename, dirname, join, sep } from "node:path";
import { setFlagsFromString } from "node:v8";
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
  names: Set<string>;
}

/** Changes closer together than this are one change: an editor's save, a `git checkout`, a copied folder. */
const QUIET_MS = 100;
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
  // keeping a 10,000-skill catalogue's records (~100 MB), each rebuild making ~200 MB of garbage, sat near 700 MB.
  // Collecting at one and a half times keeps it near its first build's size, for a few percent more time per rebuild.
  setFlagsFromString("--heap-growing-percent=50");
  /** Watched folder → its watcher and the folder's identity, whether discovery lists it, and the names in it that matter besides. */
  const watched = new Map<string, { watcher: FSWatcher; identity: string } & Interest>();
  let outDir: string | undefined;
  /** Folders of the skills in the bundle: every file in them (and below) is listed in the manifest. */
  let skillFolders = new Set<string>();
  /** The roots (absolute) that were folders at the last build, and the config's own files. */
  let roots: string[] = [];
  let configFiles = new Set<string>();
  let failed: string | undefined;
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let building: Promise<void> | undefined;
  /**
   * The config, the build cache and the last discovery, kept between builds: a rebuild reads and hashes only what
   * changed, and walks the roots again only when a change can alter what discovery finds.
   */
  const session = new BuildSession({ watched: true });

  const isOwnOutput = (path: string) =>
    outDir !== undefined && (path === outDir || path.startsWith(outDir + sep) || (dirname(path) === dirname(outDir) && basename(path).startsWith(`.${basename(outDir)}.`)));

  const isInBundledSkill = (folder: string) => {
    for (let current = folder; ; current = dirname(current)) {
      if (skillFolders.has(current)) return true;
      if (dirname(current) === current) return false;
    }
  };

  /**
   * Whether a change to `name` in a folder discovery lists can change the build: SKILL.md, .gitignore, a folder
   * or link coming or going (of dot entries, a folder: discovery looks in them for skills to name); any file of a
   * bundled skill (the manifest lists and hashes them). Other files (a log beside the skills, say) and what
   * discovery skips (.git, node_modules, dot files and links) cannot.
   */
  const mattersToDiscovery = (folder: string, name: string) => {
    if (name === "SKILL.md" || name === ".gitignore") return true;
    if (NEVER_WALKED.has(name)) return false;
    const dotEntry = name.startsWith(".");
    if (!dotEntry && isInBundledSkill(folder)) return true;
    try {
      const stats = lstatSync(join(folder, name));
      return dotEntry ? stats.isDirectory() : !stats.isFile();
    } catch {
      return true; // gone: it may have been a folder
    }
  };

  const onChange = (folder: string, name: string | null) => {
    const entry = watched.get(folder);
    if (!entry) return;
    if (name !== null && !entry.names.has(name) && !(entry.walked && mattersToDiscovery(folder, name))) return;
    // A watched folder moved or deleted is reported by its own name, as if it held an entry of that name.
    const itself = name === null || (name === basename(folder) && identityOf(join(folder, name)) === undefined);
    const path = itself ? folder : join(folder, name);
    if (isOwnOutput(path)) return;
    pending.add(path);
    schedule();
  };

  const schedule = (delay = QUIET_MS) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (building) return; // the running build schedules again when it ends
      building = runBuild([...pending]).then((retryInMs) => {
        building = undefined;
        if (!signal.aborted && (retryInMs !== undefined || pending.size > 0)) schedule(retryInMs);
      });
    }, delay);
  };

  /** Runs a build and reports it; returns when to try again, for a build another build's lock refused. */
  const runBuild = async (changed: string[]): Promise<number | undefined> => {
    pending.clear();
    const watching = () => ({ folders: watched.size, ...(failed ? { failed } : {}) });
    const missingRoots = changed.some((path) => configFiles.has(path)) ? [] : roots.filter((root) => !isFolder(root));
    if (missingRoots.length > 0) {
      await onBuild({ changed, missingRoots, ms: 0, watching: watching() });
      return undefined;
    }
    const start = performance.now();
    let result: BuildResult | undefined;
    let error: unknown;
    session.noteChanges(changed);
    try {
      result = await buildInSession(options, session);
    } catch (caught) {
      error = caught;
    }
    const ms = performance.now() - start;
    if (result && !signal.aborted) follow(result, changed);
    const retryInMs = error instanceof OutDirLockedError && changed.length > 0 ? LOCK_RETRY_MS : undefined;
    if (retryInMs !== undefined) for (const path of changed) pending.add(path);
    await onBuild({ changed, ...(result ? { result } : { error }), ...(retryInMs !== undefined ? { retryInMs } : {}), ms, watching: watching() });
    // A change no event told of (made before its folder was watched, or dropped by an overflowing queue) is built next.
    if (result && !signal.aborted) for (const path of session.missedChanges()) pending.add(path);
    return retryInMs;
  };

  /** Watches what this build read, and stops watching what it no longer reads; `changed`: what started the build. */
  const follow = (result: BuildResult, changed: readonly string[]) => {
    outDir = result.outDir;
    skillFolders = new Set(result.agents.flatMap((agent) => agent.skills.map((skill) => skill.sourceDir)));
    const allRoots = Object.values(result.config.config.agents).flatMap((agent) => agent.skills.map((source) => resolveRoot(source.root, result.config.dir)));
    roots = [...new Set(allRoots)].filter(isFolder);
    configFiles = new Set(result.config.inputs);
    const wanted = new Map<string, Interest>();
    const interest = (folder: string) => wanted.get(folder) ?? wanted.set(folder, { walked: false, names: new Set() }).get(folder)!;
    for (const folder of result.inputs.folders) if (!isOwnOutput(folder)) interest(folder).walked = true;
    // A root's parent, for the root's name: a root that goes away and comes back (a branch switch) is seen.
    for (const file of [...result.config.inputs, ...result.inputs.files, ...allRoots]) interest(dirname(file)).names.add(basename(file));
    // Only a folder at or below a changed path can have been replaced by another since it was watched.
    const mayBeReplaced = (folder: string) => changed.some((path) => folder === path || folder.startsWith(path + sep));
    for (const [folder, entry] of watched) {
      // A folder replaced by another of the same name (moved away and back, checked out anew) is watched anew:
      // the old watch follows the old folder wherever it went.
      if (wanted.has(folder) && (!mayBeReplaced(folder) || identityOf(folder) === entry.identity)) continue;
      entry.watcher.close();
      watched.delete(folder);
    }
    failed = undefined;
    for (const [folder, { walked, names }] of wanted) {
      const entry = watched.get(folder);
      if (entry) {
        Object.assign(entry, { walked, names });
        continue;
      }
      try {
        const identity = identityOf(folder);
        if (identity === undefined) continue; // gone since the build listed it; its parent's watch saw that
        const watcher = watch(folder, { persistent: true }, (_event, name) => onChange(folder, name === null ? null : String(name)));
        // The folder went away (its parent's watch reports that too): stop watching; the rebuild decides.
        watcher.on("error", () => {
          watcher.close();
          watched.delete(folder);
          pending.add(folder);
          schedule();
        });
        watched.set(folder, { watcher, identity, walked, names });
      } catch (caught) {
        const code = (caught as NodeJS.ErrnoException).code;
        if (code === "ENOENT" || code === "ENOTDIR") continue; // gone since the build listed it; its parent's watch saw that
        failed ??= code === "ENOSPC" ? "the system's limit on file watches is reached (on Linux, raise fs.inotify.max_user_watches)" : (caught as Error).message;
      }
    }
  };

  await runBuild([]);
  if (watched.size === 0) return; // nothing to watch: the first build could not even load the config
  await new Promise<void>((resolve) => {
    const stop = () => {
      clearTimeout(timer);
      for (const { watcher } of watched.values()) watcher.close();
      watched.clear();
      void (building ?? Promise.resolve()).finally(() => {
        session.save();
        resolve();
      });
    };
    if (signal.aborted) stop();
    else signal.addEventListener("abort", stop, { once: true });
  });
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
