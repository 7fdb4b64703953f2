import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, readlink, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { build } from "../src/api.js";
import { recoverInterruptedBuild, swapIn } from "../src/bundle/emit.js";
import { CLI, holdLock, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

/** Kills of `skills build` at random moments: about 30 in `npm test`, FUZZ_RUNS / 100 under `npm run fuzz`. */
const KILLS = Math.max(30, Math.round(Number(process.env.FUZZ_RUNS ?? 0) / 100));

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
      // The programmatic API refuses it the same way.
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
