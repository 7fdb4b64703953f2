import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { link, mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll } from "vitest";
import { writeCacheFile } from "../src/compile/cache-file.js";

export const REPO = fileURLToPath(new URL("..", import.meta.url));
export const CLI = join(REPO, "dist", "launch.cjs");

const created: string[] = [];
afterAll(async () => {
  await Promise.all(created.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

/** A fresh real folder (symlinks in its path resolved), removed after the test file. */
export async function tempDir(prefix = "skillbake-"): Promise<string> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  created.push(dir);
  return dir;
}

/** Writes files (string or bytes) and symlinks (`{ link: target }`) under `dir`. */
export async function writeTree(dir: string, tree: Record<string, string | Uint8Array | { link: string }>): Promise<void> {
  for (const [path, content] of Object.entries(tree)) {
    const target = join(dir, path);
    await mkdir(dirname(target), { recursive: true });
    if (typeof content === "object" && "link" in content) await symlink(content.link, target);
    else await writeFile(target, content);
  }
}

/**
 * Links that must end: a chain of 46 links (longer than the system follows) ending in a folder, SKILL.md files that
 * are a loop and a self link, a link back to the root's folder, a self link, and a link into the chain's middle.
 */
export function linkLoops(): Record<string, { link: string } | string> {
  const tree: Record<string, { link: string } | string> = {};
  for (let i = 0; i < 45; i++) tree[`skills/chain/l${i}`] = { link: `l${i + 1}` };
  return {
    ...tree,
    "skills/chain/l45": { link: "../target" },
    "skills/target/notes.md": "a folder, not a skill",
    "skills/chain-skill/SKILL.md": { link: "../chain/l0/SKILL.md" },
    "skills/loop/back": { link: ".." },
    "skills/loop/self": { link: "self" },
    "skills/self-skill/SKILL.md": { link: "SKILL.md" },
    "skills/short/via": { link: "../chain/l40" },
  };
}

/**
 * The lock on `<dir>/dist/skills` that a build of process `pid` holds: `dist/.skills.lock` and its candidate
 * `dist/.skills.lock-<pid>-…`, one file under two names, holding the pid. Returns the lock's path.
 */
export async function holdLock(dir: string, pid: number): Promise<string> {
  const lock = join(dir, "dist/.skills.lock");
  await writeTree(dir, { [`dist/.skills.lock-${pid}-0000abcd`]: `${pid}\n` });
  await link(join(dir, `dist/.skills.lock-${pid}-0000abcd`), lock);
  return lock;
}

/** A minimal valid SKILL.md. */
export function skillMd(name: string, description = `Does ${name} things. Use when ${name} is needed.`, body = `# ${name}\n\nSteps for ${name}.`): string {
  return `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}\n`;
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** This process's environment for the CLI: no colour or GitHub Actions unless `env` says so. */
function cliEnv(env: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const merged: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1", FORCE_COLOR: undefined, GITHUB_ACTIONS: undefined, GITHUB_STEP_SUMMARY: undefined, ...env };
  for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
  return merged as NodeJS.ProcessEnv;
}

/** Runs the built CLI (or the copy at `cli`) as a subprocess, without a TTY, colour or GitHub Actions unless `env` says so. */
export function runCli(args: string[], options: { cwd: string; env?: Record<string, string | undefined>; uid?: number; cli?: string }): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const user = options.uid === undefined ? {} : { uid: options.uid, gid: options.uid };
    const child = spawn(process.execPath, [options.cli ?? CLI, ...args], { cwd: options.cwd, env: cliEnv(options.env), stdio: ["ignore", "pipe", "pipe"], ...user });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** `runCli`, blocking this process until the CLI exits: for a test that must run it while this process is inside a synchronous call. */
export function runCliSync(args: string[], options: { cwd: string }): CliRun {
  const run = spawnSync(process.execPath, [CLI, ...args], { cwd: options.cwd, env: cliEnv(), stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
  if (run.error) throw run.error;
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

/**
 * Rewrites `file` with `text` of the same size and puts its mtime back to the nanosecond (`touch -r` from a file
 * given its times first; `utimes` takes seconds as a double, which cannot hold them): what a stat signature
 * without the ctime would miss. Throws if the size or mtime differs, so a test cannot lose its point by accident.
 */
export async function sameSizeEdit(file: string, text: string): Promise<void> {
  const before = statSync(file, { bigint: true });
  const times = join(await mkdtemp(join(tmpdir(), "skillbake-times-")), "times");
  execFileSync("touch", ["-r", file, times]);
  await writeFile(file, text);
  execFileSync("touch", ["-r", times, file]);
  await rm(dirname(times), { recursive: true });
  const after = statSync(file, { bigint: true });
  if (after.size !== before.size || after.mtimeNs !== before.mtimeNs) throw new Error(`sameSizeEdit: ${file} changed size or mtime`);
}

/**
 * A cache file's payload passed through `edit` and written back under a valid header: its format, key and checksum
 * right. Not for a build cache with a file of changes beside it: what a build reads is not its payload alone.
 */
export function rewriteCache(file: string, edit: (contents: Record<string, any>) => void): void {
  if (existsSync(file.replace(/\.json$/, ".changes.json"))) throw new Error(`rewriteCache: ${file} has a file of changes beside it`);
  const [header, payload] = readFileSync(file, "utf8").split("\n");
  const { format, key } = JSON.parse(header!) as { format: number; key: string };
  const contents = JSON.parse(payload!) as Record<string, any>;
  edit(contents);
  writeCacheFile(file, format, key, contents);
}
