import { createHash, randomBytes } from "node:crypto";
import { closeSync, constants, copyFileSync, fchmodSync, fstatSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, realpathSync, renameSync, rm, rmSync, unlinkSync, writeFileSync, writeSync, type Stats } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import { renderBundle, type Bundle, type EarlierFile, type StagedCopy } from "./bundle.js";
import type { PublishedFolder } from "./well-known.js";
import { bundleFileSignature, isObject, type BundleRecord, type FilePlaces } from "../compile/cache.js";
import { GENERATOR } from "./manifest.js";
import { resolveRoot, type LoadedConfig } from "../compile/config.js";
import { asFileSystemError } from "../compile/fs-error.js";
import { RealPaths } from "../compile/real-paths.js";
import { hashFile, hashOpenFile, isSameFile } from "../compile/resources.js";
import { once } from "../compile/once.js";
import { escapeInvisible } from "../compile/terminal.js";
import * as z from "zod";

/** The outDir is one skillbake must not replace, or another build is writing it; the CLI exits 2. */
export class OutputError extends Error {
  override name = "OutputError";
}

/** Another build holds the outDir's lock: trying again later may succeed (watch mode does). */
export class OutDirLockedError extends OutputError {
  override name = "OutDirLockedError";
}

/**
 * Writes the bundle into a sibling temporary folder, then swaps it in, so readers see the old
 * bundle or the new one, never a mix. `copies` are skill files `stage: true` puts into the bundle.
 *
 * - Refused before anything is created: an outDir that is or holds the filesystem root, the home folder, the
 *   config's folder or a skills root; an outDir that is a symbolic link. Refused before anything is deleted
 *   (checked under the lock): a non-empty folder without a skillbake manifest.
 * - One build at a time per outDir: a lock file beside it, `.<outDir>.lock`, holds the writer's process id.
 * - The swap is two renames back to back (outDir → `.<outDir>.old-…`, staging → outDir). A build killed
 *   between them leaves no outDir but the complete old bundle beside it; the next build puts it back first,
 *   and removes what killed builds left (see `recoverInterruptedBuild`).
 * - `earlier`, the record of the bundle the last build wrote here: each skill's entry or body that one of its files
 *   still holds, untouched, is copied from there (see `earlierFiles`). Returns where each new file holds each skill.
 * - The bundle replaced is removed before this returns, unless `putOff` takes its removal for later (watch mode,
 *   once the build is reported: a bundle of 10,000 skills, 170 MB of files, took 50–190 ms to remove).
 */
export async function writeBundle(
  outDir: string,
  bundle: Bundle,
  copies: readonly StagedCopy[],
  config: LoadedConfig,
  earlier?: BundleRecord,
  putOff?: (removal: () => Promise<void>) => void,
): Promise<Map<string, FilePlaces>> {
  try {
    assertSafeOutDir(outDir, config);
    mkdirSync(dirname(outDir), { recursive: true });
    const unlock = lockOutDir(outDir);
    try {
      await recoverInterruptedBuild(outDir);
      assertReplaceable(outDir);
      const staging = transientPath(outDir, "tmp");
      let places: Map<string, FilePlaces>;
      let retired: string | undefined;
      try {
        // The old bundle's files are closed before it is swapped out and removed (Windows removes no open file).
        const previous = earlierFiles(outDir, earlier);
        try {
          places = writeFiles(staging, bundle, previous.file);
        } finally {
          previous.close();
        }
        stageCopies(staging, copies);
        retired = swapIn(staging, outDir);
      } catch (error) {
        await removeLeftover(staging); // not swapped in: all this build wrote is there
        throw error;
      }
      if (retired && putOff) putOff(() => removeLeftover(retired));
      else if (retired) await removeLeftover(retired);
      return places;
    } finally {
      unlock();
    }
  } catch (error) {
    // Permissions, a read-only or full disk, a path that cannot be: one line naming the outDir, exit 2.
    throw asFileSystemError(error, `write ${outDir}`);
  }
}

/**
 * Removes a staging or retired folder if it can, in the thread pool (a retired bundle of 10,000 skills is 170 MB
 * of files). One that cannot be removed (a file in it of another user's, say) stays beside the outDir, where it
 * harms nothing: the bundle is already in place or untouched, and each later build tries again.
 */
function removeLeftover(path: string): Promise<void> {
  return new Promise((resolve) => rm(path, { recursive: true, force: true }, () => resolve()));
}

/**
 * Streams the bundle's files into `folder` (see `renderBundle`). Synchronous: the writes go to the page cache,
 * where a call costs less than a trip through the thread pool. A file the same as another is a hard link to it.
 */
function writeFiles(folder: string, bundle: Bundle, earlier: (path: string) => EarlierFile | undefined): Map<string, FilePlaces> {
  const open = new Set<number>();
  try {
    return renderBundle(
      bundle,
      (path) => {
        const target = join(folder, path);
        mkdirSync(dirname(target), { recursive: true });
        const fd = openSync(target, "wx");
        open.add(fd);
        return {
          write: (bytes) => writeFully(fd, bytes, null),
          reserve: (bytes) => writeFully(fd, bytes, null),
          patch: (offset, bytes) => writeFully(fd, bytes, offset),
          end: () => {
            open.delete(fd);
            closeSync(fd);
          },
        };
      },
      (path, sameAs) => {
        const target = join(folder, path);
        mkdirSync(dirname(target), { recursive: true });
        try {
          linkSync(join(folder, sameAs), target);
        } catch {
          copyFileSync(join(folder, sameAs), target); // a filesystem without hard links
        }
      },
      earlier,
    );
  } finally {
    for (const fd of open) closeSync(fd);
  }
}

/** How much of an earlier bundle file `earlierFiles` reads at a time: more than any body it copies (see `renderBundle`). */
const EARLIER_WINDOW_BYTES = 1 << 20;

/**
 * The files of the bundle in `outDir` that `record` says the last build wrote there and that are still untouched,
 * opened as `openBundleFile` opens them (a regular file reached through folders alone) and checked by `fstat`
 * against the signature recorded right after writing: a file edited, replaced or swapped since has another and is
 * not used. Each is opened when first asked for; `close` closes them all.
 */
function earlierFiles(outDir: string, record: BundleRecord | undefined): { file: (path: string) => EarlierFile | undefined; close: () => void } {
  const opened = new Map<string, number>();
  const file = (path: string): EarlierFile | undefined => {
    // The record comes from the cache file: checked for its shape, as everything read from there.
    const { places: byPath, paths } = record?.outDir === outDir ? record : {};
    const places = isObject(byPath) && Object.hasOwn(byPath, path) ? byPath[path] : undefined;
    const signature = isObject(paths) && Object.hasOwn(paths, path) ? paths[path] : undefined;
    if (!isObject(places) || !isObject(places.entries) || !isObject(places.bodies) || typeof signature !== "string") return undefined;
    const found = openBundleFile(outDir, path);
    if (!("fd" in found)) return undefined;
    const { fd } = found;
    opened.set(path, fd);
    if (bundleFileSignature(fstatSync(fd, { bigint: true })) !== signature) return undefined;
    // Bodies come in the same order build after build (by SKILL.md path), so the file is read a window at a time,
    // front to back, rather than a body at a time.
    const window = { bytes: Buffer.allocUnsafe(EARLIER_WINDOW_BYTES), start: 0, end: 0 };
    const readAt = (into: Uint8Array, position: number) => {
      let filled = 0;
      try {
        while (filled < into.byteLength) {
          const read = readSync(fd, into, filled, into.byteLength - filled, position + filled);
          if (read === 0) break;
          filled += read;
        }
      } catch {
        return 0; // written from the body instead
      }
      return filled;
    };
    return {
      places,
      read: (into, at, length, position) => {
        if (!Number.isSafeInteger(position) || !Number.isSafeInteger(length) || position < 0 || length < 0 || length > window.bytes.byteLength || at + length > into.byteLength) return false;
        if (position < window.start || position + length > window.end) {
          Object.assign(window, { start: position, end: position + readAt(window.bytes, position) });
          if (position + length > window.end) return false;
        }
        into.set(window.bytes.subarray(position - window.start, position - window.start + length), at);
        return true;
      },
      readAt,
    };
  };
  return {
    file,
    close: () => {
      for (const fd of opened.values()) closeSync(fd);
      opened.clear();
    },
  };
}

/** `position` null: at the file's offset, which advances. */
function writeFully(fd: number, bytes: Uint8Array, position: number | null): void {
  for (let written = 0; written < bytes.byteLength; ) {
    written += writeSync(fd, bytes, written, bytes.byteLength - written, position === null ? null : position + written);
  }
}

/** How `compareBundle` finds a file of the bundle on disk. `notFollowed` says what stands there instead of a regular file ("a symlink; not followed"). */
export type BundleFileState = "same" | "changed" | "missing" | { notFollowed: string };

/**
 * Compares the bundle with the one in `outDir` without holding either whole; reads only. Returns each file's
 * state by path. A file the same as another is compared on its own: on disk it is a file of its own. A link or
 * a special file in the outDir (a pull request controls a committed bundle) is reported, never read.
 */
export function compareBundle(outDir: string, bundle: Bundle): Map<string, BundleFileState> {
  const states = new Map<string, BundleFileState>();
  const open = new Set<number>();
  const partsOf = new Map(bundle.files.flatMap((file) => ("parts" in file ? [[file.path, file.parts] as const] : [])));
  const files = bundle.files.map((file) => ("sameAs" in file ? { path: file.path, parts: partsOf.get(file.sameAs)! } : file));
  try {
    renderBundle(
      { ...bundle, files },
      (path) => {
        const opened = openBundleFile(outDir, path);
        const fd = "fd" in opened ? opened.fd : undefined;
        states.set(path, "fd" in opened ? "same" : "missing" in opened ? "missing" : opened);
        if (fd !== undefined) open.add(fd);
        const differs = () => states.set(path, "changed");
        const same = () => states.get(path) === "same";
        let position = 0;
        let scratch = Buffer.alloc(0);
        /** Whether the disk holds `bytes` at `offset`. */
        const holds = (bytes: Uint8Array, offset: number) => {
          if (scratch.length < bytes.byteLength) scratch = Buffer.allocUnsafe(bytes.byteLength);
          let got = 0;
          for (let read; got < bytes.byteLength && (read = readSync(fd!, scratch, got, bytes.byteLength - got, offset + got)) > 0; ) got += read;
          return got === bytes.byteLength && Buffer.compare(scratch.subarray(0, got), bytes) === 0;
        };
        return {
          write: (bytes) => {
            if (same() && !holds(bytes, position)) differs();
            position += bytes.byteLength;
          },
          reserve: (bytes) => {
            position += bytes.byteLength; // compared when patched
          },
          patch: (offset, bytes) => {
            if (same() && !holds(bytes, offset)) differs();
          },
          end: () => {
            if (fd === undefined) return;
            if (same() && fstatSync(fd).size !== position) differs();
            open.delete(fd);
            closeSync(fd);
          },
        };
      },
      () => {},
    );
  } finally {
    for (const fd of open) closeSync(fd);
  }
  return states;
}

/**
 * The first link on the way from `root` down to `target`, when `target` lies inside `root`: what a pull request
 * could have committed in place of a folder above a bundle, to lead a read out of the working tree.
 */
export function linkBelow(root: string, target: string): string | undefined {
  const path = relative(root, target);
  if (path === "" || path.startsWith("..") || isAbsolute(path)) return undefined;
  let at = root;
  for (const segment of path.split(sep)) {
    at = join(at, segment);
    const stats = lstatSync(at, { throwIfNoEntry: false });
    if (!stats) return undefined;
    if (stats.isSymbolicLink()) return at;
  }
  return undefined;
}

/**
 * Opens `path` (relative, `/`-separated) in the outDir for reading, when it is a regular file reached through
 * folders alone: a link anywhere below the outDir is not followed (it could lead out of the project, to
 * `/proc/self/environ` say), and a FIFO or device is not read (non-blocking, so a FIFO cannot hang).
 */
export function openBundleFile(outDir: string, path: string): { fd: number } | { missing: true } | { notFollowed: string } {
  const segments = path.split("/");
  for (let depth = 1; depth < segments.length; depth++) {
    const folder = segments.slice(0, depth).join("/");
    const stats = lstatSync(join(outDir, folder), { throwIfNoEntry: false });
    if (!stats) return { missing: true };
    if (!stats.isDirectory()) return { notFollowed: `below ${folder}, ${describeKind(stats)}` };
  }
  let fd: number;
  try {
    fd = openSync(join(outDir, path), constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return { missing: true };
    if (code === "ELOOP") return { notFollowed: "a symlink; not followed" };
    return { notFollowed: `cannot be read (${code ?? String(error)})` };
  }
  const stats = fstatSync(fd);
  if (stats.isFile()) return { fd };
  closeSync(fd);
  return { notFollowed: describeKind(stats) };
}

function describeKind(stats: Stats): string {
  if (stats.isSymbolicLink()) return "a symlink; not followed";
  if (stats.isDirectory()) return "a folder, not a file";
  if (stats.isFIFO()) return "a FIFO; not read";
  if (stats.isSocket()) return "a socket; not read";
  if (stats.isCharacterDevice() || stats.isBlockDevice()) return "a device; not read";
  return "not a regular file; not read";
}

/** The sha256 of a file of the outDir (see `openBundleFile`), or what stands there instead. */
export function hashBundleFile(outDir: string, path: string): { sha256: string } | { missing: true } | { notFollowed: string } {
  const opened = openBundleFile(outDir, path);
  if (!("fd" in opened)) return opened;
  try {
    return { sha256: hashOpenFile(opened.fd).sha256 };
  } finally {
    closeSync(opened.fd);
  }
}

/**
 * Staging → outDir, the old outDir (if any) moved aside first and returned. Synchronous, so nothing else runs
 * between the two renames: outDir is missing only for that instant, and if the second rename fails the old
 * bundle goes straight back.
 * @internal Exported for its test: no input makes the second rename fail on its own.
 */
export function swapIn(staging: string, outDir: string): string | undefined {
  const retired = transientPath(outDir, "old");
  let moved = false;
  try {
    renameSync(outDir, retired);
    moved = true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EBUSY") {
      throw new OutputError(
        `${outDir} cannot be renamed: it is a mount point (or in use). A build swaps a new bundle in by renaming the outDir, so that readers never see half of one; set \`outDir\` to a folder inside it, such as ${join(outDir, "skills")}.`,
      );
    }
    if (code !== "ENOENT") throw error;
  }
  try {
    renameSync(staging, outDir);
  } catch (error) {
    if (moved) renameSync(retired, outDir);
    throw error;
  }
  return moved ? retired : undefined;
}

/** What a build keeps beside outDir while it runs: `.<outDir>.<kind>-<pid>-<random>`. */
type TransientKind = "tmp" | "old" | "lock" | "stale";
const TRANSIENT_NAME = /^(tmp|old|lock|stale)-(\d+)-[0-9a-f]+$/;

function transientPath(outDir: string, kind: TransientKind): string {
  return join(dirname(outDir), `.${basename(outDir)}.${kind}-${process.pid}-${randomBytes(4).toString("hex")}`);
}

/**
 * Undoes what killed builds left beside outDir; runs with the lock held, so no other build is between its
 * renames. An outDir that is missing while an `old` folder stands beside it is put back (a build died between
 * its two renames: the old bundle is complete, the new one may not be). Staging and retired folders are then
 * removed, and lock candidates of processes that are gone.
 */
export async function recoverInterruptedBuild(outDir: string): Promise<void> {
  const parent = dirname(outDir);
  const prefix = `.${basename(outDir)}.`;
  const leftovers: { path: string; kind: TransientKind; pid: number }[] = [];
  for (const name of readdirOrNone(parent).sort()) {
    const match = name.startsWith(prefix) ? TRANSIENT_NAME.exec(name.slice(prefix.length)) : null;
    if (match && Number(match[2]) !== process.pid) leftovers.push({ path: join(parent, name), kind: match[1] as TransientKind, pid: Number(match[2]) });
  }
  const retired = leftovers.find((leftover) => leftover.kind === "old");
  if (retired && !lstatOrNone(outDir)) {
    renameSync(retired.path, outDir);
    leftovers.splice(leftovers.indexOf(retired), 1);
  }
  const abandoned = leftovers.filter((leftover) => leftover.kind === "tmp" || leftover.kind === "old" || !isRunning(leftover.pid));
  await Promise.all(abandoned.map((leftover) => removeLeftover(leftover.path)));
}

/**
 * Takes `.<outDir>.lock`, or throws an OutputError naming the build that holds it. The lock is linked into
 * place from a file already holding our process id, its candidate, so it never exists empty; the candidate stays
 * while the lock is held, its second name. Whatever else is at the lock's name (see `lockHolder`) is taken over.
 */
function lockOutDir(outDir: string): () => void {
  const lock = join(dirname(outDir), `.${basename(outDir)}.lock`);
  const candidate = transientPath(outDir, "lock");
  writeFileSync(candidate, `${process.pid}\n`);
  let held = false;
  try {
    for (let attempt = 1; ; attempt++) {
      try {
        linkSync(candidate, lock);
        held = true;
        return () => {
          unlinkIfThere(lock);
          unlinkIfThere(candidate);
        };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
      const holder = lockHolder(outDir, lock);
      if (holder.running || attempt === 3) {
        throw new OutDirLockedError(
          `another skills build${holder.pid === undefined ? "" : ` (process ${holder.pid})`} is writing ${outDir}; wait for it to finish, then build again. If no build is running, delete ${lock}.`,
        );
      }
      if (holder.inode !== undefined) breakStaleLock(outDir, lock, holder.inode);
    }
  } finally {
    if (!held) unlinkIfThere(candidate);
  }
}

function unlinkIfThere(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // gone already, or not ours to remove: nothing is held through it
  }
}

/** Moves a stale lock away; if another build broke it and took the lock meanwhile, what was moved is put back. */
function breakStaleLock(outDir: string, lock: string, staleInode: number): void {
  const moved = transientPath(outDir, "stale");
  try {
    renameSync(lock, moved);
  } catch {
    return; // already gone
  }
  try {
    if (lstatSync(moved, { throwIfNoEntry: false })?.ino !== staleInode) linkSync(moved, lock);
  } catch {
    // another build took the lock meanwhile: it holds it
  }
  try {
    rmSync(moved, { recursive: true, force: true }); // what stood at the lock's name may be a folder
  } catch {
    // left beside the outDir, where it harms nothing; a later build removes it
  }
}

/** Bytes a lock holds: a process id and a line break. */
const MAX_LOCK_BYTES = 16;

/**
 * Who holds the lock, and whether that build is running. A build's lock is a regular file of a few bytes holding its
 * process id, with a second name beside it, that build's candidate `.<outDir>.lock-<pid>-…` (git makes no hard links,
 * so a lock committed to the repository has none); its process is running and started before the lock was taken
 * (else the id is another process's now). Anything else at the lock's name (a link, a FIFO, a committed file holding
 * `1`) holds nothing: it is never followed or read past `MAX_LOCK_BYTES`, and is taken over as a stale lock is.
 */
function lockHolder(outDir: string, lock: string): { pid?: number; running: boolean; inode?: number } {
  const entry = lstatOrNone(lock);
  if (!entry?.isFile() || entry.size > MAX_LOCK_BYTES || entry.nlink !== 2) return { running: false, inode: entry?.ino };
  let text: string;
  try {
    const fd = openSync(lock, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      if (fstatSync(fd).ino !== entry.ino) return { running: false, inode: entry.ino };
      // One byte past the most a lock holds, whatever it has grown to since its size was taken.
      const bytes = Buffer.alloc(MAX_LOCK_BYTES + 1);
      text = bytes.toString("utf8", 0, readSync(fd, bytes, 0, bytes.length, 0));
    } finally {
      closeSync(fd);
    }
  } catch {
    return { running: false, inode: entry.ino };
  }
  const match = /^([1-9]\d{0,9})\n$/.exec(text);
  if (!match) return { running: false, inode: entry.ino };
  const pid = Number(match[1]);
  const prefix = `.${basename(outDir)}.lock-${pid}-`;
  const names = readdirOrNone(dirname(outDir)).filter((name) => name.startsWith(prefix));
  const candidates = names.map((name) => lstatOrNone(join(dirname(outDir), name)));
  const paired = candidates.some((candidate) => candidate?.isFile() && candidate.ino === entry.ino && candidate.dev === entry.dev);
  if (!paired || !isRunning(pid)) return { pid, running: false, inode: entry.ino };
  const started = processStartMs(pid);
  return { pid, running: started === undefined || started <= entry.mtimeMs, inode: entry.ino };
}

/**
 * When a process started, in milliseconds since the epoch, from Linux's /proc (its start in clock ticks after boot,
 * at the 100 ticks a second Linux gives user space, and the boot time, to the second below); undefined elsewhere.
 */
function processStartMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // After the command name in parentheses (which may hold anything), field 22 is the 20th.
    const ticks = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
    const boot = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))?.[1]);
    return Number.isFinite(ticks) && Number.isFinite(boot) ? boot * 1000 + ticks * 10 : undefined;
  } catch {
    return undefined;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM"; // alive, but another user's
  }
}

/** The names in a folder; none when it cannot be listed. */
function readdirOrNone(path: string): string[] {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

/** `lstat`, or undefined when there is nothing to stat or it cannot be. */
function lstatOrNone(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/**
 * Replacing outDir deletes what is in it: refused when it is, or holds, a folder the user keeps their work in,
 * before anything is created or deleted. Compared by real path, so a link or `..` does not get around it.
 */
function assertSafeOutDir(outDir: string, config: LoadedConfig): void {
  const fix = "Set `outDir` (or --out) to a folder of its own, such as dist/skills.";
  if (lstatOrNone(outDir)?.isSymbolicLink()) {
    throw new OutputError(`${outDir} is a symbolic link; a build replaces the outDir folder, which would replace the link. Set \`outDir\` to the folder it points to.`);
  }
  const target = realPathOf(outDir);
  if (dirname(target) === target) throw new OutputError(`${outDir} is the filesystem root; skillbake will not replace it. ${fix}`);
  const roots = Object.values(config.config.agents).flatMap((agent) => agent.skills.map((source) => resolveRoot(source.root, config.dir)));
  const guarded: [string, string][] = [
    [homedir(), "your home folder"],
    [config.dir, `the config file's folder`],
    ...roots.map((root): [string, string] => [root, `the skills root ${root}`]),
  ];
  for (const [folder, what] of guarded) {
    const real = realPathOf(folder);
    if (real === target) throw new OutputError(`${outDir} is ${what}; a build replaces its outDir and everything in it. ${fix}`);
    if (real.startsWith(target.endsWith(sep) ? target : target + sep)) throw new OutputError(`${outDir} holds ${what}; a build replaces its outDir and everything in it. ${fix}`);
  }
}

/** The real path of `path`, or of its deepest existing folder with the rest appended. */
function realPathOf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    const parent = dirname(path);
    return parent === path ? path : join(realPathOf(parent), basename(path));
  }
}

/**
 * Copies staged skill files (modes kept, so scripts stay executable) or hard-links them (`method: "link"`), each
 * checked against the manifest's hash. A link goes to the file's real path, which must still lie inside its root
 * (a link followed at discovery, or one put in the file's place since, could lead out); where the filesystem
 * cannot link (another device), the file is copied. Either way the file staged must be the one discovery
 * verified inside the root (a hard link is that file); a source swapped since is not read.
 */
function stageCopies(staging: string, copies: readonly StagedCopy[]): void {
  // Each folder looked up once for all the files (a skill's files may lie hundreds of folders deep); what proves a
  // linked file the one discovery found is its identity, checked once it is linked.
  const realPaths = new RealPaths();
  for (const copy of copies) {
    const target = join(staging, copy.path);
    mkdirSync(dirname(target), { recursive: true });
    const changed = () => new OutputError(`${copy.from} changed while the bundle was built; run \`skills build\` again`);
    if (copy.method === "link") {
      const root = realPaths.of(copy.root);
      const real = realPaths.of(copy.from);
      if (!real.startsWith(root + sep)) throw new OutputError(`${copy.from} now leads outside its root ${copy.root}; it is not staged. Run \`skills build\` again`);
      if (hardLinked(real, target)) {
        // link(2) does not follow a symbolic link: a file swapped for one since realpath would be linked as the link.
        const linked = lstatSync(target, { bigint: true });
        if (!linked.isFile() || !isSameFile(linked, copy.identity) || hashFile(target).sha256 !== copy.sha256) throw changed();
        continue;
      }
    }
    const source = openSync(copy.from, constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const stats = fstatSync(source, { bigint: true });
      if (!stats.isFile() || !isSameFile(stats, copy.identity)) throw changed();
      const output = openSync(target, "wx");
      try {
        fchmodSync(output, Number(stats.mode & 0o7777n));
        if (copyOpenFile(source, output) !== copy.sha256) throw changed();
      } finally {
        closeSync(output);
      }
    } finally {
      closeSync(source);
    }
  }
}

/** Whether `target` could be made a hard link to `file` (not across devices, nor on every filesystem). */
function hardLinked(file: string, target: string): boolean {
  try {
    linkSync(file, target);
    return true;
  } catch {
    return false;
  }
}

/** Copies an open file into another from their offsets; returns the sha256 of what was copied. */
function copyOpenFile(source: number, target: number): string {
  const hash = createHash("sha256");
  const chunk = Buffer.allocUnsafe(256 * 1024);
  for (let bytesRead; (bytesRead = readSync(source, chunk, 0, chunk.length, null)) > 0; ) {
    hash.update(chunk.subarray(0, bytesRead));
    writeFully(target, chunk.subarray(0, bytesRead), null);
  }
  return hash.digest("hex");
}

/**
 * An absent or empty folder, or one skillbake wrote whose every file its manifest lists. Replacing the outDir
 * deletes all of it, so a file of the user's in it (beside a manifest.json copied from a bundle, say) refuses
 * the build instead of being deleted.
 */
function assertReplaceable(outDir: string): void {
  assertOnlyListed(outDir, (files) => manifestListing(outDir, files), {
    unowned: `${outDir} is not empty and was not written by skillbake; refusing to replace it. Choose another \`outDir\`, or empty the folder.`,
    unlisted: (shown) => `${outDir} holds files its manifest does not list (${shown}); a build replaces the whole folder, so it will not delete them. Move them out of ${outDir}, or choose another \`outDir\`.`,
  });
}

/**
 * Refuses to replace `dir` unless it is absent or empty, or `listing` (what skillbake wrote there says it wrote;
 * undefined when skillbake wrote nothing there) names its every file: replacing it deletes all of it.
 */
function assertOnlyListed(dir: string, listing: (files: readonly string[]) => Set<string> | undefined, messages: { unowned: string; unlisted: (shown: string) => string }): void {
  let files: string[];
  try {
    files = filesUnder(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return;
    if (code === "ENOTDIR") throw new OutputError(`${dir} is a file, not a folder; skillbake will not replace it`);
    throw error;
  }
  if (files.length === 0) return;
  const listed = listing(files);
  if (!listed) throw new OutputError(messages.unowned);
  const unlisted = files.filter((path) => !listed.has(path));
  if (unlisted.length === 0) return;
  const shown = unlisted.slice(0, 3).map((path) => escapeInvisible(path)).join(", ") + (unlisted.length > 3 ? ` and ${unlisted.length - 3} more` : "");
  throw new OutputError(messages.unlisted(shown));
}

/**
 * Every entry under `dir` that is not a folder (files, links, special files), relative and `/`-separated, gathered
 * in one array: a committed folder may hold more files than a spread takes arguments.
 */
export function filesUnder(dir: string): string[] {
  const files: string[] = [];
  const walk = (prefix: string): void => {
    for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
      const path = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path);
      else files.push(path);
    }
  };
  walk("");
  return files;
}

/** What `manifestListing` reads of a manifest: only what names the bundle's files. Built when an outDir holds files. */
const manifestHead = once(() => z.looseObject({ generator: z.literal(GENERATOR), hashes: z.looseObject({ outputs: z.record(z.string(), z.string()) }) }));
const manifestStaged = once(() => {
  const stagedSkill = z.looseObject({ file: z.string(), staged: z.string().optional() });
  return z.looseObject({
    agents: z.record(z.string(), z.looseObject({ skills: z.array(stagedSkill) })),
    skills: z.array(stagedSkill.extend({ files: z.array(z.looseObject({ path: z.string() })) })),
  });
});

/**
 * The files outDir's manifest.json says skillbake wrote: itself, `hashes.outputs` and, with `stage`, each staged
 * copy's files (in skills/<name>, or per agent in agents/<id>/skills/<name>). Undefined when there is no skillbake manifest (none; a link, a FIFO or another special
 * file, which is not opened through; not JSON; another generator's).
 *
 * A manifest is written with sorted keys, two-space indented, so its top-level `"generator"` and `"schemaVersion"`
 * lines are unique (a line break inside a string is escaped), and what lies between them holds `generator` and
 * `hashes` but not `agents` (a row per skill and agent) or `skills`, which holds the bodies: only up to the second
 * is read, and only from the first parsed (parsing a 10,000-skill manifest whole took ~0.4 s and 300 MB; its
 * agents, ~12 ms a build). The whole file is parsed only when files remain that the head does not list.
 */
function manifestListing(outDir: string, files: readonly string[]): Set<string> | undefined {
  const text = readManifest(outDir, HEAD_END);
  const generatorAt = text?.indexOf(GENERATOR_LINE) ?? -1;
  const head = manifestHead().safeParse(generatorAt < 0 ? undefined : parseJson(`{${text!.slice(generatorAt)}`));
  if (!head.success) return undefined;
  const listed = new Set(["manifest.json", ...Object.keys(head.data.hashes.outputs)]);
  if (files.every((path) => listed.has(path))) return listed;
  const whole = manifestStaged().safeParse(parseJson(readManifest(outDir)));
  if (!whole.success) return listed;
  const filesOf = new Map(whole.data.skills.map((skill) => [skill.file, skill.files]));
  const staged = [...whole.data.skills, ...Object.values(whole.data.agents).flatMap((agent) => agent.skills)];
  for (const { file, staged: folder } of staged) {
    if (folder !== undefined) for (const { path } of filesOf.get(file) ?? []) listed.add(`${folder}/${path}`);
  }
  return listed;
}

const HEAD_END = Buffer.from(`\n  "schemaVersion": `);
const GENERATOR_LINE = `\n  "generator": `;

/**
 * outDir's manifest.json as text, up to the line `until` begins (the head, closed to make it JSON), or whole;
 * undefined when it cannot be read or is not a regular file. Opened without following a link and non-blocking,
 * so neither a link out of the outDir nor a FIFO in its place is read.
 */
function readManifest(outDir: string, until?: Buffer): string | undefined {
  let fd: number;
  try {
    fd = openSync(join(outDir, "manifest.json"), constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const chunks: Buffer[] = [];
    let length = 0;
    /** The end of what was read before, so a marker split between two chunks is found. */
    let tail = Buffer.alloc(0);
    for (;;) {
      const chunk = Buffer.alloc(1 << 16);
      const bytesRead = readSync(fd, chunk, 0, chunk.length, null);
      if (bytesRead === 0) return until ? undefined : Buffer.concat(chunks, length).toString("utf8");
      const fresh = chunk.subarray(0, bytesRead);
      const window = Buffer.concat([tail, fresh]);
      const at = until ? window.indexOf(until) : -1;
      chunks.push(fresh);
      length += bytesRead;
      if (at >= 0) return `${Buffer.concat(chunks, length).subarray(0, length - window.length + at).toString("utf8").replace(/,$/, "")}\n}`;
      if (until) tail = window.subarray(Math.max(0, window.length - until.length + 1));
    }
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

function parseJson(text: string | undefined): unknown {
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/**
 * Swaps each published folder (`publishedFolders`) into place whole, as `writeBundle` swaps the bundle: written
 * beside it, then renamed, so a site never serves half an index, and a killed build leaves the old folder or the new
 * one (the next build puts an interrupted swap right). Refused before anything is written: a folder that is a
 * symbolic link, is inside the outDir (which a build replaces) or holds it, or holds a skills root; under its lock,
 * one with files that no index of skillbake's there lists, which are not deleted: the folder sits in one of the
 * user's (`public/`).
 */
export async function writePublished(folders: readonly PublishedFolder[], config: LoadedConfig, outDir: string): Promise<void> {
  for (const folder of folders) {
    try {
      assertSafePublished(folder.dir, outDir, config);
      mkdirSync(dirname(folder.dir), { recursive: true });
      const unlock = lockOutDir(folder.dir);
      try {
        await recoverInterruptedBuild(folder.dir);
        assertPublishedReplaceable(folder.dir);
        const staging = transientPath(folder.dir, "tmp");
        let retired: string | undefined;
        try {
          for (const file of folder.files) {
            const target = join(staging, file.path);
            mkdirSync(dirname(target), { recursive: true });
            writeFileSync(target, file.bytes(), { flag: "wx" });
          }
          retired = swapIn(staging, folder.dir);
        } catch (error) {
          await removeLeftover(staging); // not swapped in: all this build wrote is there
          throw error;
        }
        if (retired) await removeLeftover(retired);
      } finally {
        unlock();
      }
    } catch (error) {
      throw asFileSystemError(error, `write ${folder.dir}`);
    }
  }
}

/** A published folder must be a folder of its own, compared by real path: not a link, not in or around the outDir or a skills root. */
function assertSafePublished(dir: string, outDir: string, config: LoadedConfig): void {
  const fix = "Set `publish.wellKnown` to the folder your site serves, such as public, outside the outDir.";
  if (lstatOrNone(dir)?.isSymbolicLink()) throw new OutputError(`${dir} is a symbolic link; a build replaces the folder, which would replace the link. ${fix}`);
  const target = realPathOf(dir);
  const inside = (folder: string, container: string) => folder === container || folder.startsWith(container.endsWith(sep) ? container : container + sep);
  const out = realPathOf(outDir);
  if (inside(target, out) || inside(out, target)) throw new OutputError(`${dir} is ${inside(target, out) ? "inside" : "around"} the outDir ${outDir}, which a build replaces whole. ${fix}`);
  const roots = Object.values(config.config.agents).flatMap((agent) => agent.skills.map((source) => resolveRoot(source.root, config.dir)));
  for (const root of roots) if (inside(realPathOf(root), target)) throw new OutputError(`${dir} holds the skills root ${root}; a build replaces the folder and everything in it. ${fix}`);
}

/**
 * An absent or empty folder, or one whose every file the discovery index skillbake wrote there lists: replacing the
 * folder deletes all of it, so a file of anyone else's in it refuses the build instead of being deleted.
 */
function assertPublishedReplaceable(dir: string): void {
  assertOnlyListed(dir, () => publishedListing(dir), {
    unowned: `${dir} is not empty and holds no discovery index written by skillbake; refusing to replace it. Move its files, or publish into another folder.`,
    unlisted: (shown) => `${dir} holds files its index does not list (${shown}); a build replaces the whole folder, so it will not delete them. Move them out of ${dir}.`,
  });
}

const publishedIndex = once(() => z.looseObject({ generator: z.literal(GENERATOR), skills: z.array(z.looseObject({ url: z.string() })) }));

/**
 * Bytes an index.json may hold and be read as one skillbake wrote: over a hundred thousand skills' entries, and under
 * the longest text Node makes of a file (a committed index of gigabytes would stop the build with an internal error).
 */
const PUBLISHED_INDEX_MAX_BYTES = 256 * 1024 * 1024;

/** The files the index.json skillbake wrote in `dir` names (relative URLs only), and itself; undefined for no such index. */
function publishedListing(dir: string): Set<string> | undefined {
  const opened = openBundleFile(dir, "index.json");
  if (!("fd" in opened)) return undefined;
  let text: string;
  try {
    if (fstatSync(opened.fd).size > PUBLISHED_INDEX_MAX_BYTES) return undefined;
    text = readFileSync(opened.fd, "utf8");
  } finally {
    closeSync(opened.fd);
  }
  const index = publishedIndex().safeParse(parseJson(text));
  return index.success ? new Set(["index.json", ...index.data.skills.map((skill) => skill.url)]) : undefined;
}
