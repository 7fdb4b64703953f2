import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import { isAbsolute } from "node:path";

/** A path resolved: its real path, the links followed to get there (counted as realpath(3) counts them), and whether it is a folder. */
interface Resolved {
  real: string;
  links: number;
  folder: boolean;
}

/** What a path whose folder is real is, by its lstat: a link (and its target), a folder, or something else. */
type Entry = { link: string } | { folder: boolean } | NodeJS.ErrnoException;

/** realpath(3)'s limit on the links one path may lead through (glibc's and Linux's `MAXSYMLINKS`). */
const MAX_LINKS = 40;

/** From this many bytes on, realpath(3) answers ENAMETOOLONG at once; such a path is left to it. */
const PATH_MAX = 4096;

const ROOT: Resolved = { real: "/", links: 0, folder: true };

/**
 * Real paths as realpath(3) gives them, where each folder is looked up once. realpath looks up every folder above
 * the path it is given, and the kernel walks every folder above each of those: N links or nested skills at the
 * bottom of a tree D folders deep (a pull request's to make) cost N × D², so 5,000 links 250 folders down took 21 s
 * to build. Here every path asked for, and every path on its way, is kept with its real path and the links it led
 * through, so a path costs one lookup beyond its folder's. What a path resolves to depends on the filesystem alone,
 * never on which paths were asked for before: the links are counted from the filesystem's root for each path, as
 * realpath counts them.
 *
 * Linux only, where realpath(3) is this walk (glibc's resolves each name in turn, with `readlink`); elsewhere (macOS
 * gives each name's case as stored, Windows has drives and junctions) each path goes to `realpathSync.native`.
 * An instance keeps what it found, and sees no change made after: one serves one walk or check.
 */
export class RealPaths {
  private readonly resolved = new Map<string, Resolved | NodeJS.ErrnoException>();
  private readonly entries = new Map<string, Entry>();

  /** The real path of `path` (absolute), as `realpathSync.native` gives it; throws as it does (ENOENT, ENOTDIR, ELOOP…). */
  of(path: string): string {
    if (process.platform !== "linux" || !isAbsolute(path) || Buffer.byteLength(path) >= PATH_MAX) return realpathSync.native(path);
    return this.resolve(path).real;
  }

  /** `path` from the longest part of it resolved before, each part after it kept on the way. */
  private resolve(path: string): Resolved {
    let end = path.length;
    let at: Resolved | undefined;
    for (; end > 0; end = path.lastIndexOf("/", end - 1)) {
      const known = this.resolved.get(path.slice(0, end));
      if (known === undefined) continue;
      if (known instanceof Error) throw known;
      at = known;
      break;
    }
    at ??= ROOT;
    while (end < path.length) {
      const next = path.indexOf("/", end + 1);
      const stop = next === -1 ? path.length : next;
      const prefix = path.slice(0, stop);
      try {
        at = this.step(at, path.slice(end + 1, stop));
      } catch (error) {
        this.resolved.set(prefix, error as NodeJS.ErrnoException);
        throw error;
      }
      this.resolved.set(prefix, at);
      end = stop;
    }
    return at;
  }

  /** One name (`name`, may be empty, `.` or `..`) taken from the resolved folder `at`, through links as realpath takes it. */
  private step(at: Resolved, name: string): Resolved {
    if (!at.folder) throw failure("ENOTDIR", at.real);
    if (name === "" || name === ".") return at;
    if (name === "..") return { real: at.real.slice(0, Math.max(1, at.real.lastIndexOf("/"))), links: at.links, folder: true };
    const here = at.real === "/" ? `/${name}` : `${at.real}/${name}`;
    const entry = this.entryAt(here);
    if (entry instanceof Error) throw entry;
    if (!("link" in entry)) return { real: here, links: at.links, folder: entry.folder };
    const links = at.links + 1;
    if (links > MAX_LINKS) throw failure("ELOOP", here);
    let inTarget: Resolved = entry.link.startsWith("/") ? { ...ROOT, links } : { ...at, links };
    for (const part of entry.link.split("/")) inTarget = this.step(inTarget, part);
    return inTarget;
  }

  /** What is at `here` (its folder a real path), looked up once. */
  private entryAt(here: string): Entry {
    let entry = this.entries.get(here);
    if (entry === undefined) {
      try {
        const stats = lstatSync(here);
        entry = stats.isSymbolicLink() ? { link: readlinkSync(here) } : { folder: stats.isDirectory() };
      } catch (error) {
        entry = error as NodeJS.ErrnoException;
      }
      this.entries.set(here, entry);
    }
    return entry;
  }
}

function failure(code: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${path}`), { code, path });
}
