import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

async function project(tree: Record<string, string>, config: object = { agents: { main: { skills: [{ root: "skills" }] } } }) {
  const dir = await tempDir();
  await writeTree(dir, { "skills.config.json": JSON.stringify(config), ...tree });
  return dir;
}

describe("skills check", () => {
  it("exits 1 on a missing description and prints file:line:col, code and message", async () => {
    const dir = await project({ "skills/good/SKILL.md": skillMd("good"), "skills/bad/SKILL.md": "---\nname: bad\n---\nBody\n" });
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("skills/bad/SKILL.md\n  1:1  error    no `description` in the frontmatter  [description-missing]\n    1 | ---\n      | ^\n");
    expect(run.stderr).toContain("1 error, 0 warnings; check failed (1 agent, 2 skills)");
    expect(run.stdout).toBe("");
  });

  it("prints GitHub workflow commands with --format github and by default under GitHub Actions", async () => {
    const dir = await project({ "skills/bad/SKILL.md": "---\nname: bad\n---\nBody\n" });
    const explicit = await runCli(["check", "--format", "github"], { cwd: dir });
    const implicit = await runCli(["check"], { cwd: dir, env: { GITHUB_ACTIONS: "true" } });
    const line = "::error file=skills/bad/SKILL.md,line=1,col=1,title=description-missing::no `description` in the frontmatter%0AAdd `description:` saying what the skill does and when to use it; agents choose skills by it.";
    expect(explicit.stderr.trim()).toBe(line);
    expect(implicit.stderr.trim()).toBe(line);
    expect(explicit.code).toBe(1);
  });

  it("prints one parseable JSON document on stdout with --format json", async () => {
    const dir = await project({ "skills/good/SKILL.md": skillMd("good"), "skills/bad/SKILL.md": "---\nname: bad\n---\n" });
    const run = await runCli(["check", "--format", "json"], { cwd: dir });
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ command: "check", ok: false, errors: 1, warnings: 0, agents: [{ id: "main", skills: 1 }] });
    expect(report.diagnostics[0]).toEqual({
      code: "description-missing",
      severity: "error",
      file: "skills/bad/SKILL.md",
      line: 1,
      column: 1,
      message: "no `description` in the frontmatter",
      hint: "Add `description:` saying what the skill does and when to use it; agents choose skills by it.",
    });
    expect(run.stderr).toBe("");
  });

  it("exits 0 with warnings, and 1 with --strict", async () => {
    const dir = await project({ "skills/folder/SKILL.md": skillMd("other-name") });
    expect((await runCli(["check"], { cwd: dir })).code).toBe(0);
    const strict = await runCli(["check", "--strict"], { cwd: dir });
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain("[name-mismatch]");
  });
});

describe("config errors", () => {
  it("exit 2 naming the file and the field path, without a stack trace", async () => {
    const dir = await project({}, { agents: { coding: { skills: [{ root: "skills" }, { root: 42 }] } } });
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(`skills: ${join(dir, "skills.config.json")}: agents.coding.skills[1].root: expected string, received number`);
  });

  it("exit 2 when no config is found, pointing at skills init", async () => {
    const dir = await tempDir();
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("no config found");
    expect(run.stderr).toContain("skills init");
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it("exit 2 on an unknown flag or command", async () => {
    const dir = await tempDir();
    const flag = await runCli(["check", "--stirct"], { cwd: dir });
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain("unknown option --stirct. Did you mean --strict?");
    const command = await runCli(["bild"], { cwd: dir });
    expect(command.code).toBe(2);
    expect(command.stderr).toContain('unknown command "bild". Did you mean "build"?');
  });
});

describe("skills build", () => {
  it("writes manifest.json and prompts/<agent>.txt", async () => {
    const dir = await project({ "skills/alpha/SKILL.md": skillMd("alpha") }, { location: "relative", agents: { main: { skills: [{ root: "skills" }] } } });
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain("Wrote dist/skills (1 agent, 1 skill); 0 errors, 0 warnings");
    const prompt = await readFile(join(dir, "dist/skills/prompts/main.txt"), "utf8");
    expect(prompt).toContain("<location>skills/alpha/SKILL.md</location>");
    const manifest = JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8"));
    expect(manifest.agents.main.skills).toEqual([{ name: "alpha", mode: "available", source: 0, file: "skills/alpha/SKILL.md", listed: true }]);
  });

  it("writes nothing on an error, and the previous bundle stays as it was", async () => {
    const dir = await project({ "skills/alpha/SKILL.md": skillMd("alpha") });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const before = await readFile(join(dir, "dist/skills/manifest.json"), "utf8");
    await writeFile(join(dir, "skills/alpha/SKILL.md"), "---\nname: alpha\n---\n");
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("nothing written");
    expect(await readFile(join(dir, "dist/skills/manifest.json"), "utf8")).toBe(before);
  });

  it("refuses to replace a folder it did not write, and deletes nothing", async () => {
    const dir = await project({ "skills/alpha/SKILL.md": skillMd("alpha"), "dist/skills/notes.txt": "mine" });
    const run = await runCli(["build"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("was not written by skillbake");
    expect(await readdir(join(dir, "dist/skills"))).toEqual(["notes.txt"]);
  });
});

describe("colour", () => {
  it("is off without a TTY and with NO_COLOR, on with FORCE_COLOR", async () => {
    const dir = await project({ "skills/bad/SKILL.md": "---\nname: bad\n---\n" });
    const plain = await runCli(["check"], { cwd: dir, env: { NO_COLOR: undefined } });
    const forced = await runCli(["check"], { cwd: dir, env: { NO_COLOR: undefined, FORCE_COLOR: "1" } });
    expect(plain.stderr).not.toContain("\u001b[");
    expect(forced.stderr).toContain("\u001b[31m");
  });
});
