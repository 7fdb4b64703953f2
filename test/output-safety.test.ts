import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { closeSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { link, mkdir, readdir, readFile, readlink, rename, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { isMainThread } from "node:worker_threads";
import { describe, expect, it, onTestFinished } from "vitest";
import { build, check } from "../src/api.js";
import { bundleOf, stagedCopies } from "../src/bundle/bundle.js";
import { compareBundle, hashBundleFile, openBundleFile, recoverInterruptedBuild, swapIn, writeBundle } from "../src/bundle/emit.js";
import { CLI, holdLock, runCli, runCliSync, skillMd, tempDir, writeTree } from "./helpers.js";

/**
 * Kills of `skills build` at random moments: about 30 in `npm test`, FUZZ_RUNS / 100 under `npm run fuzz`, KILLED_BUILDS
 * under `npm run mutate` (the builds killed are the CLI's, which no mutant reaches: only the recovery after each is).
 */
const KILLS = Number(process.env.KILLED_BUILDS) || Math.max(30, Math.round(Number(process.env.FUZZ_RUNS ?? 0) / 100));

async function project(config: object = { agents: { main: { skills: [{ root: "skills" }] } } }, tree: Record<string, string | { link: string }> = {}) {
  const dir = await tempDir();
  await writeTree(dir, { "skills.config.json": JSON.stringify(config), "skills/alpha/SKILL.md": skillMd("alpha"), ...tree });
  return dir;
}

/**
 * Every file and link under `dir` (relative path → content or link target), the build cache aside; undefined
 * when `dir` does not exist.
 */
async function snapshot(dir: string): Promise<Map<string, string> | undefined> {
  if (!existsSync(dir)) return undefined;
  const files = new Map<string, string>();
  const walk = async (prefix: string): Promise<void> => {
    for (const entry of await readdir(join(dir, prefix), { withFileTypes: true })) {
      const path = prefix ? `${prefix}/${entry.name}` : entry.name;
      if (path === "node_modules/.cache") continue;
      if (entry.isDirectory()) await walk(path);
      else if (entry.isSymbolicLink()) files.set(path, `-> ${await readlink(join(dir, path))}`);
      else files.set(path, await readFile(join(dir, path), "utf8"));
    }
  };
  await walk("");
  return files;
}

async function restore(dir: string, files: ReadonlyMap<string, string>): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  for (const [path, text] of files) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
  }
}

/** What a build keeps beside `dist/skills` while it runs (lock, lock candidates, staging and retired folders). */
async function transientSiblings(dir: string): Promise<string[]> {
  return (await readdir(join(dir, "dist")).catch(() => [])).filter((name) => name.startsWith(".skills."));
}

/** Runs `body` with `env` set in this process (HOME, say), then puts the variables back. */
async function withEnv(env: Record<string, string>, body: () => Promise<unknown>): Promise<void> {
  const saved = Object.fromEntries(Object.keys(env).map((key) => [key, process.env[key]]));
  Object.assign(process.env, env);
  try {
    await body();
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  }
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""]);
  await new Promise((resolve) => child.on("exit", resolve));
  return child.pid!;
}

/**
 * Makes, under `dir`, folders nested past the system's path limit (4,096 bytes): `top`, then 180 folders of 23
 * letters, with mine.md at the bottom; or reads that file back. A child process steps into each folder in turn, as
 * no call takes a path that long (and a vitest worker cannot change its folder).
 */
function deepTree(dir: string, top: string, mode: "make" | "read"): string {
  const script = `const fs = require("node:fs"); const [top, mode] = process.argv.slice(1);
for (let depth = 0; depth <= 180; depth++) { const name = depth ? "a".repeat(23) : top; if (mode === "make") fs.mkdirSync(name); process.chdir(name); }
if (mode === "make") fs.writeFileSync("mine.md", "mine"); else process.stdout.write(fs.readFileSync("mine.md"));`;
  return execFileSync(process.execPath, ["-e", script, top, mode], { cwd: dir, encoding: "utf8" });
}

/** Whether this process may mount a tmpfs (as root, where no container forbids it): the tests of mount points make one. */
const mayMount = (() => {
  if (process.getuid?.() !== 0) return false;
  const dir = mkdtempSync(join(tmpdir(), "skillbake-mount-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "skillbake-test", dir], { stdio: "ignore" });
    execFileSync("umount", [dir]);
    return true;
  } catch {
    return false;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
})();

/**
 * Mounts an empty tmpfs (with mount `options`, if any) at the folder `dir`, made if missing; unmounted when the test
 * ends, however it ends (timed out included).
 */
async function mountTmpfs(dir: string, options?: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  execFileSync("mount", ["-t", "tmpfs", ...(options ? ["-o", options] : []), "skillbake-test", dir]);
  onTestFinished(() => void execFileSync("umount", [dir]));
}

describe("outDir refusals: nothing is created or deleted", () => {
  const cases: { name: string; out: (dir: string) => string; message: (dir: string) => string; setup?: (dir: string) => Promise<void>; env?: (dir: string) => Record<string, string> }[] = [
    { name: "the config file's folder", out: () => ".", message: (dir) => `${dir} is the config file's folder` },
    { name: "a skills root", out: () => "skills", message: (dir) => `${join(dir, "skills")} is the skills root ${join(dir, "skills")}` },
    {
      name: "a parent of a skills root",
      out: () => "packs",
      message: (dir) => `${join(dir, "packs")} holds the skills root ${join(dir, "packs/team/skills")}`,
      setup: async (dir) => {
        await writeTree(dir, {
          "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }, { root: "packs/team/skills" }] } } }),
          "packs/team/skills/beta/SKILL.md": skillMd("beta"),
        });
      },
    },
    { name: "the filesystem root", out: () => "/", message: () => "/ is the filesystem root" },
    {
      name: "the home folder",
      out: (dir) => join(dir, "home"),
      message: (dir) => `${join(dir, "home")} is your home folder`,
      setup: (dir) => writeTree(dir, { "home/notes.txt": "mine" }),
      env: (dir) => ({ HOME: join(dir, "home") }),
    },
    {
      name: "a folder that holds the home folder",
      out: () => "users",
      message: (dir) => `${join(dir, "users")} holds your home folder`,
      setup: (dir) => writeTree(dir, { "users/me/notes.txt": "mine" }),
      env: (dir) => ({ HOME: join(dir, "users/me") }),
    },
    {
      name: "a skills root reached through a link in the path",
      out: () => "alias/skills",
      message: (dir) => `${join(dir, "alias/skills")} is the skills root ${join(dir, "skills")}`,
      setup: (dir) => writeTree(dir, { alias: { link: "." } }),
    },
    {
      name: "a symbolic link",
      out: () => "dist/skills",
      message: (dir) => `${join(dir, "dist/skills")} is a symbolic link`,
      setup: (dir) => writeTree(dir, { "elsewhere/keep.txt": "mine", "dist/skills": { link: "../elsewhere" } }),
    },
  ];

  for (const { name, out, message, setup, env } of cases) {
    it(`refuses ${name} (exit 2, one clear line)`, async () => {
      const dir = await project();
      await setup?.(dir);
      const before = await snapshot(dir);
      const run = await runCli(["build", "--out", out(dir)], { cwd: dir, env: env?.(dir) });
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(`skills: ${message(dir)}`);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
      // Not a file changed, added or removed.
      expect(await snapshot(dir)).toEqual(before);
      // The programmatic API refuses it the same way; where the case sets HOME, only in the main thread: in a worker
      // thread (the mutation run's) process.env is a copy, which os.homedir() does not read.
      if (env && !isMainThread) return;
      await withEnv(env?.(dir) ?? {}, () => expect(build({ cwd: dir, outDir: out(dir) })).rejects.toThrow(message(dir)));
      expect(await snapshot(dir)).toEqual(before);
    });
  }
});

describe("an outDir that is not empty is replaced only when skillbake wrote it", () => {
  const foreign: [string, Record<string, string>][] = [
    ["a folder of files", { "dist/skills/notes.txt": "mine" }],
    ["another tool's manifest.json", { "dist/skills/manifest.json": '{\n  "generator": "other-tool",\n  "skills": []\n}\n' }],
    ["a manifest.json that only names skillbake inside a value", { "dist/skills/manifest.json": '{\n  "notes": "\\n  \\"generator\\": \\"skillbake\\",\\n"\n}\n' }],
  ];
  for (const [name, tree] of foreign) {
    it(`refuses ${name}, and deletes nothing`, async () => {
      const dir = await project(undefined, tree);
      const before = await snapshot(dir);
      const run = await runCli(["build"], { cwd: dir });
      expect(run.code).toBe(2);
      expect(run.stderr.trim()).toBe(`skills: ${join(dir, "dist/skills")} is not empty and was not written by skillbake; refusing to replace it. Choose another \`outDir\`, or empty the folder.`);
      expect(await snapshot(dir)).toEqual(before);
      await expect(build({ cwd: dir })).rejects.toThrow(`${join(dir, "dist/skills")} is not empty and was not written by skillbake`);
      expect(await snapshot(dir)).toEqual(before);
    });
  }

  it("refuses its own bundle once a file it does not list is added (a copied manifest.json beside user files), and deletes nothing", async () => {
    const dir = await project();
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    await writeTree(dir, { "dist/skills/notes.md": "mine", "dist/skills/prompts/draft.txt": "mine too", "skills/alpha/SKILL.md": skillMd("alpha", "Changed. Use when testing.") });
    const before = await snapshot(join(dir, "dist"));
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(
      `skills: ${join(dir, "dist/skills")} holds files its manifest does not list (notes.md, prompts/draft.txt); a build replaces the whole folder, so it will not delete them. Move them out of ${join(dir, "dist/skills")}, or choose another \`outDir\`.`,
    );
    expect(await snapshot(join(dir, "dist"))).toEqual(before);
    await expect(build({ cwd: dir })).rejects.toThrow("holds files its manifest does not list (notes.md, prompts/draft.txt)");
    expect(await snapshot(join(dir, "dist"))).toEqual(before);
  });

  it("refuses a manifest.json that is a link to a bundle's manifest, without reading through it", async () => {
    const dir = await project();
    expect((await runCli(["build", "--out", "elsewhere"], { cwd: dir })).code).toBe(0);
    await writeTree(dir, { "dist/skills/manifest.json": { link: join(dir, "elsewhere/manifest.json") } });
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("was not written by skillbake");
    await expect(build({ cwd: dir })).rejects.toThrow("was not written by skillbake");
  });

  it("replaces its own bundle with skill files staged per agent, which the manifest lists under agents/<id>/skills/", async () => {
    const agents = { main: { skills: [{ root: "skills" }] }, other: { skills: [{ root: "skills" }] } };
    const dir = await project({ stage: { layout: "per-agent" }, location: "relative", agents }, { "skills/alpha/references/guide.md": "Guide.\n" });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect(existsSync(join(dir, "dist/skills/agents/other/skills/alpha/references/guide.md"))).toBe(true);
    await writeTree(dir, { "skills/alpha/SKILL.md": skillMd("alpha", "Changed. Use when testing.") });
    const rebuild = await runCli(["build"], { cwd: dir });
    expect(rebuild.stderr).not.toContain("does not list");
    expect(rebuild.code).toBe(0);
  });

  it("replaces its own bundle with staged skill files (stage: true), which the manifest lists under skills/", async () => {
    const dir = await project({ stage: true, location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }, { "skills/alpha/references/guide.md": "Guide.\n" });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect(existsSync(join(dir, "dist/skills/skills/alpha/references/guide.md"))).toBe(true);
    await writeTree(dir, { "skills/alpha/SKILL.md": skillMd("alpha", "Changed. Use when testing.") });
    const rebuild = await runCli(["build"], { cwd: dir });
    expect(rebuild.stderr).not.toContain("does not list");
    expect(rebuild.code).toBe(0);
    await writeTree(dir, { "dist/skills/skills/alpha/mine.md": "mine", "skills/alpha/SKILL.md": skillMd("alpha") });
    const refused = await runCli(["build"], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("holds files its manifest does not list (skills/alpha/mine.md)");
    await expect(build({ cwd: dir })).rejects.toThrow("holds files its manifest does not list (skills/alpha/mine.md)");
    await rm(join(dir, "dist/skills/skills/alpha/mine.md"));
    expect((await build({ cwd: dir })).written).toBe(true);
  });

  it("refuses a manifest.json that is a FIFO without waiting for a writer", async () => {
    const dir = await project();
    await mkdir(join(dir, "dist/skills"), { recursive: true });
    execFileSync("mkfifo", [join(dir, "dist/skills/manifest.json")]);
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("was not written by skillbake");
    await expect(build({ cwd: dir })).rejects.toThrow("was not written by skillbake");
  });

  it("replaces its own bundle, however far into manifest.json the generator line sits", async () => {
    // Thousands of diagnostics come before "generator" in the key-sorted manifest: past the first chunks read.
    const skills = Object.fromEntries(Array.from({ length: 1500 }, (_, i) => [`skills/s${i}/SKILL.md`, `---\nname: s${i}\ndescription: Skill ${i}.\nunknown-${i}: x\n---\nBody.\n`]));
    const dir = await project({ agents: { main: { skills: [{ root: "skills" }] } }, rules: { "field-unknown": "warn" } }, skills);
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const manifest = await readFile(join(dir, "dist/skills/manifest.json"), "utf8");
    expect(manifest.indexOf('\n  "generator": "skillbake",\n')).toBeGreaterThan(1 << 17);
    await writeTree(dir, { "skills/s0/SKILL.md": skillMd("s0") });
    const rebuild = await runCli(["build"], { cwd: dir });
    expect(rebuild.stderr).not.toContain("not written by skillbake");
    expect(rebuild.code).toBe(0);
    expect(await readFile(join(dir, "dist/skills/manifest.json"), "utf8")).not.toBe(manifest);
  });
});

describe("one build at a time per outDir", () => {
  it("a build finds the lock of a running build: exit 2 naming it, nothing written, the lock left alone", async () => {
    const dir = await project();
    const lock = await holdLock(dir, process.pid);
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(`skills: another skills build (process ${process.pid}) is writing ${join(dir, "dist/skills")}; wait for it to finish, then build again. If no build is running, delete ${lock}.`);
    expect(existsSync(join(dir, "dist/skills"))).toBe(false);
    expect(await transientSiblings(dir)).toEqual([".skills.lock", `.skills.lock-${process.pid}-0000abcd`]);
  });

  it("a lock committed to the repository holds nothing: one holding 1 (init, always running), a link to a file outside, a FIFO, a folder", async () => {
    const outside = join(await tempDir(), "secret.txt");
    await writeFile(outside, "outside\n");
    const plants: [string, (lock: string) => Promise<unknown> | void][] = [
      ["1", (lock) => writeFile(lock, "1\n")],
      ["this process's id", (lock) => writeFile(lock, `${process.pid}\n`)],
      ["a link outside", (lock) => symlink(outside, lock)],
      ["a FIFO", (lock) => void execFileSync("mkfifo", [lock])],
      ["a folder", (lock) => mkdir(join(lock, "inside"), { recursive: true })],
    ];
    for (const [what, plant] of plants) {
      const dir = await project();
      await mkdir(join(dir, "dist"));
      await plant(join(dir, "dist/.skills.lock"));
      const run = await runCli(["build"], { cwd: dir });
      expect(run.code, `${what}: ${run.stderr}`).toBe(0);
      expect(existsSync(join(dir, "dist/skills/manifest.json"))).toBe(true);
      expect(await transientSiblings(dir), what).toEqual([]);
    }
    // And by a build in process.
    for (const [what, plant] of plants) {
      const dir = await project();
      await mkdir(join(dir, "dist"));
      await plant(join(dir, "dist/.skills.lock"));
      expect((await build({ cwd: dir })).written, what).toBe(true);
      expect(await transientSiblings(dir), what).toEqual([]);
    }
    expect(await readFile(outside, "utf8")).toBe("outside\n");
  });

  it("a lock linking to /dev/zero or /proc/self/fd/0 is never read: the build neither reads a gigabyte nor waits on its input", { timeout: 60_000 }, async () => {
    for (const target of ["/dev/zero", "/proc/self/fd/0"]) {
      const dir = await project();
      await writeTree(dir, { "dist/.skills.lock": { link: target } });
      // Its input a pipe left open, as a CI step's may be: reading it would wait forever.
      const child = spawn(process.execPath, [CLI, "build"], { cwd: dir, stdio: ["pipe", "ignore", "pipe"] });
      const code = await new Promise((resolve) => {
        const timer = setTimeout(() => resolve("timed out"), 20_000);
        child.on("close", (exitCode) => (clearTimeout(timer), resolve(exitCode)));
      });
      child.kill();
      expect(code, target).toBe(0);
      expect(existsSync(join(dir, "dist/skills/manifest.json"))).toBe(true);
    }
  });

  it.skipIf(!existsSync("/proc/self/stat"))("the lock of a process started after the lock was taken (its id reused) is stale and taken over", async () => {
    const dir = await project();
    const lock = await holdLock(dir, process.pid);
    await utimes(lock, new Date("2001-01-01"), new Date("2001-01-01"));
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    expect(await transientSiblings(dir)).toEqual([`.skills.lock-${process.pid}-0000abcd`]);
    // And by a build in process, this process's own id in the lock.
    const again = await project();
    const held = await holdLock(again, process.pid);
    await utimes(held, new Date("2001-01-01"), new Date("2001-01-01"));
    expect((await build({ cwd: again })).written).toBe(true);
    expect(await transientSiblings(again)).toEqual([`.skills.lock-${process.pid}-0000abcd`]);
  });

  it("the lock of a killed build is taken over and removed", async () => {
    const dir = await project();
    await writeTree(dir, { "dist/.skills.lock": `${await deadPid()}\n` });
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(existsSync(join(dir, "dist/skills/manifest.json"))).toBe(true);
    expect(await transientSiblings(dir)).toEqual([]);
    // And by a build in process.
    const again = await project();
    await writeTree(again, { "dist/.skills.lock": `${await deadPid()}\n` });
    expect((await build({ cwd: again })).written).toBe(true);
    expect(await transientSiblings(again)).toEqual([]);
  });

  it("a build in process finds the lock of another running build: refused naming it, nothing written, the lock left alone", async () => {
    const dir = await project();
    const running = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    try {
      const lock = await holdLock(dir, running.pid!);
      await expect(build({ cwd: dir })).rejects.toThrow(`another skills build (process ${running.pid}) is writing ${join(dir, "dist/skills")}; wait for it to finish, then build again. If no build is running, delete ${lock}.`);
      expect(existsSync(join(dir, "dist/skills"))).toBe(false);
      expect(await transientSiblings(dir)).toEqual([".skills.lock", `.skills.lock-${running.pid}-0000abcd`]);
    } finally {
      running.kill();
    }
  });

  it("builds started together: each succeeds or says another build is writing; one complete bundle, nothing left beside it", async () => {
    const dir = await project({ agents: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`agent-${i}`, { skills: [{ root: "skills" }] }])) });
    // Built alone into the same outDir: the manifest's $schema is a path relative to it.
    const expected = await (async () => {
      await runCli(["build"], { cwd: dir });
      return snapshot(join(dir, "dist/skills"));
    })();
    for (let round = 0; round < 3; round++) {
      await rm(join(dir, "dist"), { recursive: true, force: true });
      await rm(join(dir, "node_modules"), { recursive: true, force: true }); // the build cache would skip the write
      const runs = await Promise.all(Array.from({ length: 4 }, () => runCli(["build"], { cwd: dir })));
      for (const run of runs) {
        if (run.code === 0) continue;
        expect(run.code).toBe(2);
        expect(run.stderr).toMatch(/^skills: another skills build \(process \d+\) is writing /);
      }
      expect(runs.some((run) => run.code === 0)).toBe(true);
      expect(await snapshot(join(dir, "dist/skills"))).toEqual(expected);
      expect(await transientSiblings(dir)).toEqual([]);
    }
  });
});

describe("the swap", () => {
  it("puts the old bundle straight back when the new one cannot be renamed into its place", async () => {
    const dir = await project();
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const before = await snapshot(join(dir, "dist/skills"));
    const staging = join(dir, "dist/.skills.tmp-gone");
    expect(() => swapIn(staging, join(dir, "dist/skills"))).toThrow(expect.objectContaining({ code: "ENOENT", path: staging }));
    expect(await snapshot(join(dir, "dist/skills"))).toEqual(before);
    expect(await readdir(join(dir, "dist"))).toEqual(["skills"]);
    // Without an old bundle there is nothing to put back: the rename's own error.
    expect(() => swapIn(staging, join(dir, "dist/other"))).toThrow(expect.objectContaining({ code: "ENOENT", path: staging }));
  });
});

describe("recovery from a killed build", () => {
  it("an outDir missing beside a retired bundle (killed between the two renames) gets the old bundle back; leftovers go", async () => {
    const dir = await tempDir();
    const pid = await deadPid();
    await writeTree(dir, {
      [`.skills.old-${pid}-0a1b2c3d/manifest.json`]: "old bundle",
      [`.skills.old-${pid}-0a1b2c3d/prompts/main.txt`]: "old prompt",
      [`.skills.tmp-${pid}-0a1b2c3d/manifest.json`]: "new bundle",
      [`.skills.lock-${pid}-0a1b2c3d`]: `${pid}\n`,
      "keep.txt": "not ours",
    });
    await recoverInterruptedBuild(join(dir, "skills"));
    expect(await snapshot(join(dir, "skills"))).toEqual(new Map([["manifest.json", "old bundle"], ["prompts/main.txt", "old prompt"]]));
    expect((await readdir(dir)).sort()).toEqual(["keep.txt", "skills"]);
  });

  it("with the new bundle in place, a half-deleted retired folder and staging folders are removed; a running build's lock candidate stays", async () => {
    const dir = await tempDir();
    const dead = await deadPid();
    const running = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    try {
      await writeTree(dir, {
        "skills/manifest.json": "new bundle",
        [`.skills.old-${dead}-00000001/prompts/main.txt`]: "half deleted",
        [`.skills.tmp-${dead}-00000002/manifest.json`]: "partial",
        [`.skills.lock-${running.pid}-00000003`]: `${running.pid}\n`,
      });
      await recoverInterruptedBuild(join(dir, "skills"));
      expect(await snapshot(join(dir, "skills"))).toEqual(new Map([["manifest.json", "new bundle"]]));
      expect((await readdir(dir)).sort()).toEqual([`.skills.lock-${running.pid}-00000003`, "skills"]);
    } finally {
      running.kill();
    }
  });

  it(`${KILLS} builds killed (SIGKILL) at random moments each leave the old bundle or the new one, complete`, async () => {
    const agents = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`agent-${i}`, { skills: [{ root: "skills" }] }]));
    const skills = (version: string) => Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`skills/skill-${i}/SKILL.md`, skillMd(`skill-${i}`, `Version ${version} of skill ${i}. Use when ${i} matters.`)]));
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": JSON.stringify({ location: "relative", agents }), ...skills("A") });
    const outDir = join(dir, "dist/skills");
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const oldBundle = (await snapshot(outDir))!;
    await writeTree(dir, skills("B"));
    // Built into a folder as deep as the outDir: the manifest's $schema is a path relative to it.
    expect((await runCli(["build", "--out", "dist/expected"], { cwd: dir })).code).toBe(0);
    const newBundle = (await snapshot(join(dir, "dist/expected")))!;
    expect(newBundle).not.toEqual(oldBundle);

    const started = performance.now();
    expect((await runCli(["build", "--out", "timing"], { cwd: dir })).code).toBe(0);
    const duration = performance.now() - started;

    const states = new Map<string, number>();
    for (let kill = 0; kill < KILLS; kill++) {
      await restore(outDir, oldBundle);
      const child = spawn(process.execPath, [CLI, "build"], { cwd: dir, stdio: "ignore" });
      const exited = new Promise((resolve) => child.on("exit", resolve));
      // Most of a build is starting Node and compiling; the moments that matter are near the end.
      await new Promise((resolve) => setTimeout(resolve, duration * (0.2 + Math.random())));
      child.kill("SIGKILL");
      await exited;

      const found = await snapshot(outDir);
      const leftovers = (await transientSiblings(dir)).map((name) => name.replace(/-\d+-[0-9a-f]+$/, ""));
      let state: string;
      if (found === undefined) {
        // Killed between the two renames: the old bundle stands complete beside the missing outDir.
        const retired = (await transientSiblings(dir)).filter((name) => name.startsWith(".skills.old-"));
        expect(retired).toHaveLength(1);
        expect(await snapshot(join(dir, "dist", retired[0]!))).toEqual(oldBundle);
        state = "between the renames";
      } else if (found.size === oldBundle.size && [...found].every(([path, text]) => oldBundle.get(path) === text)) {
        state = leftovers.includes(".skills.tmp") ? "old, staging left" : "old";
      } else {
        expect(found).toEqual(newBundle);
        state = leftovers.includes(".skills.old") ? "new, retired folder left" : "new";
      }
      states.set(state, (states.get(state) ?? 0) + 1);

      await recoverInterruptedBuild(outDir);
      const recovered = await snapshot(outDir);
      expect([oldBundle, newBundle]).toContainEqual(recovered);
      expect((await transientSiblings(dir)).filter((name) => !/^\.skills\.lock/.test(name))).toEqual([]);
    }
    console.info(`killed builds (build ≈ ${Math.round(duration)} ms):`, Object.fromEntries(states));

    // The next build takes over the killed builds' lock, writes the new bundle and leaves nothing beside it.
    await rm(join(dir, "node_modules"), { recursive: true, force: true });
    const last = await runCli(["build"], { cwd: dir });
    expect(last.code).toBe(0);
    expect(await snapshot(outDir)).toEqual(newBundle);
    expect(await transientSiblings(dir)).toEqual([]);
  }, 120_000); // KILLS builds, each up to 1.2x a timed one: 30 s was too short on a loaded machine
});

describe("in process: the lock's holder, the manifest read in chunks, what an outDir holds", () => {
  it.skipIf(!existsSync("/proc/self/stat"))("a running process's lock holds only when taken after that process started (its start read from /proc)", async () => {
    const before = Date.now();
    const running = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    await new Promise((resolve) => running.once("spawn", resolve));
    const after = Date.now();
    try {
      // /proc gives the start to 10 ms after a boot time to the second: 5 s either side is past any rounding.
      const taken = await project();
      await utimes(await holdLock(taken, running.pid!), new Date(after + 5000), new Date(after + 5000));
      await expect(build({ cwd: taken })).rejects.toThrow(`another skills build (process ${running.pid}) is writing`);
      const stale = await project();
      await utimes(await holdLock(stale, running.pid!), new Date(before - 5000), new Date(before - 5000));
      expect((await build({ cwd: stale })).written).toBe(true);
      // Taken in the very tick the process started, as /proc counts it (field 22 of its stat, in hundredths of a
      // second after the boot second): held. `touch` sets the time to the nanosecond (`utimes` takes a double).
      const stat = readFileSync(`/proc/${running.pid}/stat`, "utf8");
      const ticks = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]);
      const boot = Number(/^btime (\d+)$/m.exec(readFileSync("/proc/stat", "utf8"))![1]);
      const started = boot * 100 + ticks;
      const sameTick = await project();
      execFileSync("touch", ["-m", "-d", `@${Math.floor(started / 100)}.${String(started % 100).padStart(2, "0")}`, await holdLock(sameTick, running.pid!)]);
      await expect(build({ cwd: sameTick })).rejects.toThrow(`another skills build (process ${running.pid}) is writing`);
    } finally {
      running.kill();
    }
  });

  /** A manifest of skillbake's listing prompts/main.txt, its `"schemaVersion"` line starting at byte `at`. */
  function manifestWithHeadEndAt(at: number): string {
    const start = '{\n  "diagnostics": "';
    const end = '",\n  "generator": "skillbake",\n  "hashes": {\n    "outputs": {\n      "prompts/main.txt": "0"\n    }\n  },';
    const text = `${start}${"x".repeat(at - start.length - end.length)}${end}\n  "schemaVersion": 1,\n  "skills": []\n}\n`;
    expect(text.indexOf('\n  "schemaVersion": ')).toBe(at);
    return text;
  }

  it("reads a manifest's head up to its schemaVersion line wherever the 64 KiB chunks cut that line", async () => {
    const chunk = 1 << 16;
    for (const at of [200, chunk - 20, chunk - 19, chunk - 10, chunk - 1, chunk, chunk + 1, 3 * chunk - 7]) {
      const dir = await project(undefined, { "dist/skills/manifest.json": manifestWithHeadEndAt(at), "dist/skills/prompts/main.txt": "old" });
      expect((await build({ cwd: dir })).written, String(at)).toBe(true);
    }
    // Without that line there is no head: not a manifest of skillbake's.
    const dir = await project(undefined, { "dist/skills/manifest.json": manifestWithHeadEndAt(200).replace('"schemaVersion"', '"version"'), "dist/skills/prompts/main.txt": "old" });
    await expect(build({ cwd: dir })).rejects.toThrow("is not empty and was not written by skillbake");
  });

  it("names at most three files its manifest does not list, escaped, and counts the rest; refuses an outDir that is a file", async () => {
    const listed = { "dist/skills/manifest.json": manifestWithHeadEndAt(200), "dist/skills/prompts/main.txt": "old" };
    const one = await project(undefined, { ...listed, "dist/skills/\u001b[2Knotes.md": "mine" });
    await expect(build({ cwd: one })).rejects.toThrow(`${join(one, "dist/skills")} holds files its manifest does not list (\\x1b[2Knotes.md); a build replaces the whole folder`);
    const five = await project(undefined, { ...listed, ...Object.fromEntries(["a", "b", "c", "d", "e"].map((name) => [`dist/skills/${name}.md`, "mine"])) });
    await expect(build({ cwd: five })).rejects.toThrow(/does not list \([a-e]\.md, [a-e]\.md, [a-e]\.md and 2 more\); /);
    const three = await project(undefined, { ...listed, ...Object.fromEntries(["a", "b", "c"].map((name) => [`dist/skills/${name}.md`, "mine"])) });
    await expect(build({ cwd: three })).rejects.toThrow(/does not list \([a-c]\.md, [a-c]\.md, [a-c]\.md\); /);
    const file = await project(undefined, { "dist/skills": "a file" });
    await expect(build({ cwd: file })).rejects.toThrow(`${join(file, "dist/skills")} is a file, not a folder; skillbake will not replace it`);
    expect(await readFile(join(file, "dist/skills"), "utf8")).toBe("a file");
    // A file where a folder above it should be: what failed, named.
    await expect(build({ cwd: file, outDir: "dist/skills/inner" })).rejects.toThrow(`cannot write ${join(file, "dist/skills/inner")}: a part of the path is a file, not a folder`);
  });

  it("replaces its own bundle with skill files staged per agent, and refuses one where a file it does not list was added there", async () => {
    const agents = { main: { skills: [{ root: "skills" }] }, other: { skills: [{ root: "skills" }] } };
    const dir = await project({ stage: { layout: "per-agent" }, location: "relative", agents }, { "skills/alpha/references/guide.md": "Guide.\n" });
    expect((await build({ cwd: dir })).written).toBe(true);
    await writeTree(dir, { "skills/alpha/SKILL.md": skillMd("alpha", "Changed. Use when testing.") });
    expect((await build({ cwd: dir })).written).toBe(true);
    await writeTree(dir, { "dist/skills/agents/other/skills/alpha/mine.md": "mine", "skills/alpha/SKILL.md": skillMd("alpha") });
    await expect(build({ cwd: dir })).rejects.toThrow("holds files its manifest does not list (agents/other/skills/alpha/mine.md)");
    // The manifest's own list of a skill's files names no staged folder there: it lists nothing on its own.
    await rm(join(dir, "dist/skills/agents/other/skills/alpha/mine.md"));
    await writeTree(dir, { "dist/skills/undefined/references/guide.md": "mine", "skills/alpha/SKILL.md": skillMd("alpha", "Again. Use when testing.") });
    await expect(build({ cwd: dir })).rejects.toThrow("holds files its manifest does not list (undefined/references/guide.md)");
    // The bundles replaced were removed, and the staging folders.
    expect(await transientSiblings(dir)).toEqual([]);
  });

  it("opens a bundle's file only when it is a regular file reached through folders alone, and names what stands there instead", async () => {
    const outDir = join(await tempDir(), "skills");
    const outside = await tempDir();
    await writeTree(outDir, { "prompts/main.txt": "prompt", "file.txt": "text", "folder/inside.txt": "" });
    await writeTree(outDir, { link: { link: outside }, "prompts/link.txt": { link: join(outDir, "prompts/main.txt") } });
    execFileSync("mkfifo", [join(outDir, "fifo")]);
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(join(outDir, "socket"), resolve)); // closed last: closing removes it
    try {
      let device = true;
      try {
        execFileSync("mknod", [join(outDir, "device"), "c", "1", "3"], { stdio: "ignore" });
      } catch {
        device = false; // not allowed here (no CAP_MKNOD)
      }
      const opened = openBundleFile(outDir, "prompts/main.txt");
      expect(opened).toEqual({ fd: expect.any(Number) });
      closeSync((opened as { fd: number }).fd);
      expect(hashBundleFile(outDir, "prompts/main.txt")).toEqual({ sha256: createHash("sha256").update("prompt").digest("hex") });
      const cases: [string, object][] = [
        ["gone.txt", { missing: true }],
        ["gone/x.txt", { missing: true }],
        ["prompts/gone/x.txt", { missing: true }],
        ["prompts/link.txt", { notFollowed: "a symlink; not followed" }],
        ["folder", { notFollowed: "a folder, not a file" }],
        ["fifo", { notFollowed: "a FIFO; not read" }],
        ["socket", { notFollowed: "cannot be read (ENXIO)" }],
        ["link/x.txt", { notFollowed: "below link, a symlink; not followed" }],
        ["file.txt/x.txt", { notFollowed: "below file.txt, not a regular file; not read" }],
        ["fifo/x.txt", { notFollowed: "below fifo, a FIFO; not read" }],
        ["socket/x.txt", { notFollowed: "below socket, a socket; not read" }],
        ...(device ? ([["device", { notFollowed: "a device; not read" }], ["device/x", { notFollowed: "below device, a device; not read" }]] as [string, object][]) : []),
      ];
      for (const [path, expected] of cases) {
        expect(openBundleFile(outDir, path), path).toEqual(expected);
        expect(hashBundleFile(outDir, path), path).toEqual(expected);
      }
    } finally {
      server.close();
    }
  });

  it("a lock holds only as a build writes it: a running process's id, alone on its line, with that build's candidate beside it", async () => {
    const running = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    await new Promise((resolve) => running.once("spawn", resolve));
    try {
      const pid = running.pid!;
      const held = await project();
      await holdLock(held, pid);
      await expect(build({ cwd: held })).rejects.toThrow(`another skills build (process ${pid}) is writing`);
      // The same lock, but for the text in it: each is taken over.
      for (const text of [`${pid}\n\n`, ` ${pid}\n`, `0${pid}\n`, `${pid}`, `${pid}x\n`]) {
        const dir = await project();
        const lock = await holdLock(dir, pid);
        await writeFile(lock, text);
        expect((await build({ cwd: dir })).written, JSON.stringify(text)).toBe(true);
      }
      // A lock whose other name is not its candidate's, and a file of the candidate's name that is not the lock.
      const unpaired = await project();
      await writeTree(unpaired, { "dist/.skills.lock": `${pid}\n`, [`dist/.skills.lock-${pid}-0000abcd`]: `${pid}\n` });
      await link(join(unpaired, "dist/.skills.lock"), join(unpaired, "dist/second-name"));
      expect((await build({ cwd: unpaired })).written).toBe(true);
      const uncandidated = await project();
      await writeTree(uncandidated, { "dist/.skills.lock": `${pid}\n` });
      await link(join(uncandidated, "dist/.skills.lock"), join(uncandidated, "dist/second-name"));
      expect((await build({ cwd: uncandidated })).written).toBe(true);
    } finally {
      running.kill();
    }
  });

  it("recovery leaves alone what is not a killed build's: this process's own folders, other outDirs' and names of another shape; a missing parent is nothing to recover", async () => {
    const dir = await tempDir();
    const pid = await deadPid();
    const kept = [`.skills.tmp-${process.pid}-0a1b2c3d`, `.skillsx.tmp-${pid}-0a1b2c3d`, `.skills.tmp-${pid}-0A1B2C3D`, `.skills.tmp-${pid}-`, `.skills.temp-${pid}-0a1b2c3d`, `x.skills.tmp-${pid}-0a1b2c3d`, `.agents.tmp-${pid}-0a1b2c3d`];
    await writeTree(dir, { "skills/manifest.json": "bundle", ...Object.fromEntries(kept.map((name) => [`${name}/manifest.json`, "kept"])), [`.skills.tmp-${pid}-0a1b2c3d/manifest.json`]: "partial" });
    await recoverInterruptedBuild(join(dir, "skills"));
    expect((await readdir(dir)).sort()).toEqual([...kept, "skills"].sort());
    await expect(recoverInterruptedBuild(join(dir, "missing", "skills"))).resolves.toBeUndefined();
  });

  it("each refusal of an outDir says what it is and what to set instead, in full", async () => {
    const fix = "Set `outDir` (or --out) to a folder of its own, such as dist/skills.";
    const dir = join(await tempDir(), "app");
    await writeTree(dir, { "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }), "skills/alpha/SKILL.md": skillMd("alpha") });
    await writeTree(dir, { "elsewhere/keep.txt": "mine", "dist/skills": { link: "../elsewhere" } });
    const refusals: [string, string][] = [
      [".", `${dir} is the config file's folder; a build replaces its outDir and everything in it. ${fix}`],
      ["..", `${dirname(dir)} holds the config file's folder; a build replaces its outDir and everything in it. ${fix}`],
      ["skills", `${join(dir, "skills")} is the skills root ${join(dir, "skills")}; a build replaces its outDir and everything in it. ${fix}`],
      ["/", `/ is the filesystem root; skillbake will not replace it. ${fix}`],
      ["dist/skills", `${join(dir, "dist/skills")} is a symbolic link; a build replaces the outDir folder, which would replace the link. Set \`outDir\` to the folder it points to.`],
    ];
    for (const [outDir, message] of refusals) {
      const refused = await build({ cwd: dir, outDir }).then(() => undefined, (error: Error) => error.message);
      expect(refused, outDir).toBe(message);
    }
    // A folder whose name the config's folder's name starts with is not a folder above it.
    expect((await build({ cwd: dir, outDir: "../ap" })).written).toBe(true);
  });

  it("recovery removes staging and retired folders whatever process's id they bear (an id is reused); a build replaces an empty folder", async () => {
    const running = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"]);
    await new Promise((resolve) => running.once("spawn", resolve));
    try {
      const dir = await tempDir();
      await writeTree(dir, { "skills/manifest.json": "bundle", [`.skills.tmp-${running.pid}-00000001/a`]: "", [`.skills.old-${running.pid}-00000002/a`]: "" });
      await recoverInterruptedBuild(join(dir, "skills"));
      expect(await readdir(dir)).toEqual(["skills"]);
    } finally {
      running.kill();
    }
    const empty = await project();
    await mkdir(join(empty, "dist/skills"), { recursive: true });
    expect((await build({ cwd: empty })).written).toBe(true);
  });

  it("a swap whose first rename fails throws that failure and moves nothing", async () => {
    const dir = await tempDir();
    // The retired folder's name is the outDir's and more: past the longest name a folder may hold.
    const outDir = join(dir, "o".repeat(240));
    await writeTree(dir, { [`${"o".repeat(240)}/manifest.json`]: "old", "staging/manifest.json": "new" });
    expect(() => swapIn(join(dir, "staging"), outDir)).toThrow(expect.objectContaining({ code: "ENAMETOOLONG" }));
    expect(await readFile(join(outDir, "manifest.json"), "utf8")).toBe("old");
    expect(await readFile(join(dir, "staging/manifest.json"), "utf8")).toBe("new");
  });
});

describe("in process: a build failing once staged, a mount point, a build while another writes, a link two folders down", () => {
  it("a build that fails once its staging folder is written (a staged file edited meanwhile) leaves the bundle as it was and nothing beside it", async () => {
    const dir = await project({ stage: true, location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }, { "skills/alpha/references/guide.md": "Guide.\n" });
    const outDir = join(dir, "dist/skills");
    expect((await build({ cwd: dir })).written).toBe(true);
    const before = await snapshot(outDir);
    // A new bundle to write, so that the old one staying in place shows.
    await writeTree(dir, { "skills/alpha/SKILL.md": skillMd("alpha", "Changed. Use when testing.") });
    const compiled = await check({ cwd: dir });
    // Edited after discovery hashed it: the bundle is written, then staging the file finds other bytes.
    const guide = join(dir, "skills/alpha/references/guide.md");
    await writeFile(guide, "Edited during the build.\n");
    await expect(writeBundle(outDir, bundleOf(compiled), stagedCopies(compiled), compiled.config)).rejects.toThrow(`${guide} changed while the bundle was built; run \`skills build\` again`);
    expect(await snapshot(outDir)).toEqual(before);
    expect(await transientSiblings(dir)).toEqual([]);
  });

  it.skipIf(!mayMount)("refuses an outDir that is a mount point (it cannot be renamed), naming a folder inside it; the bundle in it stays, nothing is left beside it", async () => {
    const dir = await project();
    const outDir = join(dir, "dist/skills");
    expect((await build({ cwd: dir })).written).toBe(true);
    const bundle = (await snapshot(outDir))!;
    await rm(outDir, { recursive: true });
    await mountTmpfs(outDir);
    for (const [path, text] of bundle) await writeTree(outDir, { [path]: text });
    await writeTree(dir, { "skills/alpha/SKILL.md": skillMd("alpha", "Changed. Use when testing.") });
    const message = `${outDir} cannot be renamed: it is a mount point (or in use). A build swaps a new bundle in by renaming the outDir, so that readers never see half of one; set \`outDir\` to a folder inside it, such as ${join(outDir, "skills")}.`;
    expect(await build({ cwd: dir }).then(() => undefined, (error: Error) => error.message)).toBe(message);
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(`skills: ${message}\n`);
    expect(await snapshot(outDir)).toEqual(bundle);
    expect(await transientSiblings(dir)).toEqual([]);
  });

  it.skipIf(!mayMount)("a stale lock that cannot be moved away (a mount point) is tried three times, then refused naming it; nothing is written", async () => {
    const dir = await project();
    const lock = join(dir, "dist/.skills.lock");
    await mountTmpfs(lock);
    expect(await build({ cwd: dir }).then(() => undefined, (error: Error) => error.message)).toBe(
      `another skills build is writing ${join(dir, "dist/skills")}; wait for it to finish, then build again. If no build is running, delete ${lock}.`,
    );
    expect(existsSync(join(dir, "dist/skills"))).toBe(false);
    expect(await transientSiblings(dir)).toEqual([".skills.lock"]);
  });

  it.skipIf(!mayMount)("a lock that cannot be linked into place (no inode left on the disk) fails the build with that reason, not as another build's lock; nothing is left", async () => {
    const dir = await project();
    // A tmpfs of two inodes, its own folder's and the lock candidate's: the lock's second name needs a third.
    await mountTmpfs(join(dir, "dist"), "nr_inodes=2");
    const message = await build({ cwd: dir }).then(() => undefined, (error: Error) => error.message);
    expect(message).toMatch(new RegExp(`^cannot write ${join(dir, "dist/skills")}: no space left on the device \\(link ${join(dir, "dist")}/\\.skills\\.lock-${process.pid}-[0-9a-f]{8}\\)$`));
    expect(await transientSiblings(dir)).toEqual([]);
  });

  it("while a build in process writes, another build finds its lock: refused naming this process; the first build's bundle is whole and nothing is left beside it", async () => {
    const dir = await project();
    const outDir = join(dir, "dist/skills");
    const compiled = await check({ cwd: dir });
    const bundle = bundleOf(compiled);
    // A body is read as the bundle is written, under the lock: the second build (the CLI) runs then, to its end.
    let second: ReturnType<typeof runCliSync> | undefined;
    const bodies = bundle.bodies.map((body) => ({ hash: body.hash, text: () => ((second ??= runCliSync(["build"], { cwd: dir })), body.text()) }));
    await writeBundle(outDir, { ...bundle, bodies }, [], compiled.config);
    expect(second?.code).toBe(2);
    expect(second?.stderr).toBe(`skills: another skills build (process ${process.pid}) is writing ${outDir}; wait for it to finish, then build again. If no build is running, delete ${join(dir, "dist/.skills.lock")}.\n`);
    expect(new Set(compareBundle(outDir, bundle).values())).toEqual(new Set(["same"]));
    expect(await transientSiblings(dir)).toEqual([]);
  });

  it("build --check does not follow a link that stands as the second of two folders (a staged skill's): its files are named changed, not read", async () => {
    const dir = await project({ stage: true, location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }, { "skills/alpha/references/guide.md": "Guide.\n" });
    expect((await build({ cwd: dir })).written).toBe(true);
    // The same files, through a link: followed, they would be found the same.
    await rename(join(dir, "dist/skills/skills/alpha"), join(dir, "elsewhere"));
    await symlink(join(dir, "elsewhere"), join(dir, "dist/skills/skills/alpha"));
    const notFollowed = "below skills/alpha, a symlink; not followed";
    expect((await build({ cwd: dir, check: true })).stale).toEqual([
      { path: "skills/alpha", state: "extra" },
      { path: "skills/alpha/SKILL.md", state: "changed", notFollowed },
      { path: "skills/alpha/references/guide.md", state: "changed", notFollowed },
    ]);
  });
});

describe("in process: folders nested past the path limit, a forged manifest's staged skill", () => {
  it("an outDir holding folders nested past the path limit fails the build in one line naming where, escaped; nothing is deleted", async () => {
    const dir = await project();
    // fs.rm cannot remove such a tree (it takes whole paths); rm -rf steps down into it.
    onTestFinished(() => void execFileSync("rm", ["-rf", dir]));
    const outDir = join(dir, "dist/skills");
    expect((await build({ cwd: dir })).written).toBe(true);
    const bundle = (await snapshot(outDir))!;
    deepTree(outDir, "deep\n\u001b[2K", "make");
    await writeTree(dir, { "skills/alpha/SKILL.md": skillMd("alpha", "Changed. Use when testing.") });
    const message = await build({ cwd: dir }).then(() => "", (error: Error) => error.message);
    const start = `cannot write ${outDir}: the path, or a name in it, is too long (scandir ${outDir}/deep\\n\\x1b[2K/`;
    expect(message.slice(0, start.length)).toBe(start);
    expect(message.slice(start.length)).toMatch(/^a{23}(\/a{23})+\)$/);
    const run = await runCli(["build"], { cwd: dir });
    expect(run).toEqual({ code: 2, stdout: "", stderr: `skills: ${message}\n` });
    expect(deepTree(outDir, "deep\n\u001b[2K", "read")).toBe("mine");
    for (const [path, text] of bundle) expect(await readFile(join(outDir, path), "utf8"), path).toBe(text);
    expect(await transientSiblings(dir)).toEqual([]);
  });

  it("a manifest whose agent names a staged skill its skills list lacks lists nothing for it: a file there, even one named undefined, refuses the build", async () => {
    const dir = await project({ stage: true, location: "relative", agents: { main: { skills: [{ root: "skills" }] } } });
    expect((await build({ cwd: dir })).written).toBe(true);
    const path = join(dir, "dist/skills/manifest.json");
    const manifest = JSON.parse(await readFile(path, "utf8"));
    manifest.agents.main.skills.push({ file: "skills/ghost/SKILL.md", staged: "skills/ghost" });
    // Named undefined: the `path` of anything in its place but a file's entry (a string has none).
    const tree = { "dist/skills/manifest.json": `${JSON.stringify(manifest, null, 2)}\n`, "dist/skills/skills/ghost/undefined": "mine" };
    await writeTree(dir, { ...tree, "skills/alpha/SKILL.md": skillMd("alpha", "Changed. Use when testing.") });
    const before = await snapshot(join(dir, "dist"));
    await expect(build({ cwd: dir })).rejects.toThrow("holds files its manifest does not list (skills/ghost/undefined)");
    expect(await snapshot(join(dir, "dist"))).toEqual(before);
  });
});
