import { lstatSync, readlinkSync, realpathSync } from "node:fs";
import { isAbsolute } from "node:path";

/** A real folder or file found on the way to a path: its real path, and for a folder each name looked up in it. */
interface RealNode {
  real: string;
  /** The folder it is in; none for the filesystem's root. */
  parent: RealNode | undefined;
  folder: boolean;
  names?: Map<string, RealNode | LinkNode | NodeJS.ErrnoException>;
}

/** A link found on the way: its target, and once resolved, where that leads and the links followed to get there. */
interface LinkNode {
  target: string;
  resolved?: Reached | NodeJS.ErrnoException | "resolving";
}

interface Reached {
  node: RealNode;
  links: number;
}

/** realpath(3)'s limit on the links one path may lead through (glibc's and Linux's `MAXSYMLINKS`). */
const MAX_LINKS = 40;

/** From this many bytes on, realpath(3) answers ENAMETOOLONG at once; such a path is left to it. */
const PATH_MAX = 4096;

/**
 * Real paths as realpath(3) gives them, where each name is looked up once and each link resolved once. realpath
 * looks up every folder above the path it is given, and the kernel walks every folder above each of those: N links
 * or nested skills at the bottom of a tree D folders deep (a pull request's to make) cost N × D², so 5,000 links 250
 * folders down took 21 s to build; and a link's target is walked a name at a time, so 5,000 links whose targets
 * were 4 KB of `a/../` took 17 s. Here what each name in a folder is (a folder, a file, a link and its target) is
 * kept, as is where each link leads: a path costs a step a name, a link followed once a step. Links are counted as
 * realpath counts them, each path's from the filesystem's root, so what a path resolves to depends on the
 * filesystem alone, never on which paths were asked for before.
 *
 * Linux only, where realpath(3) is this walk (glibc's resolves each name in turn, with `readlink`); elsewhere (macOS
 * gives each name's case as stored, Windows has drives and junctions) each path goes to `realpathSync.native`.
 * An instance keeps what it found, and sees no change made after: one serves one walk or check.
 */
export class RealPaths {
  private readonly root: RealNode = { real: "/", parent: undefined, folder: true };

  /** The real path of `path` (absolute), as `realpathSync.native` gives it; throws as it does (ENOENT, ENOTDIR, ELOOP…). */
  of(path: string): string {
    if (process.platform !== "linux" || !isAbsolute(path) || Buffer.byteLength(path) >= PATH_MAX) return realpathSync.native(path);
    return this.walk(this.root, path, 0).node.real;
  }

  /** `rest` (`/`-separated names, `.` and `..`) taken a name at a time from the real folder `from`, `links` followed so far. */
  private walk(from: RealNode, rest: string, links: number): Reached {
    let at = from;
    for (let start = 0; start <= rest.length; ) {
      const slash = rest.indexOf("/", start);
      const end = slash === -1 ? rest.length : slash;
      const name = rest.slice(start, end);
      start = end + 1;
      if (!at.folder) throw failure("ENOTDIR", at.real); // a name, or a trailing slash, after a file
      if (name === "" || name === ".") continue;
      if (name === "..") {
        at = at.parent ?? at;
        continue;
      }
      const named = this.lookUp(at, name);
      if (named instanceof Error) throw named;
      if ("real" in named) {
        at = named;
        continue;
      }
      const reached = this.follow(at, named);
      links += reached.links;
      if (links > MAX_LINKS) throw failure("ELOOP", at.real);
      at = reached.node;
    }
    return { node: at, links };
  }

  /** What `name` is in the folder `folder`, looked up once. */
  private lookUp(folder: RealNode, name: string): RealNode | LinkNode | NodeJS.ErrnoException {
    const names = (folder.names ??= new Map());
    let named = names.get(name);
    if (named === undefined) {
      const path = folder.real === "/" ? `/${name}` : `${folder.real}/${name}`;
      try {
        const stats = lstatSync(path);
        named = stats.isSymbolicLink() ? { target: readlinkSync(path) } : { real: path, parent: folder, folder: stats.isDirectory() };
      } catch (error) {
        named = error as NodeJS.ErrnoException;
      }
      names.set(name, named);
    }
    return named;
  }

  /**
   * Where `link` (in `folder`) leads, and the links followed there, itself included; resolved once. A link met again
   * while its own target is being resolved leads through itself: realpath would follow it until its limit.
   */
  private follow(folder: RealNode, link: LinkNode): Reached {
    const known = link.resolved;
    if (known === "resolving") throw failure("ELOOP", folder.real);
    if (known instanceof Error) throw known;
    if (known) return known;
    link.resolved = "resolving";
    try {
      const reached = this.walk(link.target.startsWith("/") ? this.root : folder, link.target, 1);
      link.resolved = reached;
      return reached;
    } catch (error) {
      link.resolved = error as NodeJS.ErrnoException;
      throw error;
    }
  }
}

function failure(code: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: ${path}`), { code, path });
}
