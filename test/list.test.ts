import { describe, expect, it } from "vitest";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const REVIEW = "Review a diff for bugs and missing tests. Use before merging.";
const COMMIT = "Write a commit message. Use when committing.";

/** Two agents over two roots: available and inline skills, a hidden one, one users cannot invoke. */
async function project(): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, {
    "skills.config.json": JSON.stringify({
      agents: {
        coding: {
          skills: [
            { root: "skills", available: ["*", "!git-commit"], inline: ["git-commit"] },
            { root: "team-skills" },
          ],
        },
        review: { skills: [{ root: "skills", available: ["code-review"] }], format: "markdown" },
      },
    }),
    "skills/code-review/SKILL.md": skillMd("code-review", REVIEW),
    "skills/git-commit/SKILL.md": skillMd("git-commit", COMMIT),
    "skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Deploy to production.\ndisable-model-invocation: true\n---\nSteps.\n",
    "team-skills/triage/SKILL.md": "---\nname: triage\ndescription: Label new issues.\nuser-invocable: false\n---\nSteps.\n",
  });
  return dir;
}

describe("skills list", () => {
  it("prints a table per agent: mode, source, description size, flags, catalogue and prompt size", async () => {
    const dir = await project();
    const run = await runCli(["list"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stderr).toBe("");
    await expect(run.stdout).toMatchFileSnapshot("__snapshots__/list.txt");
  });

  it("--format json gives the same facts for scripts; --agent narrows to one agent", async () => {
    const dir = await project();
    const run = await runCli(["list", "--format", "json", "--agent", "coding"], { cwd: dir });
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.agents.map((agent: { id: string }) => agent.id)).toEqual(["coding"]);
    expect(report).toMatchObject({ errors: 0, warnings: 0 });
    const [coding] = report.agents;
    expect(coding.skills).toEqual([
      { name: "code-review", mode: "available", source: 0, root: "skills", file: "skills/code-review/SKILL.md", descriptionCharacters: REVIEW.length, hidden: false, dropped: false, userInvocable: true },
      { name: "deploy", mode: "available", source: 0, root: "skills", file: "skills/deploy/SKILL.md", descriptionCharacters: "Deploy to production.".length, hidden: true, dropped: false, userInvocable: true },
      { name: "git-commit", mode: "inline", source: 0, root: "skills", file: "skills/git-commit/SKILL.md", descriptionCharacters: COMMIT.length, hidden: false, dropped: false, userInvocable: true },
      { name: "triage", mode: "available", source: 1, root: "team-skills", file: "team-skills/triage/SKILL.md", descriptionCharacters: "Label new issues.".length, hidden: false, dropped: false, userInvocable: false },
    ]);
    // The prompt holds the catalogue and the inline block; the catalogue alone leaves out the hidden skill.
    expect(coding.catalogueCharacters).toBeGreaterThan(0);
    expect(coding.promptCharacters).toBeGreaterThan(coding.catalogueCharacters);
    const build = await runCli(["build", "--format", "json"], { cwd: dir });
    const built = JSON.parse(build.stdout).agents.find((agent: { id: string }) => agent.id === "coding");
    expect(built.promptCharacters).toBe(coding.promptCharacters);
  });

  it("shows the catalogue against the agent's budget and names the skills the budget left out", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { small: { skills: [{ root: "skills" }], budget: 600 }, roomy: { skills: [{ root: "skills" }], budget: 2000 } } }),
      "skills/alpha/SKILL.md": skillMd("alpha"),
      "skills/beta/SKILL.md": skillMd("beta"),
    });
    const run = await runCli(["list"], { cwd: dir });
    expect(run.code).toBe(0);
    const json = JSON.parse((await runCli(["list", "--format", "json"], { cwd: dir })).stdout);
    const [small, roomy] = json.agents;
    expect(small.budget).toEqual({ limit: 600, unit: "characters", dropped: ["beta"] });
    expect(small.skills.map((skill: { dropped: boolean }) => skill.dropped)).toEqual([false, true]);
    expect(small.skills.map((skill: { name: string }) => skill.name)).toEqual(["alpha", "beta"]);
    expect(small.catalogueCharacters).toBeLessThanOrEqual(600);
    expect(roomy.budget).toEqual({ limit: 2000, unit: "characters", dropped: [] });
    const percent = (agent: { catalogueCharacters: number; budget: { limit: number } }) => Math.round((agent.catalogueCharacters * 100) / agent.budget.limit);
    expect(run.stdout).toContain(`small: 2 skills, catalogue ${small.catalogueCharacters} characters (${percent(small)}% of its 600 budget)`);
    expect(run.stdout).toContain("  left out of the catalogue by the budget (still invoked by name): beta\n");
    expect(run.stdout).toContain(`roomy: 2 skills, catalogue ${roomy.catalogueCharacters} characters (${percent(roomy)}% of its 2000 budget)`);
    expect(run.stderr).toBe("0 errors, 1 warning; run `skills check` for details.\n");
  });

  it("an unknown --agent is a usage error that suggests the closest id", async () => {
    const dir = await project();
    const run = await runCli(["list", "--agent", "codng"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('no agent "codng" in skills.config.json (it has coding, review). Did you mean "coding"?');
  });

  it("shows control and bidi characters in names and sources escaped, the columns aligned on what is shown", async () => {
    const dir = await tempDir();
    // ESC [2K would erase the row, U+202E reverse what follows; each name is its folder's, so only name-invalid warns.
    const root = "team\u202eskills";
    const skill = (name: string, description: string) => `---\nname: ${JSON.stringify(name)}\ndescription: ${JSON.stringify(description)}\n---\nBody\n`;
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root }], budget: 600 } } }),
      [`${root}/new\nline\u001b[2K\u202e/SKILL.md`]: skill("new\nline\u001b[2K\u202e", "Ships \u001b[2K safely"),
      [`${root}/x\u202ey/SKILL.md`]: skill("x\u202ey", "Second."),
    });
    const run = await runCli(["list"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stdout.split("\n")).toEqual([
      "main: 2 skills, catalogue 527 characters (88% of its 600 budget), prompt 527 characters",
      "  name                    mode       source            description  flags",
      "  new\\nline\\x1b[2K\\u202e  available  team\\u202eskills  17 chars",
      "  x\\u202ey                available  team\\u202eskills  7 chars      dropped by the budget",
      "  left out of the catalogue by the budget (still invoked by name): x\\u202ey",
      "",
    ]);
    expect(run.stderr).toBe("0 errors, 4 warnings; run `skills check` for details.\n");
  });

  it("lists what is valid and says on stderr that skills with errors were left out", async () => {
    const dir = await project();
    await writeTree(dir, { "skills/broken/SKILL.md": "---\nname: broken\n---\n" });
    const run = await runCli(["list", "--agent", "review"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("code-review");
    expect(run.stdout).not.toContain("broken");
    expect(run.stderr).toBe("1 error, 0 warnings (skills with errors are left out); run `skills check` for details.\n");
  });
});
