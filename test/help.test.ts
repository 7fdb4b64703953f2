import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { closest } from "../src/compile/suggest.js";
import { REPO, runCli, tempDir, writeTree } from "./helpers.js";

describe("--help", () => {
  it("lists every command, and every command has help with its options and examples", async () => {
    const dir = await tempDir();
    const top = await runCli(["--help"], { cwd: dir });
    expect(top.code).toBe(0);
    await expect(top.stdout).toMatchFileSnapshot("__snapshots__/help/skills.txt");

    const names = [...top.stdout.matchAll(/^ {2}([a-z]+) {2,}/gm)].map((match) => match[1]!);
    expect(names).toEqual(expect.arrayContaining(["init", "build", "check", "list"]));
    for (const name of names) {
      const run = await runCli([name, "--help"], { cwd: dir });
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(new RegExp(`^Usage: skills ${name}`));
      expect(run.stdout).toContain("\nExamples:\n");
      await expect(run.stdout).toMatchFileSnapshot(`__snapshots__/help/${name}.txt`);
      expect((await runCli(["help", name], { cwd: dir })).stdout).toBe(run.stdout);
    }
  });
});

describe("--version", () => {
  it("prints the package's version, as -v too, and exits 0", async () => {
    const dir = await tempDir();
    const { version } = JSON.parse(await readFile(join(REPO, "package.json"), "utf8"));
    for (const flag of ["--version", "-v"]) expect(await runCli([flag], { cwd: dir })).toMatchObject({ code: 0, stdout: `${version}\n`, stderr: "" });
  });
});

describe("mistyped commands and flags", () => {
  it("suggest the closest command, and exit 2", async () => {
    const dir = await tempDir();
    const run = await runCli(["lsit"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^skills: unknown command "lsit". Did you mean "list"\?\n\nUsage: skills <command>/);
  });

  it("suggest the closest flag of that command, and point at its help", async () => {
    const dir = await tempDir();
    const run = await runCli(["build", "--max-warning", "3"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe("skills build: unknown option --max-warning. Did you mean --max-warnings?\nRun `skills build --help` for its options and examples.\n");
  });

  it("suggest the closest value of --format", async () => {
    const dir = await tempDir();
    const run = await runCli(["check", "--format", "gihub"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('--format must be pretty, json, github or sarif (got "gihub"). Did you mean "github"?');
  });

  it("suggest the closest setting for a mistyped config key, at any level", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ outdir: "x", agents: { main: { budjet: 100, skills: [{ root: "skills", avaliable: ["*"], whatever: 1 }] } } }),
    });
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('outdir: unknown setting. Did you mean "outDir"?');
    expect(run.stderr).toContain('agents.main.budjet: unknown setting. Did you mean "budget"?');
    expect(run.stderr).toContain('agents.main.skills[0].avaliable: unknown setting. Did you mean "available"?');
    expect(run.stderr).toContain("agents.main.skills[0].whatever: unknown setting.\n");
  });

  it("suggest nothing for a word that is not a near miss", () => {
    expect(closest("bild", ["build", "check"])).toBe("build");
    expect(closest("stirct", ["strict", "format"])).toBe("strict");
    expect(closest("deploy", ["build", "check", "list", "init"])).toBeUndefined();
    expect(closest("x", ["init"])).toBeUndefined();
  });
});
