import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { chmod, lstat, readFile, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, tempDir, writeTree } from "./helpers.js";

describe("skills init", () => {
  it("scaffolds a config and an example skill that build cleanly, adds the script and prints the next steps", async () => {
    const dir = await tempDir();
    // Four-space indentation and an existing script: both must survive.
    await writeFile(dir, "package.json", `{\n    "name": "app",\n    "scripts": {\n        "test": "vitest"\n    }\n}\n`);
    const run = await runCli(["init"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    await expect(run.stdout).toMatchFileSnapshot("__snapshots__/init.txt");
    await expect(await readFile(join(dir, "skills.config.ts"), "utf8")).toMatchFileSnapshot("__snapshots__/init-skills.config.ts.txt");
    await expect(await readFile(join(dir, "skills/explain-code/SKILL.md"), "utf8")).toMatchFileSnapshot("__snapshots__/init-SKILL.md.txt");
    expect(await readFile(join(dir, "package.json"), "utf8")).toBe(
      `{\n    "name": "app",\n    "scripts": {\n        "test": "vitest",\n        "skills:build": "skills build"\n    }\n}\n`,
    );

    // What init writes is a working project: no error, no warning, one agent with the example skill.
    const check = await runCli(["check", "--strict"], { cwd: dir });
    expect(check.stderr).toBe("Checked 1 agent, 1 skill; 0 errors, 0 warnings\n");
    expect(check.code).toBe(0);
  });

  it("works without a package.json and creates none", async () => {
    const dir = await tempDir();
    const run = await runCli(["init"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stdout).not.toContain("package.json");
    expect((await readdir(dir)).sort()).toEqual(["skills", "skills.config.ts"]);
  });

  it("keeps an existing skills:build script", async () => {
    const dir = await tempDir();
    const packageJson = `{\n  "scripts": {\n    "skills:build": "skills build --strict"\n  }\n}\n`;
    await writeFile(dir, "package.json", packageJson);
    const run = await runCli(["init"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('Kept the existing "skills:build" script in package.json');
    expect(await readFile(join(dir, "package.json"), "utf8")).toBe(packageJson);
  });

  it("writes nothing and exits 2 when a config or the example skill exists, naming each", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": "{}", "skills/explain-code/SKILL.md": "mine", "package.json": "{}\n" });
    const run = await runCli(["init"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain("skills init: skills.config.json, skills/explain-code/SKILL.md already exist; nothing was written.");
    expect(existsSync(join(dir, "skills.config.ts"))).toBe(false);
    expect(await readFile(join(dir, "skills/explain-code/SKILL.md"), "utf8")).toBe("mine");
    expect(await readFile(join(dir, "package.json"), "utf8")).toBe("{}\n");
  });

  it("keeps package.json's mode: a private one stays private", async () => {
    const dir = await tempDir();
    await writeFile(dir, "package.json", `{ "name": "app" }\n`);
    await chmod(join(dir, "package.json"), 0o600);
    expect((await runCli(["init"], { cwd: dir })).code).toBe(0);
    expect((await stat(join(dir, "package.json"))).mode & 0o777).toBe(0o600);
    expect(JSON.parse(await readFile(join(dir, "package.json"), "utf8")).scripts).toEqual({ "skills:build": "skills build" });
  });

  it("leaves a package.json that is a link or a FIFO alone: not written through, not replaced, not waited on", { timeout: 30_000 }, async () => {
    const outside = await tempDir();
    await writeFile(outside, "package.json", `{ "name": "elsewhere" }\n`);
    const link = await tempDir();
    await writeTree(link, { "package.json": { link: join(outside, "package.json") } });
    const fifo = await tempDir();
    execFileSync("mkfifo", [join(fifo, "package.json")]);
    for (const [dir, what] of [
      [link, "a symbolic link"],
      [fifo, "not a regular file"],
    ] as const) {
      const run = await runCli(["init"], { cwd: dir });
      expect(run.code, run.stderr).toBe(0);
      expect(run.stdout).toContain(`Left package.json as it is (${what}): add "skills:build": "skills build" to its scripts yourself`);
      expect(existsSync(join(dir, "skills.config.ts"))).toBe(true);
    }
    expect((await lstat(join(link, "package.json"))).isSymbolicLink()).toBe(true);
    expect(await readFile(join(outside, "package.json"), "utf8")).toBe(`{ "name": "elsewhere" }\n`);
    expect((await lstat(join(fifo, "package.json"))).isFIFO()).toBe(true);
  });

  it("writes nothing and exits 2 when package.json is not valid JSON", async () => {
    const dir = await tempDir();
    await writeFile(dir, "package.json", "{ oops");
    const run = await runCli(["init"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("package.json is not a valid JSON object");
    expect(await readdir(dir)).toEqual(["package.json"]);
  });
});

async function writeFile(dir: string, path: string, text: string): Promise<void> {
  await writeTree(dir, { [path]: text });
}
