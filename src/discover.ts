import type { Dirent } from "node:fs";
import { open, readdir, readFile, realpath, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import ignore, { type Ignore } from "ignore";
import { compareStrings, type Finding } from "./diagnostics.js";
import { MAX_SKILL_FILE_BYTES } from "./parse.js";

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
}

export interface RootListing {
  root: string;
  /** In path order, each real file once. */
  skills: DiscoveredSkill[];
  findings: Finding[];
}

interface IgnoreLayer {
  /** Folder of the .gitignore relative to the root, with a trailing `/` unless it is the root. */
  prefix: string;
  matcher: Ignore;
}

/**
 * Walks one root (SPEC §3): dot entries and node_modules skipped, .gitignore honoured, symlinks followed
 * while they stay inside the root, and a folder holding SKILL.md is one skill whose subfolders are its
 * resources. Folders are read in parallel; the result is put in path order afterwards, so it never
 * depends on the order in which the filesystem answers.
 */
export async function discoverRoot(root: string, display: (path: string) => string): Promise<RootListing> {
  const findings: Finding[] = [];
  let rootReal: string;
  try {
    rootReal = await realpath(root);
    if (!(await stat(rootReal)).isDirectory()) throw new Error("not a folder");
  } catch (error) {
    findings.push({
      code: "root-missing",
      file: display(root),
      message: `the root ${display(root)} ${describeFsError(error, "does not exist")}`,
      hint: "Check `root` in the config; relative roots resolve against the config file's folder.",
    });
    return { root, skills: [], findings };
  }

  const found: DiscoveredSkill[] = [];
  const isInsideRoot = (real: string) => real === rootReal || real.startsWith(rootReal.endsWith(sep) ? rootReal : rootReal + sep);

  const walk = async (dir: string, relDir: string, dirReal: string, ancestors: readonly string[], layers: readonly IgnoreLayer[], viaLink: boolean): Promise<void> => {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (error) {
      findings.push({ code: "path-unreadable", file: display(dir), message: `the folder ${display(dir)} ${describeFsError(error, "cannot be read")}; skills below it are left out` });
      return;
    }

    const gitignore = entries.find((entry) => entry.name === ".gitignore" && entry.isFile());
    const withLayer = async () => {
      const rules = await readFile(join(dir, ".gitignore"), "utf8").catch(() => "");
      return [...layers, { prefix: relDir ? `${relDir}/` : "", matcher: ignore().add(rules) }];
    };

    const skillEntry = entries.find((entry) => entry.name === "SKILL.md");
    if (skillEntry && !isIgnored(layers, relDir ? `${relDir}/SKILL.md` : "SKILL.md", false)) {
      const file = join(dir, "SKILL.md");
      let realFile: string | undefined;
      if (skillEntry.isFile()) {
        realFile = viaLink ? await realpath(file).catch(() => file) : join(dirReal, "SKILL.md");
      } else if (skillEntry.isSymbolicLink()) {
        const target = await resolveLink(file);
        if (target?.stats.isFile()) {
          if (!isInsideRoot(target.real)) {
            findings.push(escapeFinding(display(file), target.real, display));
            return;
          }
          realFile = target.real;
        }
      }
      if (realFile !== undefined) {
        const files: string[] = [];
        await collectFiles(dir, relDir, "", dirReal, [...ancestors, dirReal], gitignore ? await withLayer() : layers, entries, files);
        found.push({ file, dir: relDir, realFile, files: files.sort(comparePaths) });
        return;
      }
      // A SKILL.md that is a folder, a FIFO or a broken link does not make a skill; keep walking.
    }

    if (gitignore) layers = await withLayer();

    const children: Promise<void>[] = [];
    for (const entry of entries) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      const rel = relDir ? `${relDir}/${entry.name}` : entry.name;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (isIgnored(layers, rel, true)) continue;
        children.push(walk(path, rel, join(dirReal, entry.name), [...ancestors, dirReal], layers, viaLink));
      } else if (entry.isSymbolicLink()) {
        children.push(
          resolveLink(path).then((target) => {
            if (!target?.stats.isDirectory() || isIgnored(layers, rel, true)) return; // broken links and links to files are not skills
            if (!isInsideRoot(target.real)) {
              findings.push(escapeFinding(display(path), target.real, display));
              return;
            }
            if (target.real === dirReal || ancestors.includes(target.real)) return; // a cycle: this folder is already being walked
            return walk(path, rel, target.real, [...ancestors, dirReal], layers, true);
          }),
        );
      }
    }
    await Promise.all(children);
  };

  /**
   * A skill folder's files, by the walk's rules: dot entries, node_modules and ignored paths left out, links
   * followed while they stay inside the root, cycles ended. `entries` is the folder's listing, already read.
   */
  const collectFiles = async (
    dir: string,
    relDir: string,
    skillRel: string,
    dirReal: string,
    ancestors: readonly string[],
    layers: readonly IgnoreLayer[],
    entries: readonly Dirent[],
    files: string[],
  ): Promise<void> => {
    const children: Promise<void>[] = [];
    for (const entry of entries) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      const rel = relDir ? `${relDir}/${entry.name}` : entry.name;
      const fileRel = skillRel ? `${skillRel}/${entry.name}` : entry.name;
      const path = join(dir, entry.name);
      const descend = async (real: string) => {
        if (real === dirReal || ancestors.includes(real)) return; // a cycle
        let inner: Dirent[];
        try {
          inner = await readdir(path, { withFileTypes: true });
        } catch (error) {
          findings.push({ code: "path-unreadable", file: display(path), message: `the folder ${display(path)} ${describeFsError(error, "cannot be read")}; its files are left out of the skill` });
          return;
        }
        const ignoreFile = inner.some((child) => child.name === ".gitignore" && child.isFile());
        const innerLayers = ignoreFile
          ? [...layers, { prefix: `${rel}/`, matcher: ignore().add(await readFile(join(path, ".gitignore"), "utf8").catch(() => "")) }]
          : layers;
        await collectFiles(path, rel, fileRel, real, [...ancestors, dirReal], innerLayers, inner, files);
      };
      if (entry.isFile()) {
        if (!isIgnored(layers, rel, false)) files.push(fileRel);
      } else if (entry.isDirectory()) {
        if (!isIgnored(layers, rel, true)) children.push(descend(join(dirReal, entry.name)));
      } else if (entry.isSymbolicLink()) {
        children.push(
          resolveLink(path).then((target) => {
            if (!target || !(target.stats.isFile() || target.stats.isDirectory())) return; // broken links, FIFOs, devices
            if (isIgnored(layers, rel, target.stats.isDirectory())) return;
            if (!isInsideRoot(target.real)) {
              findings.push(escapeFinding(display(path), target.real, display));
              return;
            }
            if (target.stats.isFile()) files.push(fileRel);
            else return descend(target.real);
          }),
        );
      }
    }
    await Promise.all(children);
  };

  await walk(root, "", rootReal, [], [], false);

  found.sort((a, b) => comparePaths(a.dir, b.dir));
  const seen = new Set<string>();
  const skills = found.filter((skill) => !seen.has(skill.realFile) && seen.add(skill.realFile));
  return { root, skills, findings };
}

/** Path order (SPEC §3): depth first, each folder's entries in bytewise order of their names. */
export function comparePaths(a: string, b: string): number {
  const left = a.split("/");
  const right = b.split("/");
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const order = compareStrings(left[i]!, right[i]!);
    if (order !== 0) return order;
  }
  return left.length - right.length;
}

/** git's rule: the deepest .gitignore with a verdict on the path decides. */
function isIgnored(layers: readonly IgnoreLayer[], rel: string, isDir: boolean): boolean {
  for (let i = layers.length - 1; i >= 0; i--) {
    const layer = layers[i]!;
    if (!rel.startsWith(layer.prefix)) continue;
    const verdict = layer.matcher.test(rel.slice(layer.prefix.length) + (isDir ? "/" : ""));
    if (verdict.ignored) return true;
    if (verdict.unignored) return false;
  }
  return false;
}

async function resolveLink(path: string): Promise<{ real: string; stats: Awaited<ReturnType<typeof stat>> } | undefined> {
  try {
    const real = await realpath(path);
    return { real, stats: await stat(real) };
  } catch {
    return undefined;
  }
}

function escapeFinding(file: string, target: string, display: (path: string) => string): Finding {
  return {
    code: "symlink-escape",
    file,
    message: `the link ${file} resolves outside its root (to ${display(target)}); it is not followed`,
    hint: "Copy the skill into the root, or add the link's target as a source of its own in the config.",
  };
}

/** Reads at most one byte past the size limit: parsing reports a larger file without it ever being loaded whole. */
export async function readSkillBytes(file: string): Promise<Uint8Array | Finding> {
  let handle;
  try {
    handle = await open(file, "r");
    const stats = await handle.stat();
    if (!stats.isFile()) throw Object.assign(new Error("is not a regular file"), { code: "EISDIR" });
    const buffer = Buffer.allocUnsafe(Math.min(stats.size, MAX_SKILL_FILE_BYTES) + 1);
    let length = 0;
    while (length < buffer.length) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    return buffer.subarray(0, length);
  } catch (error) {
    return { code: "path-unreadable", file, message: `SKILL.md ${describeFsError(error, "cannot be read")}; the skill is left out` };
  } finally {
    await handle?.close();
  }
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

export function relativeTo(base: string, path: string): string {
  const rel = relative(base, path);
  return sep === "/" ? rel : rel.split(sep).join("/");
}
