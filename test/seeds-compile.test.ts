// Seed parity, compile side (issue 16): each case is a behaviour one of the five seed designs asks for, built from
// the seed's own example where it gives one.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { runCli, tempDir, writeTree, type CliRun } from "./helpers.js";

interface Entry {
  name: string;
  description: string;
  mode: string;
  listed: boolean;
  fields: Record<string, unknown>;
}
interface BundleModule {
  getPrompt(agent: string): string;
  getSkill(agent: string, name: string): Entry;
  renderSkill(agent: string, name: string, args?: string): string;
  listUserInvocable(agent: string): readonly Entry[];
  skillTool(agent: string): { description: string; parameters: { properties: { skill: { enum: string[] } } } } | null;
  agents: Record<string, { skills: readonly Entry[] }>;
}
interface Diagnostic {
  code: string;
  severity: string;
  file?: string;
  line?: number;
  message: string;
}

/** Writes the tree, runs `skills build --format json` in it, and imports the bundle when one was written. */
async function bake(tree: Record<string, string>, args: string[] = [], env: Record<string, string | undefined> = {}) {
  const dir = await tempDir();
  await writeTree(dir, tree);
  const run: CliRun = await runCli(["build", "--format", "json", ...args], { cwd: dir, env: { SKILLS_PROMPT_CHAR_BUDGET: undefined, ...env } });
  const diagnostics = (JSON.parse(run.stdout) as { diagnostics: Diagnostic[] }).diagnostics;
  const built = run.code === 0 || (run.code === 1 && args.includes("--strict"));
  const module = run.code === 0 ? ((await import(pathToFileURL(join(dir, "dist/skills/index.js")).href + `?${Date.now()}`)) as BundleModule) : undefined;
  const manifest = run.code === 0 ? JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8")) : undefined;
  return { dir, run, diagnostics, codes: diagnostics.map((diagnostic) => diagnostic.code), module: built ? module : undefined, manifest };
}

const config = (agents: Record<string, unknown>, extra: Record<string, unknown> = {}) => JSON.stringify({ location: "relative", ...extra, agents });

describe('1. yaml: "recover" reads every top-level field and never guesses who may invoke a skill', () => {
  // A manual-only skill (seed 001's `disable-model-invocation: true`) whose description has an unquoted ": ".
  const deploy = "---\nname: deploy\ndescription: Deploy the app. Use when: the user types /deploy\ndisable-model-invocation: true\nuser-invocable: true\nargument-hint: \"[environment]\"\nallowed-tools: [Bash, Read]\nlicense: MIT\nversion: \"1.2\"\n---\n\nDeploy to $ARGUMENTS.\n";
  const review = "---\nname: review\ndescription: Reviews code.\n---\n\nReview it.\n";

  it("a manual-only skill stays out of the catalogue and the tool's enum, and keeps its other fields", async () => {
    const { run, codes, module } = await bake({
      "skills.config.json": config({ main: { skills: [{ root: "skills" }] } }, { yaml: "recover" }),
      "skills/deploy/SKILL.md": deploy,
      "skills/review/SKILL.md": review,
    });
    expect(run.code).toBe(0);
    expect(codes).toEqual(["yaml-recovered"]);
    expect(module!.getPrompt("main")).not.toContain("deploy");
    expect(module!.skillTool("main")!.parameters.properties.skill.enum).toEqual(["review"]);
    expect(module!.getSkill("main", "deploy").fields).toMatchObject({
      "disable-model-invocation": true,
      "user-invocable": true,
      "argument-hint": "[environment]",
      "allowed-tools": ["Bash", "Read"],
      license: "MIT",
      version: "1.2",
    });
    expect(module!.listUserInvocable("main").map((skill) => skill.name)).toEqual(["deploy", "review"]);
  });

  it("an invocation field it cannot read makes the skill an error, not a model-visible skill", async () => {
    for (const line of ["disable-model-invocation: true: for now", "disable-model-invocation: yes please", "description2: x\n  disable-model-invocation: true"]) {
      const { run, diagnostics } = await bake({
        "skills.config.json": config({ main: { skills: [{ root: "skills" }] } }, { yaml: "recover" }),
        "skills/deploy/SKILL.md": `---\nname: deploy\ndescription: Deploy. Use when: asked\n${line}\n---\n\nDeploy.\n`,
        "skills/review/SKILL.md": review,
      });
      expect(run.code, line).toBe(1);
      expect(diagnostics.find((diagnostic) => diagnostic.code === "yaml-invalid")?.message, line).toContain("cannot read `disable-model-invocation`");
    }
  });
});

describe("9. an agent without skills", () => {
  it("seed 002's chat agent: context files only, no skill, no tool", async () => {
    const { run, module, manifest } = await bake({
      "skills.config.json": config({
        coding: { skills: [{ root: "skills" }] },
        chat: { context: ["AGENTS.md"], description: "General chat, no skills." },
      }),
      "AGENTS.md": "# Project\n\nBe brief.\n",
      "skills/review/SKILL.md": "---\nname: review\ndescription: Reviews code.\n---\n\nReview it.\n",
    });
    expect(run.code, run.stderr).toBe(0);
    expect(module!.getPrompt("chat")).toBe("# Project\n\nBe brief.");
    expect(module!.agents.chat!.skills).toEqual([]);
    expect(module!.skillTool("chat")).toBeNull();
    expect(manifest.agents.chat.skills).toEqual([]);
  });
});

describe("4. namespaced names", () => {
  // Seed 002 names skills by namespace: `triage/issue-triage`.
  const tree = (skills: Record<string, unknown>) => ({
    "skills.config.json": config({ main: { skills: [{ root: "skills", ...skills }] } }),
    "skills/triage/issue-triage/SKILL.md": "---\nname: triage/issue-triage\ndescription: Triages new issues.\n---\n\nLabel it.\n",
    "skills/review/SKILL.md": "---\nname: review\ndescription: Reviews code.\n---\n\nReview it.\n",
  });

  it("`*` alone (the default) selects every name, the namespaced one included; other globs stop at /", async () => {
    for (const skills of [{}, { available: ["*"] }]) {
      const { run, module, diagnostics } = await bake(tree(skills));
      expect(run.code).toBe(0);
      expect(module!.agents.main!.skills.map((skill) => skill.name)).toEqual(["review", "triage/issue-triage"]);
      // The name is not in the Agent Skills format: said, with the namespace glob that selects it.
      expect(diagnostics.find((diagnostic) => diagnostic.code === "name-invalid")).toMatchObject({ hint: expect.stringContaining('"triage/*"') });
    }
    // Other globs treat / as the namespace separator.
    const inside = await bake(tree({ available: ["triage/*"] }));
    expect(inside.module!.agents.main!.skills.map((skill) => skill.name)).toEqual(["triage/issue-triage"]);
    const top = await bake(tree({ available: ["*-triage", "r*"] }));
    expect(top.module!.agents.main!.skills.map((skill) => skill.name)).toEqual(["review"]);
    expect(top.codes).toContain("pattern-unmatched");
  });
});

describe('10. duplicates: "last" inside one root', () => {
  // Seeds 003 and 004: of two skills of one name, the last discovered wins.
  const tree = (duplicates?: string) => ({
    "skills.config.json": config({ main: { skills: [{ root: "skills" }], ...(duplicates ? { duplicates } : {}) } }),
    "skills/a-builtin/pdf/SKILL.md": "---\nname: pdf\ndescription: Built-in PDF skill.\n---\n\nOld.\n",
    "skills/b-user/pdf/SKILL.md": "---\nname: pdf\ndescription: The user's PDF skill.\n---\n\nNew.\n",
  });

  it("the last in path order wins, and duplicate-name names the winner", async () => {
    const last = await bake(tree("last"));
    expect(last.module!.getSkill("main", "pdf").description).toBe("The user's PDF skill.");
    expect(last.diagnostics.find((diagnostic) => diagnostic.code === "duplicate-name")).toMatchObject({ file: "skills/a-builtin/pdf/SKILL.md", message: expect.stringContaining("skills/b-user/pdf/SKILL.md") });
    for (const duplicates of [undefined, "first"]) expect((await bake(tree(duplicates))).module!.getSkill("main", "pdf").description).toBe("Built-in PDF skill.");
  });
});

describe("7. seed 001's canonical frontmatter, and the defaults it implies", () => {
  const canonical = "---\nname: code-review\ndescription: Reviews a pull request for bugs and style.\ncontext: inline\nagent: general\nmodel: default\n---\n\nReview $ARGUMENTS.\n";

  it("is clean under check --strict", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": config({ main: { skills: [{ root: "skills" }] } }), "skills/code-review/SKILL.md": canonical });
    const run = await runCli(["check", "--strict"], { cwd: dir });
    expect(run.stderr).toContain("0 errors, 0 warnings");
    expect(run.code).toBe(0);
  });

  it("every skill's fields carry context, agent, user-invocable and disable-model-invocation, defaulted", async () => {
    const { module, manifest } = await bake({
      "skills.config.json": config({ main: { skills: [{ root: "skills" }] } }),
      "skills/code-review/SKILL.md": canonical,
      "skills/plain/SKILL.md": "---\nname: plain\ndescription: Sets nothing.\n---\n\nBody.\n",
    });
    const defaults = { context: "inline", agent: "general", "user-invocable": true, "disable-model-invocation": false };
    expect(module!.getSkill("main", "plain").fields).toEqual(defaults);
    expect(module!.getSkill("main", "code-review").fields).toEqual({ ...defaults, model: "default" });
    expect(manifest.skills.map((skill: { fields: unknown }) => skill.fields)).toEqual([{ ...defaults, model: "default" }, defaults]);
  });
});

describe("2 and 3. budgets", () => {
  const long = (name: string) => `---\nname: ${name}\ndescription: ${`${name} does a careful job. `.repeat(20).trim()}\n---\n\nSteps for ${name} with $ARGUMENTS.\n`;
  const skills = { "skills/alpha/SKILL.md": long("alpha"), "skills/beta/SKILL.md": long("beta"), "skills/gamma/SKILL.md": long("gamma") };
  const agent = (budget?: unknown) => ({ main: { skills: [{ root: "skills" }], ...(budget === undefined ? {} : { budget }) } });

  it("seed 001: a budget trims only the listing; a dropped skill is still found, rendered and user-invocable", async () => {
    const { module, manifest, diagnostics } = await bake({ "skills.config.json": config(agent(1500)), ...skills });
    const prompt = module!.getPrompt("main");
    expect(prompt).toContain("<name>alpha</name>");
    expect(prompt).not.toContain("<name>gamma</name>");
    expect(diagnostics.find((diagnostic) => diagnostic.code === "budget-exceeded")?.message).toContain("gamma");
    expect(module!.getSkill("main", "gamma").listed).toBe(false);
    expect(module!.getSkill("main", "alpha").listed).toBe(true);
    expect(module!.renderSkill("main", "gamma", "now")).toContain("Steps for gamma with now.");
    expect(module!.listUserInvocable("main").map((skill) => skill.name)).toEqual(["alpha", "beta", "gamma"]);
    // The model was not told of it: the tool does not offer it either.
    expect(module!.skillTool("main")!.parameters.properties.skill.enum).not.toContain("gamma");
    expect(manifest.agents.main.skills.map((skill: { name: string; listed: boolean }) => [skill.name, skill.listed])).toEqual([["alpha", true], ["beta", expect.any(Boolean)], ["gamma", false]]);
    expect(manifest.agents.main.budget).toBe(1500);
  });

  it("seed 001: { contextWindow } is 2% of the window's tokens, at 4 characters a token", async () => {
    const { manifest } = await bake({ "skills.config.json": config(agent({ contextWindow: 10_000 })), ...skills });
    expect(manifest.agents.main.budget).toBe(800);
    expect(manifest.agents.main.characters.catalogue).toBeLessThanOrEqual(800);
  });

  it("seed 004: SKILLS_PROMPT_CHAR_BUDGET sets the budget of agents that set none, and a change makes build --check stale", async () => {
    const tree = { "skills.config.json": config({ ...agent(), own: { skills: [{ root: "skills" }], budget: 100_000 } }), ...skills };
    const { dir, manifest, codes } = await bake(tree, [], { SKILLS_PROMPT_CHAR_BUDGET: "1500" });
    expect(manifest.agents.main.budget).toBe(1500);
    expect(manifest.agents.own.budget).toBe(100_000);
    expect(codes).toContain("budget-exceeded");
    const same = await runCli(["build", "--check"], { cwd: dir, env: { SKILLS_PROMPT_CHAR_BUDGET: "1500" } });
    expect(same.code, same.stderr).toBe(0);
    const changed = await runCli(["build", "--check"], { cwd: dir, env: { SKILLS_PROMPT_CHAR_BUDGET: "1400" } });
    expect(changed.code).toBe(1);
    expect(changed.stderr).toContain("manifest.json");
    const unset = await runCli(["build", "--check"], { cwd: dir, env: { SKILLS_PROMPT_CHAR_BUDGET: undefined } });
    expect(unset.code).toBe(1);
    const bad = await runCli(["check"], { cwd: dir, env: { SKILLS_PROMPT_CHAR_BUDGET: "12k" } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('SKILLS_PROMPT_CHAR_BUDGET (environment) is "12k"');
  });

  it("no budget applies without a setting", async () => {
    const { manifest, codes } = await bake({ "skills.config.json": config(agent()), ...skills });
    expect(manifest.agents.main.budget).toBeUndefined();
    expect(codes).not.toContain("budget-exceeded");
  });
});

describe("5. invoke: \"tool\", and inline skills named in every format", () => {
  const tree = (agent: Record<string, unknown>) => ({
    "skills.config.json": config({ main: { skills: [{ root: "skills", inline: ["house-*"], available: ["*", "!house-*"] }], ...agent } }),
    "skills/code-review/SKILL.md": "---\nname: code-review\ndescription: Reviews a pull request.\n---\n\nReview $ARGUMENTS.\n",
    "skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Deploys the app.\n---\n\nDeploy.\n",
    "skills/house-style/SKILL.md": "---\nname: house-style\ndescription: Our style.\n---\n\nWrite plainly.\n",
    "skills/house-tests/SKILL.md": "---\nname: house-tests\ndescription: Our tests.\n---\n\nTest everything.\n",
  });

  it("markdown: seed 001's listing word for word, and each inline skill led by its name", async () => {
    const { module } = await bake(tree({ format: "markdown", invoke: "tool" }));
    expect(module!.getPrompt("main")).toBe(
      [
        "Available skills:\n- code-review: Reviews a pull request.\n- deploy: Deploys the app.\n\nUse the use_skill tool to invoke a skill when relevant.",
        "[Skill: house-style]\nBase directory for this skill: skills/house-style\n\nWrite plainly.",
        "[Skill: house-tests]\nBase directory for this skill: skills/house-tests\n\nTest everything.",
      ].join("\n\n"),
    );
  });

  it("the catalogue names the agent's own tool (seed 002's read_skill)", async () => {
    const { module } = await bake(tree({ format: "markdown", invoke: "tool", tool: { style: "read_skill" } }));
    expect(module!.getPrompt("main")).toContain("- deploy: Deploys the app.\n\nUse the read_skill tool to invoke a skill when relevant.");
  });

  it("pi: the tool replaces the read instruction and the file locations; inline blocks are unchanged", async () => {
    const read = await bake(tree({}));
    const tool = await bake(tree({ invoke: "tool" }));
    const prompt = tool.module!.getPrompt("main");
    expect(prompt).toContain("Use the use_skill tool to load a skill when the task matches its description.\n\n<available_skills>");
    expect(prompt).not.toContain("<location>");
    expect(prompt).not.toContain("read tool");
    const blocks = (text: string) => text.slice(text.indexOf('<skill name="house-style"'));
    expect(blocks(prompt)).toBe(blocks(read.module!.getPrompt("main")));
  });
});

describe('6. catalogue: "tool"', () => {
  // Seed 004 (as Claude Code): the skills are listed in the skill tool's description, not in the system prompt.
  const tree = (agent: Record<string, unknown>) => ({
    "skills.config.json": config({ main: { skills: [{ root: "skills" }], context: ["AGENTS.md"], ...agent } }),
    "AGENTS.md": "Be brief.\n",
    "skills/code-review/SKILL.md": "---\nname: code-review\ndescription: Reviews a pull request.\n---\n\nReview.\n",
  });

  it("moves the catalogue from the prompt into the tool's description", async () => {
    const { module, manifest } = await bake(tree({ format: "markdown", invoke: "tool", catalogue: "tool" }));
    expect(module!.getPrompt("main")).toBe("Be brief.");
    const tool = module!.skillTool("main")!;
    expect(tool.description).toBe(
      "Load the full instructions of one of your skills. Call it when the task matches a skill's description, then follow the instructions it returns.\n\n" +
        "Available skills:\n- code-review: Reviews a pull request.\n\nUse the use_skill tool to invoke a skill when relevant.",
    );
    expect(tool.parameters.properties.skill.enum).toEqual(["code-review"]);
    expect(manifest.agents.main.toolDescription).toBe(tool.description);
    expect(manifest.agents.main.characters.catalogue).toBeGreaterThan(0);
  });

  it("needs invoke: \"tool\"", async () => {
    const dir = await tempDir();
    await writeTree(dir, tree({ catalogue: "tool" }));
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('agents.main.invoke: catalogue: "tool" lists the skills in the skill tool');
  });
});
