import { lstat, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import AjvModule from "ajv";
import { beforeAll, describe, expect, it } from "vitest";
import { stableJson } from "../src/bundle/parts.js";
import { runCli, tempDir, writeTree } from "./helpers.js";

/**
 * The runtime behaviours the seed designs ask for (issue 16), each taken from its seed's example, against a real
 * built bundle: lookup errors with codes (seed 004), a lookup that does not throw and the user's `/name args`
 * command (seed 001), the skill folder's files (seed 003), and the skill tool's name, input and answer (seeds 002, 004).
 */
interface Entry {
  name: string;
  baseDir: string;
  body: string;
  files: readonly { path: string; size: number }[];
  structure: { files: number; bytes: number; folders: Record<string, { files: number; bytes: number }> };
}
interface BundleModule {
  SkillError: new (...args: never[]) => Error & { code: string };
  getPrompt(agent: unknown): string;
  getSkill(agent: unknown, name: unknown): Entry;
  findSkill(agent: unknown, name: unknown): Entry | undefined;
  renderSkill(agent: string, name: string, args?: string, options?: { files?: boolean }): string;
  expandCommand(agent: string, text: unknown): string | undefined;
  skillTool(agent: string): { name: string; description: string; parameters: Record<string, unknown> } | null;
  callSkillTool(agent: string, input: unknown): unknown;
}

const md = (frontmatter: string, body: string) => `---\n${frontmatter}\n---\n\n${body}\n`;
const REVIEW = md("name: code-review\ndescription: Review code changes for correctness.", "Review $ARGUMENTS for correctness, tests and style.");
const CHECKLIST = "# Checklist\n\n- tests pass\n";
const DIFF_SH = "#!/bin/sh\ngit diff\n";
const bytes = (text: string) => Buffer.byteLength(text);

const TREE = {
  "skills.config.json": JSON.stringify({
    location: "relative",
    agents: {
      coding: { skills: [{ root: "skills" }] },
      // Seed 002: a read_skill tool answering the skill's text.
      docs: { skills: [{ root: "skills" }], tool: { style: "read_skill" } },
      // Seed 004: a Skill tool answering { name, base_dir, content }.
      tasks: { skills: [{ root: "skills" }], format: "markdown", tool: { style: "Skill" } },
      renamed: { skills: [{ root: "skills" }], tool: { name: "load_skill" } },
    },
  }),
  "skills/code-review/SKILL.md": REVIEW,
  "skills/code-review/references/checklist.md": CHECKLIST,
  "skills/code-review/scripts/diff.sh": DIFF_SH,
  "skills/deploy/SKILL.md": md("name: deploy\ndescription: Ship a build.\ndisable-model-invocation: true", "Deploy $0."),
  "skills/notes/SKILL.md": md("name: notes\ndescription: Keep notes.\nuser-invocable: false", "Keep notes."),
};

let dir: string;
let bundle: BundleModule;

beforeAll(async () => {
  dir = await tempDir();
  await writeTree(dir, TREE);
  const run = await runCli(["build"], { cwd: dir });
  expect(run.code, run.stderr).toBe(0);
  bundle = await import(pathToFileURL(join(dir, "dist/skills/index.js")).href);
});

/** What `call` threw: its class, name, code and message. */
function thrown(call: () => unknown): { isSkillError: boolean; name: string; code: string; message: string } {
  try {
    call();
  } catch (error) {
    const { name, code, message } = error as { name: string; code: string; message: string };
    return { isSkillError: error instanceof bundle.SkillError, name, code, message };
  }
  throw new Error("did not throw");
}

describe("lookup errors carry a code (seed 004: INVALID_PARAM, NOT_FOUND)", () => {
  it("an unknown agent or skill is NOT_FOUND, and the message still lists the valid names", () => {
    expect(thrown(() => bundle.getSkill("coding", "no-such-skill"))).toEqual({
      isSkillError: true,
      name: "SkillError",
      code: "NOT_FOUND",
      message: 'Unknown skill "no-such-skill" for agent "coding". Its skills are: code-review, deploy, notes.',
    });
    expect(thrown(() => bundle.getPrompt("nope"))).toMatchObject({ code: "NOT_FOUND", message: 'Unknown agent "nope". This bundle has: coding, docs, renamed, tasks.' });
    expect(thrown(() => bundle.renderSkill("nope", "code-review"))).toMatchObject({ code: "NOT_FOUND" });
  });

  it("an empty or non-string name is INVALID_PARAM", () => {
    expect(thrown(() => bundle.getSkill("coding", ""))).toMatchObject({ isSkillError: true, code: "INVALID_PARAM", message: "The skill name must be a non-empty string, not an empty string." });
    expect(thrown(() => bundle.getSkill("coding", 42))).toMatchObject({ code: "INVALID_PARAM", message: "The skill name must be a non-empty string, not a number." });
    expect(thrown(() => bundle.getSkill("coding", null))).toMatchObject({ code: "INVALID_PARAM" });
    expect(thrown(() => bundle.getPrompt(undefined))).toMatchObject({ code: "INVALID_PARAM", message: "The agent must be a non-empty string, not undefined." });
  });
});

describe("findSkill (seed 001's get(): no skill is not an error)", () => {
  it("returns the entry, or undefined for an unknown skill or agent or a name of the wrong type, and never throws", () => {
    expect(bundle.findSkill("coding", "code-review")).toBe(bundle.getSkill("coding", "code-review"));
    for (const [agent, name] of [
      ["coding", "no-such-skill"],
      ["nope", "code-review"],
      ["coding", ""],
      ["coding", 42],
      [undefined, "code-review"],
      ["toString", "code-review"],
    ]) {
      expect(bundle.findSkill(agent, name)).toBeUndefined();
    }
  });
});

describe("expandCommand (seed 001: `/code-review PR #42` → `[Skill: code-review]\\n\\n<body with arguments>`)", () => {
  it("expands a user-invocable skill's command, arguments applied", () => {
    expect(bundle.expandCommand("coding", "/code-review PR #42")).toBe("[Skill: code-review]\n\nReview PR #42 for correctness, tests and style.");
    expect(bundle.expandCommand("coding", "/code-review")).toBe("[Skill: code-review]\n\nReview  for correctness, tests and style.");
    // Manual-only (disable-model-invocation) skills are exactly the ones a user invokes.
    expect(bundle.expandCommand("coding", "/deploy app eu")).toBe("[Skill: deploy]\n\nDeploy app.");
  });

  it("accepts Pi's /skill:name form as the same command", () => {
    expect(bundle.expandCommand("coding", "/skill:code-review PR #42")).toBe(bundle.expandCommand("coding", "/code-review PR #42"));
  });

  it("anything else is passed through: undefined", () => {
    for (const text of ["please /code-review PR #42", " /code-review", "/", "/ code-review", "/no-such-skill x", "/notes", "/skill:notes", "", "code-review"]) {
      expect(bundle.expandCommand("coding", text), text).toBeUndefined();
    }
  });

  it("an unknown agent or a text that is not a string is the caller's mistake: it throws", () => {
    expect(thrown(() => bundle.expandCommand("nope", "/code-review"))).toMatchObject({ code: "NOT_FOUND" });
    expect(thrown(() => bundle.expandCommand("coding", 7))).toMatchObject({ code: "INVALID_PARAM" });
  });
});

describe("the skill folder's files (seed 003's folder-structure summary)", () => {
  it("the entry lists the files with their sizes, and the manifest's structure", async () => {
    const entry = bundle.getSkill("coding", "code-review");
    expect(entry.files).toEqual([
      { path: "SKILL.md", size: bytes(REVIEW) },
      { path: "references/checklist.md", size: bytes(CHECKLIST) },
      { path: "scripts/diff.sh", size: bytes(DIFF_SH) },
    ]);
    const manifest = JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8"));
    expect(entry.structure).toEqual(manifest.skills.find((skill: { name: string }) => skill.name === "code-review").structure);
    expect(entry.structure).toEqual({
      files: 3,
      bytes: bytes(REVIEW) + bytes(CHECKLIST) + bytes(DIFF_SH),
      folders: { references: { files: 1, bytes: bytes(CHECKLIST) }, scripts: { files: 1, bytes: bytes(DIFF_SH) } },
    });
  });

  it("renderSkill(…, { files: true }) appends a summary of the folder, in path order, inside the block", () => {
    const total = bytes(REVIEW) + bytes(CHECKLIST) + bytes(DIFF_SH);
    const summary = [
      `Skill folder: 3 files, ${total} bytes`,
      `- SKILL.md (${bytes(REVIEW)} bytes)`,
      `- references/: 1 file, ${bytes(CHECKLIST)} bytes`,
      `  - references/checklist.md (${bytes(CHECKLIST)} bytes)`,
      `- scripts/: 1 file, ${bytes(DIFF_SH)} bytes`,
      `  - scripts/diff.sh (${bytes(DIFF_SH)} bytes)`,
    ].join("\n");
    expect(bundle.renderSkill("coding", "code-review", "PR #42", { files: true })).toBe(
      `<skill name="code-review" location="skills/code-review/SKILL.md">\nReferences are relative to skills/code-review.\n\nReview PR #42 for correctness, tests and style.\n\n${summary}\n</skill>`,
    );
    expect(bundle.renderSkill("tasks", "code-review", "", { files: true })).toBe(`[Skill: code-review]\nBase directory for this skill: skills/code-review\n\nReview  for correctness, tests and style.\n\n${summary}`);
    expect(bundle.renderSkill("coding", "code-review", "", { files: false })).toBe(bundle.renderSkill("coding", "code-review"));
  });
});

describe("the skill tool's style (seeds 002 and 004)", () => {
  const Ajv = AjvModule.default ?? AjvModule;
  const validator = (agent: string) => new Ajv({ strict: true }).compile(bundle.skillTool(agent)!.parameters);

  it("seed 002: read_skill { name } answers the skill's text (its inline block)", () => {
    const tool = bundle.skillTool("docs")!;
    expect(tool.name).toBe("read_skill");
    expect(tool.parameters).toEqual({
      type: "object",
      properties: { name: { type: "string", enum: ["code-review", "notes"], description: expect.any(String) } },
      required: ["name"],
      additionalProperties: false,
    });
    const valid = validator("docs");
    expect([valid({ name: "code-review" }), valid({ name: "code-review", args: "x" }), valid({ name: "deploy" })]).toEqual([true, false, false]);
    expect(bundle.callSkillTool("docs", { name: "code-review" })).toBe(bundle.renderSkill("docs", "code-review"));
  });

  it("seed 004: Skill { name, args } answers { name, base_dir, content }", () => {
    const tool = bundle.skillTool("tasks")!;
    expect(tool.name).toBe("Skill");
    expect(tool.parameters).toEqual({
      type: "object",
      properties: { name: { type: "string", enum: ["code-review", "notes"], description: expect.any(String) }, args: { type: "string", description: expect.any(String) } },
      required: ["name"],
      additionalProperties: false,
    });
    expect([validator("tasks")({ name: "notes" }), validator("tasks")({ name: "notes", args: "x" })]).toEqual([true, true]);
    expect(bundle.callSkillTool("tasks", { name: "code-review", args: "PR #42" })).toEqual({
      name: "code-review",
      base_dir: "skills/code-review",
      content: "Review PR #42 for correctness, tests and style.",
    });
    expect(bundle.callSkillTool("tasks", { name: "notes" })).toEqual({ name: "notes", base_dir: "skills/notes", content: "Keep notes." });
  });

  it("the default stays use_skill { skill, args } answering the inline block; `name` renames it", () => {
    expect(bundle.skillTool("coding")!.name).toBe("use_skill");
    expect(bundle.callSkillTool("coding", { skill: "code-review", args: "PR #42" })).toBe(bundle.renderSkill("coding", "code-review", "PR #42"));
    const renamed = bundle.skillTool("renamed")!;
    expect({ ...renamed, name: "use_skill" }).toEqual(bundle.skillTool("coding"));
    expect(renamed.name).toBe("load_skill");
    expect(bundle.callSkillTool("renamed", { skill: "notes" })).toBe(bundle.renderSkill("renamed", "notes"));
  });

  it("a call for a skill the tool does not offer is NOT_FOUND, even one that exists (manual-only)", () => {
    expect(thrown(() => bundle.callSkillTool("tasks", { name: "deploy" }))).toMatchObject({
      code: "NOT_FOUND",
      message: 'Unknown skill "deploy" for Skill. The skills of agent "tasks" it offers are: code-review, notes.',
    });
    expect(thrown(() => bundle.callSkillTool("coding", { skill: "no-such-skill" }))).toMatchObject({ code: "NOT_FOUND" });
  });

  it("input of the wrong shape is INVALID_PARAM", () => {
    for (const [agent, input] of [
      ["tasks", "code-review"],
      ["tasks", null],
      ["tasks", ["code-review"]],
      ["tasks", {}],
      ["tasks", { name: 5 }],
      ["tasks", { name: "code-review", args: 3 }],
      ["coding", { name: "code-review" }],
      ["docs", { skill: "code-review" }],
    ] as const) {
      expect(thrown(() => bundle.callSkillTool(agent, input)), JSON.stringify([agent, input])).toMatchObject({ isSkillError: true, code: "INVALID_PARAM" });
    }
  });

  it("the manifest records each agent's tool setting, for servers in other languages", async () => {
    const manifest = JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8"));
    expect([manifest.agents.coding.tool, manifest.agents.docs.tool, manifest.agents.tasks.tool, manifest.agents.renamed.tool]).toEqual([
      undefined,
      { name: "read_skill", style: "read_skill" },
      { name: "Skill", style: "Skill" },
      { name: "load_skill", style: "use_skill" },
    ]);
  });

  it("a tool name the tool APIs would reject is a config error naming the field", async () => {
    const bad = await tempDir();
    await writeTree(bad, { ...TREE, "skills.config.json": JSON.stringify({ agents: { coding: { skills: [{ root: "skills" }], tool: { name: "load skill!" } } } }) });
    const run = await runCli(["check"], { cwd: bad });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("agents.coding.tool.name: a tool name is 1 to 64 letters, digits, _ or -");
  });
});

describe("staging per agent, by link, and each agent's context file (seed 002)", () => {
  const STAGED_TREE = {
    ...TREE,
    "skills.config.json": JSON.stringify({
      location: "relative",
      stage: { layout: "per-agent", method: "link" },
      contextFile: "AGENTS.md",
      agents: {
        coding: { skills: [{ root: "skills", available: ["code-review", "deploy"] }], context: ["context/*.md"] },
        chat: { skills: [{ root: "skills", available: ["code-review"] }] },
      },
    }),
    "skills/code-review/references/shared.md": { link: "../../notes/SKILL.md" },
    "skills/code-review/references/outside.md": { link: "../../../secret.txt" },
    "secret.txt": "not a skill's file\n",
    "context/1-project.md": "# Project\n\nUse pnpm.",
    "context/2-style.md": "Write short commits.\n",
  };
  let built: string;
  const out = (path: string) => join(built, "dist/skills", path);

  beforeAll(async () => {
    built = await tempDir();
    await writeTree(built, STAGED_TREE);
    const run = await runCli(["build"], { cwd: built });
    expect(run.code, run.stderr).toBe(0);
  });

  it("each agent gets its own folder agents/<id>/skills/<name>/, of hard links to the skill files", async () => {
    for (const agent of ["coding", "chat"]) {
      const staged = await stat(out(`agents/${agent}/skills/code-review/SKILL.md`));
      expect(staged.ino).toBe((await stat(join(built, "skills/code-review/SKILL.md"))).ino);
    }
    expect((await stat(out("agents/coding/skills/deploy/SKILL.md"))).ino).toBe((await stat(join(built, "skills/deploy/SKILL.md"))).ino);
    await expect(stat(out("agents/chat/skills/deploy"))).rejects.toThrow("ENOENT");
    await expect(stat(out("skills"))).rejects.toThrow("ENOENT");
  });

  it("the manifest records each agent's own place of a skill in its row, as sorted, indented JSON", async () => {
    const text = await readFile(out("manifest.json"), "utf8");
    expect(stableJson(JSON.parse(text))).toBe(text);
    const rows = JSON.parse(text).agents.chat.skills;
    expect(rows).toEqual([expect.objectContaining({ name: "code-review", staged: "agents/chat/skills/code-review", baseDir: "dist/skills/agents/chat/skills/code-review" })]);
  });

  it("a link inside the root is staged as a link to the file it leads to; one leading out of the root is not staged", async () => {
    const shared = await lstat(out("agents/coding/skills/code-review/references/shared.md"));
    expect(shared.isFile()).toBe(true);
    expect(shared.ino).toBe((await stat(join(built, "skills/notes/SKILL.md"))).ino);
    await expect(lstat(out("agents/coding/skills/code-review/references/outside.md"))).rejects.toThrow("ENOENT");
  });

  it("each agent's prompt, module entry and manifest entry name its own copy", async () => {
    const index: BundleModule = await import(pathToFileURL(out("index.js")).href);
    const chat: BundleModule = await import(pathToFileURL(out("agents/chat.js")).href);
    for (const [module, agent] of [[index, "coding"], [index, "chat"], [chat, "chat"]] as const) {
      const location = `dist/skills/agents/${agent}/skills/code-review/SKILL.md`;
      expect(module.getSkill(agent, "code-review")).toMatchObject({ location, baseDir: `dist/skills/agents/${agent}/skills/code-review` });
      expect(module.getPrompt(agent)).toContain(`<location>${location}</location>`);
    }
    const manifest = JSON.parse(await readFile(out("manifest.json"), "utf8"));
    expect(manifest.agents.coding.skills[0]).toEqual({ name: "code-review", mode: "available", source: 0, file: "skills/code-review/SKILL.md", listed: true });
    expect(manifest.agents.chat.skills[0]).toEqual({
      name: "code-review",
      mode: "available",
      source: 0,
      file: "skills/code-review/SKILL.md",
      listed: true,
      location: "dist/skills/agents/chat/skills/code-review/SKILL.md",
      baseDir: "dist/skills/agents/chat/skills/code-review",
      staged: "agents/chat/skills/code-review",
    });
  });

  it("contextFile writes each agent's context to agents/<id>/<contextFile>, as the prompt holds it", async () => {
    const context = "# Project\n\nUse pnpm.\n\n---\n\nWrite short commits.";
    expect(await readFile(out("agents/coding/AGENTS.md"), "utf8")).toBe(`${context}\n`);
    expect((await readFile(out("prompts/coding.txt"), "utf8")).startsWith(`${context}\n\n`)).toBe(true);
    await expect(stat(out("agents/chat/AGENTS.md"))).rejects.toThrow("ENOENT");
    const manifest = JSON.parse(await readFile(out("manifest.json"), "utf8"));
    expect([manifest.agents.coding.contextFile, manifest.agents.chat.contextFile]).toEqual(["agents/coding/AGENTS.md", undefined]);
  });

  it("build --check finds the bundle current, and stale once a context file changes", async () => {
    expect((await runCli(["build", "--check"], { cwd: built })).code).toBe(0);
    await writeTree(built, { "context/2-style.md": "Write long commits.\n" });
    const run = await runCli(["build", "--check"], { cwd: built });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("agents/coding/AGENTS.md");
  });

  it("method copy (the default) with the per-agent layout copies: no file is shared with the skill folder", async () => {
    const copied = await tempDir();
    await writeTree(copied, { ...STAGED_TREE, "skills.config.json": JSON.stringify({ location: "relative", stage: { layout: "per-agent" }, agents: { chat: { skills: [{ root: "skills", available: ["code-review"] }] } } }) });
    expect((await runCli(["build"], { cwd: copied })).code).toBe(0);
    const staged = await stat(join(copied, "dist/skills/agents/chat/skills/code-review/SKILL.md"));
    expect(staged.ino).not.toBe((await stat(join(copied, "skills/code-review/SKILL.md"))).ino);
    expect(staged.nlink).toBe(1);
  });

  it("a contextFile that is not a plain Markdown file name is a config error", async () => {
    const bad = await tempDir();
    for (const contextFile of ["../AGENTS.md", ".AGENTS.md", "skills"]) {
      await writeTree(bad, { ...TREE, "skills.config.json": JSON.stringify({ contextFile, agents: { coding: { skills: [{ root: "skills" }] } } }) });
      const run = await runCli(["check"], { cwd: bad });
      expect(run.code, contextFile).toBe(2);
      expect(run.stderr).toContain("contextFile: a Markdown file name of letters, digits, ., _ or -, not starting with a dot (e.g. AGENTS.md)");
    }
  });
});
