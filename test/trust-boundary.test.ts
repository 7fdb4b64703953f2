import { execFileSync } from "node:child_process";
import { readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

/** What a file outside the project holds; it must appear in no output. */
const SECRET = "AWS_SECRET_ACCESS_KEY=outside-the-roots-7f3a";

/**
 * A built project with a secret beside it (outside the project folder): `skills.config.json`, two skills, the
 * bundle in dist/skills. With `stage`, the skills' files are copied into the bundle.
 */
async function builtProject(options: { stage?: boolean } = {}): Promise<{ dir: string; secret: string }> {
  const base = await tempDir();
  const dir = join(base, "project");
  const secret = join(base, "secret.env");
  await writeTree(base, {
    "secret.env": `${SECRET}\n{"schemaVersion": "${SECRET}"\n`,
    "project/skills.config.json": JSON.stringify({ location: "relative", ...(options.stage ? { stage: true } : {}), agents: { main: { skills: [{ root: "skills" }] } } }),
    "project/skills/alpha/SKILL.md": skillMd("alpha"),
    "project/skills/alpha/references/guide.md": "# Guide\n",
    "project/skills/beta/SKILL.md": skillMd("beta"),
  });
  const run = await runCli(["build"], { cwd: dir });
  expect(run.code, run.stderr).toBe(0);
  return { dir, secret };
}

async function replaceWithLink(dir: string, path: string, target: string): Promise<void> {
  await rm(join(dir, path), { recursive: true, force: true });
  await writeTree(dir, { [path]: { link: target } });
}

describe("build --check and diff never follow a link in the outDir or read a special file", () => {
  it("a prompt replaced by a link to a secret outside the project: stale, reported as a link, the secret printed nowhere", async () => {
    const { dir, secret } = await builtProject();
    await replaceWithLink(dir, "dist/skills/prompts/main.txt", secret);
    for (const format of ["pretty", "github", "json"]) {
      const run = await runCli(["build", "--check", "--format", format], { cwd: dir });
      expect(run.code).toBe(1);
      expect(run.stdout + run.stderr).not.toContain("outside-the-roots");
      if (format === "json") expect(JSON.parse(run.stdout).stale).toEqual([{ path: "prompts/main.txt", state: "changed", notFollowed: "a symlink; not followed" }]);
      else expect(run.stderr).toContain("  changed  prompts/main.txt (a symlink; not followed)");
    }
  });

  it("a folder of the bundle replaced by a link to an outside folder: its files are not read", async () => {
    const { dir } = await builtProject();
    await writeTree(dir, { "../outside/main.txt": `${SECRET}\n` });
    await replaceWithLink(dir, "dist/skills/prompts", "../../../outside");
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).not.toContain("outside-the-roots");
    expect(run.stderr).toContain("  changed  prompts/main.txt (below prompts, a symlink; not followed)");
  });

  it("a staged file replaced by a link: reported as a link, not hashed", async () => {
    const { dir, secret } = await builtProject({ stage: true });
    await replaceWithLink(dir, "dist/skills/skills/alpha/references/guide.md", secret);
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("  changed  skills/alpha/references/guide.md (a symlink; not followed)");
  });

  it("a FIFO in place of a prompt does not hang --check", { timeout: 15_000 }, async () => {
    const { dir } = await builtProject();
    await rm(join(dir, "dist/skills/prompts/main.txt"));
    execFileSync("mkfifo", [join(dir, "dist/skills/prompts/main.txt")]);
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("  changed  prompts/main.txt (a FIFO; not read)");
  });

  it("an outDir that is a link: --check refuses it (exit 2) and lists nothing behind it", async () => {
    const { dir } = await builtProject();
    await writeTree(dir, { "../outside/private-name.txt": SECRET });
    await replaceWithLink(dir, "dist/skills", "../../outside");
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("is a symbolic link; not followed");
    expect(run.stdout + run.stderr).not.toContain("private-name");
  });

  it("skills diff: a manifest.json that links to a file outside is not read, in a folder or named", async () => {
    const { dir, secret } = await builtProject();
    await writeTree(dir, { "base/manifest.json": await readFile(join(dir, "dist/skills/manifest.json"), "utf8") });
    await replaceWithLink(dir, "dist/skills/manifest.json", secret);
    for (const after of ["dist/skills", "dist/skills/manifest.json"]) {
      const run = await runCli(["diff", "base", after], { cwd: dir });
      expect(run.code).toBe(2);
      expect(run.stderr.trim()).toBe("skills diff: dist/skills/manifest.json is a symlink; not followed. Give the bundle folder or manifest.json it points to.");
    }
    expect(await readdir(join(dir, "dist/skills"))).toContain("manifest.json");
  });
});
