import { randomBytes } from "node:crypto";
import { closeSync, constants, fstatSync, openSync, readFileSync, realpathSync, renameSync, unlinkSync, writeSync } from "node:fs";
import { basename, dirname, join, relative, sep } from "node:path";
import type { Compilation } from "../compile/compile.js";
import { resolveRoot } from "../compile/config.js";
import { MAX_SKILL_FILE_BYTES } from "../compile/parse.js";
import { RealPaths } from "../compile/real-paths.js";
import { RULES } from "../compile/rules.js";
import { isSameFile, type FileIdentity } from "../compile/resources.js";
import { unifiedDiff } from "../review/diff.js";
import { fixSkillFile, type AppliedFix } from "./fix.js";

/** A SKILL.md that `--fix` may rewrite: found by discovery inside `root`, with the identity discovery verified. */
export interface FixTarget {
  path: string;
  /** As diagnostics name it: relative to the config folder. */
  file: string;
  root: string;
  identity: FileIdentity;
}

/** What `--fix` did to one file, or would do (`written: false`), and the unified diff of its text. */
export interface FileFixes {
  file: string;
  fixes: AppliedFix[];
  diff: string;
  written: boolean;
  /** Why the fixes were not written, when `write` was asked for. */
  notWritten?: string;
}

/** The SKILL.md files with a finding `--fix` may mend, each once, in the order of the diagnostics. */
export function fixTargets(compilation: Pick<Compilation, "config" | "diagnostics" | "verified">): FixTarget[] {
  const { config, dir } = compilation.config;
  const roots = Object.values(config.agents).flatMap((agent) => agent.skills.map((source) => resolveRoot(source.root, dir)));
  const targets = new Map<string, FixTarget>();
  for (const diagnostic of compilation.diagnostics) {
    if (!RULES[diagnostic.code].fixable || diagnostic.file === undefined) continue;
    const path = join(dir, diagnostic.file);
    const identity = compilation.verified.get(path);
    // The innermost root that holds it: the links below it are the ones that count.
    const root = roots.filter((candidate) => path.startsWith(candidate + sep)).sort((a, b) => b.length - a.length)[0];
    if (identity && root && !targets.has(path)) targets.set(path, { path, file: diagnostic.file, root, identity });
  }
  return [...targets.values()];
}

/**
 * Fixes each target (see `fixSkillFile`); with `write`, the fixed text replaces the file. A file is written only
 * when it is still the one discovery found inside its root, reached through no link below the root, and unchanged
 * since it was read (its identity, size, times and bytes, checked again just before the swap): the new text goes
 * to a temporary file beside it, created anew (never an existing file), which is renamed over it.
 */
export function fixFiles(targets: readonly FixTarget[], { write, recover, beforeSwap }: { write: boolean; recover: boolean; beforeSwap?: () => void }): FileFixes[] {
  const results: FileFixes[] = [];
  // Each folder looked up once for all the reads (a chain of folders holding a skill each would cost a lookup of
  // every folder above each); the check just before a swap asks the system afresh.
  const realPaths = new RealPaths();
  for (const target of targets) {
    const read = readTarget(target, (path) => realPaths.of(path));
    if ("failure" in read) {
      results.push({ file: target.file, fixes: [], diff: "", written: false, notWritten: read.failure });
      continue;
    }
    const fixed = fixSkillFile(read.bytes, basename(dirname(target.path)), { recover });
    if (fixed.fixes.length === 0) continue;
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes).replace(/\r\n?/g, "\n");
    const diff = unifiedDiff(text(read.bytes), text(fixed.bytes), { beforeLabel: `a/${target.file}`, afterLabel: `b/${target.file}` });
    if (!write) {
      results.push({ file: target.file, fixes: fixed.fixes, diff, written: false });
      continue;
    }
    const failure = replaceFile(target, read, fixed.bytes, beforeSwap);
    results.push({ file: target.file, fixes: fixed.fixes, diff, written: failure === undefined, ...(failure ? { notWritten: failure } : {}) });
  }
  return results;
}

interface ReadTarget {
  bytes: Uint8Array;
  stats: { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint; mode: bigint };
}

function readTarget(target: FixTarget, realPath: (path: string) => string): ReadTarget | { failure: string } {
  if (throughLink(target, realPath)) return { failure: "it is reached through a symbolic link; skillbake does not write through links" };
  let fd: number | undefined;
  try {
    fd = openSync(target.path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const stats = fstatSync(fd, { bigint: true });
    if (!stats.isFile() || !isSameFile(stats, target.identity)) return { failure: "it was replaced after it was found" };
    if (stats.size > MAX_SKILL_FILE_BYTES) return { failure: "it is over the 1 MiB limit" };
    return { bytes: readFileSync(fd), stats };
  } catch (error) {
    return { failure: `it cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})` };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Whether the path passes through a link below its root, or is one: its real path is not the root's real path and the same steps. */
function throughLink({ path, root }: FixTarget, realPath: (path: string) => string): boolean {
  try {
    return realPath(path) !== join(realPath(root), relative(root, path)) || relative(root, path).startsWith(`..${sep}`);
  } catch {
    return true;
  }
}

/** Writes `bytes` beside the file and renames them over it, if the file is still what was read; the reason if not. */
function replaceFile(target: FixTarget, read: ReadTarget, bytes: Uint8Array, beforeSwap?: () => void): string | undefined {
  const temporary = join(dirname(target.path), `.${basename(target.path)}.skillbake-fix-${randomBytes(6).toString("hex")}`);
  let fd: number | undefined;
  try {
    fd = openSync(temporary, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, Number(read.stats.mode & 0o777n));
    writeSync(fd, bytes);
    closeSync(fd);
    fd = undefined;
    beforeSwap?.();
    if (changedSinceRead(target, read)) {
      unlinkSync(temporary);
      return "it changed after it was read";
    }
    renameSync(temporary, target.path);
    return undefined;
  } catch (error) {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(temporary);
    } catch {
      // Never created, or already renamed.
    }
    return `it cannot be written (${(error as NodeJS.ErrnoException).code ?? String(error)})`;
  }
}

function changedSinceRead(target: FixTarget, read: ReadTarget): boolean {
  if (throughLink(target, realpathSync.native)) return true;
  let fd: number | undefined;
  try {
    fd = openSync(target.path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const now = fstatSync(fd, { bigint: true });
    if (!now.isFile() || !isSameFile(now, read.stats) || now.size !== read.stats.size || now.mtimeNs !== read.stats.mtimeNs || now.ctimeNs !== read.stats.ctimeNs) return true;
    return !readFileSync(fd).equals(read.bytes);
  } catch {
    return true;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
