import { cpSync } from "node:fs";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.js";
import { REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const CATALOGUES = join(REPO, "test/fixtures/vendored");

/** A project holding copies of the catalogue shapes under vendor/, and `config` as skills.config.json. */
async function vendored(config: object): Promise<string> {
  const dir = await tempDir();
  cpSync(join(CATALOGUES, "openai-skills"), join(dir, "vendor/openai-skills"), { recursive: true });
  cpSync(join(CATALOGUES, "awesome-copilot"), join(dir, "vendor/awesome-copilot"), { recursive: true });
  await writeFile(join(dir, "skills.config.json"), JSON.stringify(config));
  return dir;
}

const OPENAI = ["vendor/openai-skills/skills/.curated/gh-fix-ci/SKILL.md", "vendor/openai-skills/skills/.experimental/linear/SKILL.md", "vendor/openai-skills/skills/.system/skill-installer/SKILL.md"];
const NESTED = [
  "vendor/awesome-copilot/skills/qdrant-monitoring/debugging/SKILL.md",
  "vendor/awesome-copilot/skills/qdrant-monitoring/setup/SKILL.md",
  "vendor/awesome-copilot/skills/qdrant-scaling/scaling-data-volume/SKILL.md",
  "vendor/awesome-copilot/skills/qdrant-scaling/scaling-data-volume/horizontal-scaling/SKILL.md",
];

const hits = (result: Awaited<ReturnType<typeof check>>, code: string) => result.diagnostics.filter((diagnostic) => diagnostic.code === code);

describe("nothing under a root is skipped in silence", () => {
  it("openai/skills: each skill in a dot folder is named, with the include that builds it; the agent says it is empty", async () => {
    const dir = await vendored({ agents: { codex: { skills: [{ root: "vendor/openai-skills/skills" }] } } });
    const result = await check({ cwd: dir });
    expect(hits(result, "hidden-skill").map(({ file, severity }) => [file, severity])).toEqual(OPENAI.map((file) => [file, "warn"]));
    expect(hits(result, "hidden-skill")[0]).toMatchObject({
      message: "this skill is inside the dot folder .curated, which agents.codex.skills[0] does not descend into: it is not built",
      hint: 'To build it, give the source an `include` glob that names the folder: include: ["**", ".curated/**"]. To leave it out without this warning: exclude: [".curated/**"].',
    });
    expect(hits(result, "agent-empty")).toEqual([expect.objectContaining({ file: "skills.config.json", message: expect.stringContaining('agent "codex" has no skill: the only SKILL.md files found (3)') })]);
    expect(result.ok).toBe(true);
  });

  it("openai/skills: an include that names the dot folders builds their skills, and only the ones it names", async () => {
    const dir = await vendored({ agents: { codex: { skills: [{ root: "vendor/openai-skills/skills", include: ["**", ".curated/**", ".system/**"] }] } } });
    const result = await check({ cwd: dir });
    expect(result.agents[0]!.skills.map((skill) => skill.name)).toEqual(["gh-fix-ci", "skill-installer"]);
    expect(hits(result, "hidden-skill").map((diagnostic) => diagnostic.file)).toEqual([OPENAI[1]]);
    expect(result.diagnostics.map((diagnostic) => diagnostic.code)).toEqual(["hidden-skill"]);
  });

  it("awesome-copilot: each skill inside another skill's folder is named, with `nested`; `nested: true` builds each as its own", async () => {
    const dir = await vendored({ agents: { copilot: { skills: [{ root: "vendor/awesome-copilot/skills" }] } } });
    const result = await check({ cwd: dir });
    expect(result.agents[0]!.skills.map((skill) => skill.name)).toEqual(["qdrant-monitoring", "qdrant-scaling"]);
    expect(hits(result, "nested-skill").map((diagnostic) => diagnostic.file)).toEqual(NESTED);
    expect(hits(result, "nested-skill")[0]!.message).toBe(
      "this SKILL.md is inside the folder of the skill vendor/awesome-copilot/skills/qdrant-monitoring, so agents.copilot.skills[0] reads it as one of that skill's files, not as a skill of its own",
    );

    await writeFile(join(dir, "skills.config.json"), JSON.stringify({ agents: { copilot: { skills: [{ root: "vendor/awesome-copilot/skills", nested: true }] } } }));
    const nested = await check({ cwd: dir });
    expect(nested.agents[0]!.skills.map((skill) => skill.file)).toEqual([
      "vendor/awesome-copilot/skills/qdrant-scaling/scaling-data-volume/horizontal-scaling/SKILL.md",
      "vendor/awesome-copilot/skills/qdrant-monitoring/SKILL.md",
      NESTED[0],
      NESTED[1],
      "vendor/awesome-copilot/skills/qdrant-scaling/SKILL.md",
      NESTED[2],
    ]);
    expect(hits(nested, "nested-skill")).toEqual([]);
    // The enclosing skill's files are its own again: the nested skills' are theirs.
    expect(nested.agents[0]!.skills.find((skill) => skill.name === "qdrant-monitoring")!.files.map((file) => file.path)).toEqual(["SKILL.md"]);
  });

  it("a skill both sources leave out is reported once; one that another source builds is not reported", async () => {
    const dir = await vendored({
      agents: {
        flat: { skills: [{ root: "vendor/awesome-copilot/skills" }] },
        deep: { skills: [{ root: "vendor/awesome-copilot/skills", nested: true, exclude: ["qdrant-scaling/**"] }] },
      },
    });
    const result = await check({ cwd: dir });
    expect(hits(result, "nested-skill").map((diagnostic) => diagnostic.file)).toEqual([NESTED[2], NESTED[3]]);
  });

  it("`exclude` leaves a skill out without a warning, and a broken skill it excludes is not read", async () => {
    const dir = await vendored({
      agents: { codex: { skills: [{ root: "vendor", exclude: ["openai-skills/skills/.*/**", "awesome-copilot/skills/*/*", "awesome-copilot/skills/*/*/*", "broken"] }] } },
    });
    await writeTree(dir, { "vendor/broken/SKILL.md": "---\ndescription: [unclosed\n---\n" });
    const result = await check({ cwd: dir });
    expect(result.diagnostics).toEqual([]);
    expect(result.agents[0]!.skills.map((skill) => skill.name)).toEqual(["qdrant-monitoring", "qdrant-scaling"]);
  });

  it("an agent with no skill says why: no SKILL.md under its root, or patterns that select none of those found", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills/alpha/SKILL.md": skillMd("alpha"),
      "empty/README.md": "No skills yet.\n",
      "skills.config.json": JSON.stringify({ agents: { bare: { skills: [{ root: "empty" }] }, picky: { skills: [{ root: "skills", available: ["beta"] }] } } }),
    });
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stderr).toMatch(/warning +agent "bare" has no skill: no SKILL\.md was found +\[agent-empty\]/);
    expect(run.stderr).toMatch(/warning +agent "picky" has no skill: the patterns select none of the 1 valid skill found +\[agent-empty\]/);
  });

  it("an agent of context files alone (no sources) is not empty", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": JSON.stringify({ agents: { chat: { context: ["AGENTS.md"] } } }), "AGENTS.md": "# Be brief.\n" });
    expect((await check({ cwd: dir })).diagnostics).toEqual([]);
  });
});

describe("roots", () => {
  it("a mistyped root fails with exit 1 and the folder it was probably meant to be", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills/alpha/SKILL.md": skillMd("alpha"), "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skils" }] } } }) });
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/error +the root "skils" of agents\.main\.skills\[0\] does not exist\. Did you mean "skills"\? +\[root-missing\]/);
    // The missing root says why the agent is empty: no second finding.
    expect(run.stderr).not.toContain("agent-empty");
  });

  it("names a root as written: `~/skills`, not the path it resolves to", async () => {
    const dir = await tempDir();
    const home = await tempDir();
    await mkdir(join(home, "skills"));
    await writeTree(dir, { "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "~/skils" }] } } }) });
    const run = await runCli(["check", "--format", "json"], { cwd: dir, env: { HOME: home } });
    const [diagnostic] = JSON.parse(run.stdout).diagnostics;
    expect(diagnostic).toMatchObject({ code: "root-missing", file: "skills.config.json", message: 'the root "~/skils" of agents.main.skills[0] does not exist. Did you mean "~/skills"?' });
  });

  it("an optional root may be absent", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills/alpha/SKILL.md": skillMd("alpha"),
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }, { root: "~/skills-nowhere", optional: true }] } } }),
    });
    const result = await check({ cwd: dir });
    expect(result.diagnostics).toEqual([]);
    expect(result.ok).toBe(true);
  });
});

describe("knock-on findings", () => {
  it("a broken skill adds no pattern-unmatched for the patterns that would select it, and the count names every skill checked", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills/explain-code/SKILL.md": skillMd("explain-code"),
      "skills/release-notes/SKILL.md": "---\nname: release-notes\ndescription: Draft release notes. Use when asked: what changed?\n---\nBody\n",
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills", available: ["explain-code"], inline: ["release-*"] }], allow: ["explain-code", "release-notes"] } } }),
    });
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).not.toContain("pattern-unmatched");
    expect(run.stderr).toContain("1 error, 0 warnings; check failed (1 agent, 2 skills)");
  });
});

describe("one SKILL.md through two sources", () => {
  it("a root and a link to it (.claude/skills → .agents/skills) give the agent each skill once, without a duplicate warning", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      ".agents/skills/explain-code/SKILL.md": skillMd("explain-code"),
      ".agents/skills/release-notes/SKILL.md": skillMd("release-notes"),
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: ".agents/skills" }, { root: ".claude/skills", inline: ["release-notes"] }] } } }),
    });
    await mkdir(join(dir, ".claude"));
    await symlink(join("..", ".agents", "skills"), join(dir, ".claude", "skills"));
    const run = await runCli(["build"], { cwd: dir });
    expect(run).toMatchObject({ code: 0, stderr: "Wrote dist/skills (1 agent, 2 skills); 0 errors, 0 warnings\n" });
    const manifest = JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8"));
    // The first source's place and path; inlined, as the second source asks.
    expect(manifest.agents.main.skills.map(({ name, source, mode, file }: Record<string, unknown>) => [name, source, mode, file])).toEqual([
      ["explain-code", 0, "available", ".agents/skills/explain-code/SKILL.md"],
      ["release-notes", 0, "inline", ".agents/skills/release-notes/SKILL.md"],
    ]);
    // What is wrong with such a file is reported once, at the first source's path.
    await writeTree(dir, {
      ".agents/skills/explain-code/SKILL.md": `${skillMd("explain-code")}\nSee [the guide](guide.md).\n`,
      ".agents/skills/release-notes/SKILL.md": "---\nname: release-notes\ndescription: Draft release notes. Use when asked: what changed?\n---\nBody\n",
    });
    const broken = await runCli(["check", "--format", "json"], { cwd: dir });
    expect(broken.code).toBe(1);
    expect(JSON.parse(broken.stdout).diagnostics.map(({ code, file }: { code: string; file: string }) => [code, file])).toEqual([
      ["link-broken", ".agents/skills/explain-code/SKILL.md"],
      ["yaml-invalid", ".agents/skills/release-notes/SKILL.md"],
    ]);
  });
});

describe("skills check PATH… without a config", () => {
  it("checks every skill under the paths, in dot folders and inside other skills' folders too, with the default rules", async () => {
    const dir = await vendored({ agents: { unused: { skills: [{ root: "nowhere" }] } } });
    await writeTree(dir, { "vendor/team/broken/SKILL.md": "---\nname: broken\n---\n" });
    const run = await runCli(["check", "vendor/openai-skills", "vendor/awesome-copilot", "vendor/team", "--format", "json"], { cwd: dir });
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.agents).toEqual([expect.objectContaining({ id: "paths", skills: 9 })]);
    // The config in the folder is not read: its missing root is not reported.
    expect(report.diagnostics.map(({ code, file }: { code: string; file: string }) => [code, file])).toEqual([
      ["name-mismatch", NESTED[0]],
      ["name-mismatch", NESTED[1]],
      ["name-mismatch", NESTED[2]],
      ["name-mismatch", NESTED[3]],
      ["description-missing", "vendor/team/broken/SKILL.md"],
    ]);
    const pretty = await runCli(["check", "vendor/openai-skills/skills/.system"], { cwd: dir });
    expect(pretty).toMatchObject({ code: 0, stderr: "Checked 1 skill; 0 errors, 0 warnings\n" });
  });

  it("a SKILL.md path checks the skill of its folder, as a pre-commit hook hands over the files it changed", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills/explain-code/SKILL.md": skillMd("explain-code"),
      "skills/release-notes/SKILL.md": "---\nname: release-notes\ndescription: Draft release notes. Use when asked: what changed?\n---\nBody\n",
      "skills/other/SKILL.md": "---\nname: other\n---\n",
    });
    // Relative and absolute, as hooks give them; the skill beside them is not checked.
    const run = await runCli(["check", "skills/explain-code/SKILL.md", join(dir, "skills/release-notes/SKILL.md"), "--format", "json"], { cwd: dir });
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.agents).toEqual([expect.objectContaining({ id: "paths", skills: 1 })]);
    expect(report.diagnostics.map(({ code, file }: { code: string; file: string }) => [code, file])).toEqual([["yaml-invalid", "skills/release-notes/SKILL.md"]]);
    expect(await runCli(["check", "SKILL.md"], { cwd: join(dir, "skills/explain-code") })).toMatchObject({ code: 0, stderr: "Checked 1 skill; 0 errors, 0 warnings\n" });
    // A SKILL.md that is not there is a missing root, not its folder checked for nothing.
    const missing = await runCli(["check", "skills/gone/SKILL.md"], { cwd: dir });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/error +the path "skills\/gone\/SKILL\.md" does not exist +\[root-missing\]/);
  });

  it("a missing path fails with the folder it was probably meant to be; --config and paths do not go together", async () => {
    const dir = await vendored({ agents: { main: {} } });
    const missing = await runCli(["check", "vendr"], { cwd: dir });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/error +the path "vendr" does not exist\. Did you mean "vendor"\? +\[root-missing\]/);
    const both = await runCli(["check", "vendor", "--config", "skills.config.json"], { cwd: dir });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain("PATH arguments check folders without a config: give --config or paths, not both");
  });
});
