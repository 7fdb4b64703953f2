import { lstatSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, sep } from "node:path";
import type { ListedFolder } from "./cache.js";
import type { ListingSource } from "./compile.js";
import { isPastByteLimit, leftFilesOutBySize, NEVER_WALKED, pathIn, statsThroughLink, type DiscoveredSkill, type FolderEntry, type RootListing } from "./discover.js";
import { fileStatsOf, identityKey, type FileStats } from "./resources.js";

/**
 * What a watching session (`skills build --watch`, a bundler's dev server or watch mode) remembers of its last discovery, so
 * that a rebuild after an edit does not walk the roots again. A watcher tells it which paths changed; while every
 * one of them is a file the last discovery found in a skill folder and is a regular file still (an edit, or an
 * editor's save that renames a new file over it), the folders hold the same entries, so each root's listing is the
 * last one with those files' identities taken again. Any other change (a file or folder added, removed or renamed,
 * a link, a `.gitignore`, a path it never saw) walks again, as does a build with no listing to go on.
 *
 * It is only as good as the watcher's events, so after each build the front end asks `verify` whether any folder or
 * file discovery went by changed since without an event (a watch set up after the change, events an overflowing
 * queue dropped), and builds again if one did: a change missed is built a moment late, never left out.
 */
export class DiscoveryMemo implements ListingSource {
  readonly remembersFolders = true;
  /** The last build's listings, by root. */
  private listings = new Map<string, RootListing>();
  /** Each folder the listings list: its entries, and its stats taken just before it was listed. */
  private folders = new Map<string, ListedFolder>();
  /** The index of `listings`, kept while builds go by the listings it indexes (only files' contents changed): ~50 ms and 13 MB to make at 10,000 skills. */
  private index: DiscoveryIndex | undefined;
  /** The listings `takeListings` last gave out and their index: the index again once the build `remember`s them as they were. */
  private given: { listings: ReadonlyMap<string, RootListing>; index: DiscoveryIndex | undefined } | undefined;
  /** Paths changed since the last build. */
  private changed = new Set<string>();

  /** Paths a watcher saw change (absolute), for the next build. */
  noteChanges(paths: Iterable<string>): void {
    for (const path of paths) this.changed.add(path);
  }

  /**
   * The listings of the roots for this build: the last build's where only the contents of files it found changed
   * since (those files' identities taken again), none where the roots must be walked. Consumes the changes noted
   * and the listings: a build that fails before it `remember`s walks again the next time.
   */
  takeListings(): ReadonlyMap<string, RootListing> {
    const { changed, listings: last, index: kept } = this;
    this.changed = new Set();
    this.listings = new Map();
    // Until the build remembers the listings it went by: one that throws first leaves nothing to go by.
    this.index = undefined;
    this.given = undefined;
    if (changed.size === 0) {
      this.given = { listings: last, index: kept };
      return last;
    }
    const index = kept ?? indexOf(last);
    const updated = new Map<string, Map<number, DiscoveredSkill>>();
    const identify = (path: string, stats: FileStats) => {
      const found = index.files.get(path)!;
      const skills = updated.get(found.root) ?? updated.set(found.root, new Map()).get(found.root)!;
      let skill = skills.get(found.skill);
      if (!skill) {
        // Copied once a build: a skill of 10,000 links to one file has them all found again.
        const before = last.get(found.root)!.skills[found.skill]!;
        skill = { ...before, identities: new Map(before.identities) };
        skills.set(found.skill, skill);
      }
      const identity = fileStatsOf(stats);
      moveIdentity(index.byIdentity, path, skill.identities.get(found.path)!, identity);
      skill.identities.set(found.path, identity);
    };
    for (const path of changed) {
      const found = index.files.get(path);
      if (!found) {
        if (this.mayAffect(path, last, index.folders)) return new Map();
        continue;
      }
      const stats = lstatSync(path, { bigint: true, throwIfNoEntry: false });
      if (!stats?.isFile() || !this.sameEntries(dirname(path))) return new Map();
      // The same file found at other paths (through a link to it, or a hard link): found again there too.
      // A copy: `identify` moves each to the set of its new identity.
      for (const other of [...(index.byIdentity.get(identityKey(last.get(found.root)!.skills[found.skill]!.identities.get(found.path)!)) ?? [])]) {
        if (other === path) continue;
        const now = statSync(other, { bigint: true, throwIfNoEntry: false });
        if (!now?.isFile()) return new Map();
        identify(other, now);
      }
      identify(path, stats);
    }
    const listings = new Map(last);
    for (const [root, skills] of updated) {
      const listing = listings.get(root)!;
      if (leftFilesOutBySize(listing) || [...skills.values()].some((skill) => isPastByteLimit(skill.identities))) return new Map();
      listings.set(root, { ...listing, skills: listing.skills.map((skill, index) => skills.get(index) ?? skill) });
    }
    this.given = { listings, index };
    return listings;
  }

  /**
   * Keeps this build's listings for the next build, with the folders it listed (`listed`; a listing taken from
   * here keeps the folders it was made from).
   */
  remember(listings: ReadonlyMap<string, RootListing>, listed: ReadonlyMap<string, ListedFolder>): void {
    const folders = new Map<string, ListedFolder>();
    for (const listing of listings.values()) {
      for (const folder of listing.folders) {
        const seen = listed.get(folder) ?? this.folders.get(folder);
        if (seen) folders.set(folder, seen);
      }
    }
    // The index still holds when the build went by the listings given it, each as it was given.
    const given = this.given;
    const same = given !== undefined && given.listings.size === listings.size && [...listings].every(([root, listing]) => given.listings.get(root) === listing);
    this.index = same ? given.index : undefined;
    this.given = undefined;
    this.listings = new Map(listings);
    this.folders = folders;
  }

  /**
   * Whether a change to `path`, which is no file of a skill the last discovery found, may change what discovery
   * finds: it is a root or a folder above one, a `.gitignore` or a folder the walk listed, or an entry of a listed
   * folder that is there now or whose folder's entries differ from the listing's. Entries the walk skips (.git,
   * node_modules, dot files) and a temporary file that came and went (an editor's save) do not.
   */
  private mayAffect(path: string, listings: ReadonlyMap<string, RootListing>, folders: ReadonlySet<string>): boolean {
    for (const { root } of listings.values()) if (root === path || root.startsWith(path.endsWith(sep) ? path : path + sep)) return true;
    const name = basename(path);
    if (name === ".gitignore") return true;
    if (NEVER_WALKED.has(name)) return false;
    if (folders.has(path)) return !this.sameEntries(path);
    if (!folders.has(dirname(path))) return false;
    // A dot file changes nothing the walk sees; a dot folder added or removed changes its folder's entries.
    if (name.startsWith(".")) return !this.sameEntries(dirname(path));
    return lstatSync(path, { throwIfNoEntry: false }) !== undefined || !this.sameEntries(dirname(path));
  }

  /**
   * Whether `folder` holds the entries it was listed with, less those the walk skips: unchanged stats (any entry
   * added, removed or renamed changes them), or a listing of the same entries (an editor's save renames a new file
   * over the old one, which changes the folder's times but not its entries), whose stats are then kept.
   */
  private sameEntries(folder: string): boolean {
    const listed = this.folders.get(folder);
    if (!listed) return false;
    const stats = statSync(folder, { bigint: true, throwIfNoEntry: false });
    if (!stats) return false;
    if (!isSame(listed.stats, stats)) {
      const now = readdirSync(folder, { withFileTypes: true });
      if (entriesOf(now) !== entriesOf(listed.entries)) return false;
      this.folders.set(folder, { stats: fileStatsOf(stats), entries: now });
    }
    return true;
  }

  /**
   * The folders and files the last discovery went by that are not as it found them now (changed, replaced, gone):
   * what its watcher should have reported. A folder is compared by the entries the walk goes by (see `sameEntries`),
   * a file (a skill's, a .gitignore) by its identity, size and times.
   */
  verify(): string[] {
    const changed: string[] = [];
    for (const listing of this.listings.values()) {
      for (const folder of listing.folders) if (!this.sameEntries(folder)) changed.push(folder);
      for (const [file, before] of listing.ignoreFiles) {
        const now = statSync(file, { bigint: true, throwIfNoEntry: false });
        if (!now || !isSame(before, now)) changed.push(file);
      }
      for (const skill of listing.skills) {
        const folder = dirname(skill.file);
        for (const [path, before] of skill.identities) {
          const file = pathIn(folder, path);
          // A file reached through a link has its target's identity: followed, as discovery followed it.
          const target = statsThroughLink(file);
          if (!target || !isSame(before, target)) changed.push(file);
        }
      }
    }
    return changed;
  }
}

/**
 * Each skill file (absolute, as discovered) of a watching session's listings, with its root, its skill's index
 * there and its path in the skill folder; every folder listed; and the files by identity.
 */
interface DiscoveryIndex {
  files: Map<string, { root: string; skill: number; path: string }>;
  folders: Set<string>;
  byIdentity: Map<string, Set<string>>;
}

function indexOf(listings: ReadonlyMap<string, RootListing>): DiscoveryIndex {
  const files = new Map<string, { root: string; skill: number; path: string }>();
  const folders = new Set<string>();
  const byIdentity = new Map<string, Set<string>>();
  for (const [root, listing] of listings) {
    for (const folder of listing.folders) folders.add(folder);
    listing.skills.forEach((skill, index) => {
      const folder = dirname(skill.file);
      for (const [path, identity] of skill.identities) {
        const file = pathIn(folder, path);
        files.set(file, { root, skill: index, path });
        const key = identityKey(identity);
        // Sets: a root of 10,000 links to one file must not cost 10,000 copies of a growing list.
        (byIdentity.get(key) ?? byIdentity.set(key, new Set()).get(key)!).add(file);
      }
    });
  }
  return { files, folders, byIdentity };
}

/** An entry discovery never looks at: .git, node_modules, or a dot entry that is not a folder (but `.gitignore`, which it reads). */
function isSkipped(entry: FolderEntry): boolean {
  return NEVER_WALKED.has(entry.name) || (entry.name.startsWith(".") && entry.name !== ".gitignore" && !entry.isDirectory());
}

/** A folder's entries as one text, less those the walk skips: each kind and name, in name order. */
function entriesOf(entries: readonly FolderEntry[]): string {
  return entries
    .filter((entry) => !isSkipped(entry))
    .map((entry) => `${entry.isFile() ? "f" : entry.isDirectory() ? "d" : entry.isSymbolicLink() ? "l" : "o"}${entry.name}`)
    .sort()
    .join("\n");
}

/** Files `byIdentity` by the identity they have now: `path` moved from `before`'s to `after`'s (an editor's save makes a new file). */
function moveIdentity(byIdentity: Map<string, Set<string>>, path: string, before: FileStats, after: FileStats): void {
  const from = identityKey(before);
  const to = identityKey(after);
  if (from === to) return;
  const left = byIdentity.get(from);
  left?.delete(path);
  if (left?.size === 0) byIdentity.delete(from);
  (byIdentity.get(to) ?? byIdentity.set(to, new Set()).get(to)!).add(path);
}

function isSame(before: FileStats, now: FileStats): boolean {
  return before.dev === now.dev && before.ino === now.ino && before.size === now.size && before.mtimeNs === now.mtimeNs && before.ctimeNs === now.ctimeNs;
}
