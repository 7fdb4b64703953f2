import { execFileSync } from "node:child_process";
import { chmod, mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli, skillMd, tempDir, writeTree, type CliRun } from "./helpers.js";

// Every filesystem failure is one line naming the path and what was being done, exit 2: no stack trace,
// no "internal error" (exit 70 is for bugs), the previous bundle intact and nothing half-written.

/** Permissions do not stop root: as root, the CLI runs as the unprivileged user "nobody" instead (undefined: as oneself). */
const UNPRIVILEGED = process.getuid?.() === 0 ? 65534 : undefined;

const CONFIG = { location: "relative", agents: { main: { skills: [{ root: "skills" }] } } };

async function project(config: object = CONFIG): Promise<string> {
  const dir = await tempDir();
  await chmod(dir, 0o755); // readable by the unprivileged user
  await writeTree(dir, { "skills.config.json": JSON.stringify(config), "skills/alpha/SKILL.md": skillMd("alpha") });
  return dir;
}

/** The failure is reported in one line, as the CLI's own words. */
function expectOneLine(run: CliRun, line: string | RegExp): void {
  expect(run.code, run.stderr).toBe(2);
  expect(run.stderr.trimEnd().split("\n")).toHaveLength(1);
  if (typeof line === "string") expect(run.stderr.trimEnd()).toBe(line);
  else expect(run.stderr.trimEnd()).toMatch(line);
  expect(run.stderr).not.toMatch(/internal error|\n\s+at /);
}

/** The bundle's files and their bytes, to show a failed build left it as it was. */
async function snapshotOf(outDir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(outDir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files[join(entry.parentPath, entry.name).slice(outDir.length + 1)] = await readFile(join(entry.parentPath, entry.name), "utf8");
  }
  return files;
}

/** Mounts run as root only, where the machine allows them; each test that needs one says so and skips otherwise. */
const mounts: string[] = [];
afterEach(() => {
  for (const target of mounts.splice(0).reverse()) execFileSync("umount", [target]);
});
function mount(args: string[], target: string): boolean {
  try {
    execFileSync("mount", [...args, target], { stdio: "ignore" });
  } catch {
    return false;
  }
  if (!args.some((arg) => arg.includes("remount"))) mounts.push(target);
  return true;
}

describe("writing the bundle", () => {
  it("no write permission beside the outDir (the lock): one line naming the outDir, the bundle intact", async () => {
    const dir = await project();
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const before = await snapshotOf(join(dir, "dist/skills"));
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Changed. Use when testing."));
    await chmod(join(dir, "dist"), 0o555);
    try {
      const run = await runCli(["build"], { cwd: dir, uid: UNPRIVILEGED });
      expectOneLine(run, new RegExp(`^skills: cannot write ${join(dir, "dist/skills")}: permission denied \\(open ${join(dir, "dist/.skills.lock-")}\\d+-[0-9a-f]+\\)$`));
    } finally {
      await chmod(join(dir, "dist"), 0o755);
    }
    expect(await snapshotOf(join(dir, "dist/skills"))).toEqual(before);
    expect(await readdir(join(dir, "dist"))).toEqual(["skills"]);
  });

  it("a read-only mount: one line, the bundle intact", async (context) => {
    const dir = await project();
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const before = await snapshotOf(join(dir, "dist/skills"));
    const dist = join(dir, "dist");
    if (!mount(["--bind", dist], dist) || !mount(["-o", "remount,ro,bind"], dist)) return context.skip("this machine does not allow a read-only bind mount (needs root)");
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Changed. Use when testing."));
    const run = await runCli(["build"], { cwd: dir });
    expectOneLine(run, new RegExp(`^skills: cannot write ${join(dir, "dist/skills")}: the file system is read-only \\(open ${join(dir, "dist/.skills.lock-")}\\d+-[0-9a-f]+\\)$`));
    expect(await snapshotOf(join(dir, "dist/skills"))).toEqual(before);
  });

  it("a full disk: one line, the bundle intact, no staging folder left", async (context) => {
    const dir = await project();
    const dist = join(dir, "dist");
    await mkdir(dist);
    if (!mount(["-t", "tmpfs", "-o", "size=64k", "tmpfs"], dist)) return context.skip("this machine does not allow a tmpfs mount (needs root)");
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const before = await snapshotOf(join(dist, "skills"));
    // A body larger than the whole disk: the manifest and the module each hold it.
    await writeTree(dir, { "skills/beta/SKILL.md": skillMd("beta", undefined, "Step.\n".repeat(20_000)) });
    const run = await runCli(["build"], { cwd: dir });
    expectOneLine(run, new RegExp(`^skills: cannot write ${join(dist, "skills")}: no space left on the device( \\(.*\\))?$`));
    expect(await snapshotOf(join(dist, "skills"))).toEqual(before);
    expect(await readdir(dist)).toEqual(["skills"]);
  });

  it("an outDir below a regular file: one line", async () => {
    const dir = await project();
    await writeFile(join(dir, "notes.txt"), "not a folder\n");
    const run = await runCli(["build", "--out", "notes.txt/skills"], { cwd: dir });
    expectOneLine(run, `skills: cannot write ${join(dir, "notes.txt/skills")}: a part of the path is a file, not a folder (mkdir ${join(dir, "notes.txt")})`);
    expect(await readFile(join(dir, "notes.txt"), "utf8")).toBe("not a folder\n");
  });

  it("an outDir that is a mount point: refused, saying why", async (context) => {
    const dir = await project();
    const outDir = join(dir, "dist/skills");
    await mkdir(outDir, { recursive: true });
    if (!mount(["-t", "tmpfs", "-o", "size=1m", "tmpfs"], outDir)) return context.skip("this machine does not allow a tmpfs mount (needs root)");
    const run = await runCli(["build"], { cwd: dir });
    expectOneLine(
      run,
      `skills: ${outDir} cannot be renamed: it is a mount point (or in use). A build swaps a new bundle in by renaming the outDir, so that readers never see half of one; set \`outDir\` to a folder inside it, such as ${join(outDir, "skills")}.`,
    );
    expect(await readdir(join(dir, "dist"))).toEqual(["skills"]);
    expect(await readdir(outDir)).toEqual([]);
  });

  it("an agent id of 65 characters is a config error; 64 builds (every file it names stays under 255 bytes)", async () => {
    const long = `a${"b".repeat(64)}`;
    const dir = await project({ location: "relative", agents: { [long]: { skills: [{ root: "skills" }] } } });
    const run = await runCli(["build"], { cwd: dir });
    expectOneLine(run, `skills: ${join(dir, "skills.config.json")}: agents.${long}: agent ids are at most 64 characters`);
    await writeFile(join(dir, "skills.config.json"), JSON.stringify({ location: "relative", agents: { [long.slice(1)]: { skills: [{ root: "skills" }] } } }));
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
  });
});

describe("the config file", () => {
  it("--config naming a folder: one line", async () => {
    const dir = await project();
    await mkdir(join(dir, "configs"));
    const run = await runCli(["build", "--config", "configs"], { cwd: dir });
    expectOneLine(run, `skills: ${join(dir, "configs")}: a folder, not a config file; name the config file itself`);
  });

  it("--config naming a FIFO: refused at once, not waited on", async () => {
    const dir = await project();
    execFileSync("mkfifo", [join(dir, "skills.config.ts")]);
    const started = performance.now();
    const run = await runCli(["check", "--config", "skills.config.ts"], { cwd: dir });
    expectOneLine(run, `skills: ${join(dir, "skills.config.ts")}: not a regular file (a FIFO, socket or device), so it is not read, not a config file; name the config file itself`);
    expect(performance.now() - started).toBeLessThan(5_000);
  });

  it("an unreadable config: one line", async () => {
    const dir = await project();
    await chmod(join(dir, "skills.config.json"), 0o000);
    const run = await runCli(["check"], { cwd: dir, uid: UNPRIVILEGED });
    expectOneLine(run, `skills: ${join(dir, "skills.config.json")}: cannot read the config file: permission denied`);
  });

  it("a skills.config.ts link to nothing: named as such, not 'no config found'", async () => {
    const dir = await project();
    await symlink("gone.ts", join(dir, "skills.config.ts"));
    const run = await runCli(["check"], { cwd: dir });
    expectOneLine(run, `skills: ${join(dir, "skills.config.ts")}: the config file is a symbolic link to gone.ts, which does not exist`);
  });

  it.each([
    ['{ "agents": { "__proto__": { "skills": [{ "root": "skills" }] } } }', ":1:15: the key \"__proto__\" is not allowed: it names a built-in part of JavaScript objects; rename it"],
    ['{ "agents": { "constructor": { "skills": [{ "root": "skills" }] } } }', ':1:15: the key "constructor" is not allowed: it names a built-in part of JavaScript objects; rename it'],
    ['{\n  "agents": {\n    "main": { "skills": [{ "root": "skills" }] },\n    "main": { "skills": [{ "root": "other" }] }\n  }\n}', ':4:5: the key "main" appears twice in one object; JSON keeps only the last, so remove one'],
    ['{ "outDir": "a", "agents": { "main": { "skills": [{ "root": "skills", "root": "x" }] } } }', ':1:71: the key "root" appears twice in one object; JSON keeps only the last, so remove one'],
  ])("a JSON config with a key JSON.parse would lose or misread: exit 2 naming it (%#)", async (text, message) => {
    const dir = await project();
    await writeFile(join(dir, "skills.config.json"), text);
    const run = await runCli(["check"], { cwd: dir });
    expectOneLine(run, `skills: ${join(dir, "skills.config.json")}${message}`);
  });

  it("the same key in two objects, and in a list, is no duplicate", async () => {
    const dir = await project({ location: "relative", agents: { main: { skills: [{ root: "skills" }] }, other: { skills: [{ root: "skills" }, { root: "skills" }] } } });
    expect((await runCli(["check"], { cwd: dir })).code).toBe(0);
  });

  it("a JSON config with a UTF-8 byte order mark loads", async () => {
    const dir = await project();
    await writeFile(join(dir, "skills.config.json"), `\uFEFF${JSON.stringify(CONFIG)}`);
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
  });

  it("a root that is a file: an error saying so, not 'does not exist' and an empty success", async () => {
    const dir = await project({ location: "relative", agents: { main: { skills: [{ root: "skills/alpha/SKILL.md" }] } } });
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/error +the root "skills\/alpha\/SKILL\.md" of agents\.main\.skills\[0\] is a file, not a folder +\[root-not-folder\]/);
    expect(await readdir(dir)).not.toContain("dist");
  });
});

describe("skills init", () => {
  it("beside a file named skills: one line, and nothing written (no half-made skills.config.ts)", async () => {
    const dir = await tempDir();
    await writeFile(join(dir, "skills"), "a file\n");
    await writeFile(join(dir, "package.json"), '{ "name": "app" }\n');
    const run = await runCli(["init"], { cwd: dir });
    expectOneLine(run, `skills init: cannot create skills/explain-code: a part of the path is a file, not a folder (mkdir ${join(dir, "skills/explain-code")}); nothing was written.`);
    expect((await readdir(dir)).sort()).toEqual(["package.json", "skills"]);
    expect(await readFile(join(dir, "package.json"), "utf8")).toBe('{ "name": "app" }\n');
  });

  it("beside a skills.config.ts link to nothing: names it, writes nothing through it", async () => {
    const dir = await tempDir();
    await symlink(join(dir, "elsewhere.ts"), join(dir, "skills.config.ts"));
    const run = await runCli(["init"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("skills init: skills.config.ts already exists; nothing was written.");
    expect((await readdir(dir)).sort()).toEqual(["skills.config.ts"]);
  });

  it("in a folder it cannot write: one line, nothing written", async () => {
    const dir = await tempDir();
    await chmod(dir, 0o555);
    try {
      const run = await runCli(["init"], { cwd: dir, uid: UNPRIVILEGED });
      expectOneLine(run, `skills init: cannot create skills/explain-code: permission denied (mkdir ${join(dir, "skills", "explain-code")}); nothing was written.`);
    } finally {
      await chmod(dir, 0o755);
    }
    expect(await readdir(dir)).toEqual([]);
  });
});

describe("leftovers of a swap that could not be cleaned up", () => {
  it("an outDir with files of another user's: the new bundle goes in, and the retired one it cannot delete never blocks a later build", async () => {
    const dir = await project();
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    // The unprivileged user may rename the outDir but not delete what is in its prompts/ folder.
    await chmod(join(dir, "dist"), 0o777);
    await chmod(join(dir, "dist/skills"), 0o777);
    if (UNPRIVILEGED === undefined) await chmod(join(dir, "dist/skills/prompts"), 0o555);
    try {
      for (const version of ["second", "third"]) {
        await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", `The ${version} version. Use when testing.`));
        const run = await runCli(["build"], { cwd: dir, uid: UNPRIVILEGED });
        expect(run.stderr).toContain("Wrote dist/skills");
        expect(run.code, run.stderr).toBe(0);
        expect(await readFile(join(dir, "dist/skills/prompts/main.txt"), "utf8")).toContain(`The ${version} version.`);
      }
    } finally {
      await chmod(join(dir, "dist/skills/prompts"), 0o755).catch(() => {});
    }
    expect((await readdir(join(dir, "dist"))).filter((name) => name.startsWith(".skills.old-")).length).toBeGreaterThan(0);
  });
});
