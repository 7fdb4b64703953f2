import { execFile } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import AjvModule from "ajv";
import { beforeAll, describe, expect, it } from "vitest";
import { runCli, tempDir, writeTree } from "./helpers.js";

/** The runtime API of a generated module, as the tests use it (the generated .d.ts is tested in module-types). */
interface BundleModule {
  agents: Record<string, { id: string; format: string; prompt: string; skills: readonly Entry[] }>;
  getPrompt(agent: string): string;
  getSkill(agent: string, name: string): Entry;
  renderSkill(agent: string, name: string, args?: string): string;
  listUserInvocable(agent: string): readonly Entry[];
  skillTool(agent: string, dialect?: "anthropic" | "openai" | "openai-responses" | "mcp"): { name: string; description: string; parameters: Record<string, unknown> & { properties: { skill: { enum: string[] } } } } | null;
}
interface Entry {
  name: string;
  description: string;
  file: string;
  location: string;
  baseDir: string;
  mode: string;
  source: number;
  hash: string;
  fields: Record<string, unknown>;
  extra: Record<string, unknown>;
  body: string;
}

const md = (frontmatter: string, body: string) => `---\n${frontmatter}\n---\n\n${body}\n`;

// No body below contains the words the no-import test looks for. The project is CommonJS (npm init's default):
// the bundle's own package.json must still make its .js files ES modules.
const TREE = {
  "package.json": JSON.stringify({ name: "app", type: "commonjs" }),
  "skills.config.json": JSON.stringify({
    agents: {
      coding: { skills: [{ root: "skills", available: ["*", "!review"], inline: ["commit"] }] },
      chat: { format: "markdown", skills: [{ root: "skills", available: ["review", "notes"] }] },
      empty: { skills: [{ root: "skills", available: ["deploy"] }] },
    },
  }),
  "skills/commit/SKILL.md": md("name: commit\ndescription: Write a commit message.\nargument-hint: '[message]'", "Commit with message: $ARGUMENTS"),
  "skills/deploy/SKILL.md": md("name: deploy\ndescription: Ship a build.\ndisable-model-invocation: true", "Deploy $0 to $ARGUMENTS[1] in region [$2]."),
  "skills/notes/SKILL.md": md(
    "name: notes\ndescription: Café notes ✓ 😀 & <tags>\nuser-invocable: false\ntags: [a, b]\nallowed-tools: Read, Grep\nowner:\n  team: docs\n  since: 2024",
    "Keep notes — in UTF-8: ünïcödé ✓ 😀.",
  ),
  "skills/review/SKILL.md": md("name: review\ndescription: Review a change.", "Review the change."),
};

let dir: string;
let out: string;
/**
 * Through vitest, whose `import()` runs the file through Vite's module transform. What only Node itself can show
 * (ESM by package.json, strict mode, running without the skill folders) is checked in a Node subprocess below.
 */
const importFile = (path: string): Promise<BundleModule> => import(pathToFileURL(path).href);
const load = (path: string): Promise<BundleModule> => importFile(join(out, path));

/** Runs an ES module script in a fresh Node process in `cwd`; returns what it prints as JSON. */
async function inNode(cwd: string, script: string): Promise<unknown> {
  await writeTree(cwd, { "check.mjs": script });
  const { stdout } = await promisify(execFile)(process.execPath, ["check.mjs"], { cwd });
  return JSON.parse(stdout);
}

beforeAll(async () => {
  dir = await tempDir();
  await writeTree(dir, TREE);
  const run = await runCli(["build"], { cwd: dir });
  expect(run.stderr).toContain("Wrote dist/skills");
  out = join(dir, "dist/skills");
});

describe("the generated modules", () => {
  it("getPrompt is byte for byte prompts/<agent>.txt, from index.js and from agents/<id>.js", async () => {
    const index = await load("index.js");
    for (const id of ["coding", "chat", "empty"]) {
      const text = await readFile(join(out, `prompts/${id}.txt`), "utf8");
      expect(index.getPrompt(id)).toBe(text);
      expect(index.agents[id]!.prompt).toBe(text);
      expect((await load(`agents/${id}.js`)).getPrompt(id)).toBe(text);
    }
    expect(index.getPrompt("chat")).toContain("- notes: Café notes ✓ 😀 & <tags> (file: ");
  });

  it("Node loads them as ES modules (the bundle's package.json), in a CommonJS project, without the skill folders", async () => {
    expect(JSON.parse(await readFile(join(out, "package.json"), "utf8"))).toEqual({ type: "module" });
    const copy = await tempDir();
    await writeTree(copy, TREE);
    expect((await runCli(["build"], { cwd: copy })).code).toBe(0);
    await rm(join(copy, "skills"), { recursive: true });
    await rm(join(copy, "skills.config.json"));
    const report = await inNode(
      copy,
      `import { readFileSync } from "node:fs";
import * as bundle from "./dist/skills/index.js";
import * as coding from "./dist/skills/agents/coding.js";
const entry = bundle.getSkill("coding", "notes");
const mutations = {
  binding: () => { bundle.getPrompt = null; },
  agent: () => { bundle.agents.coding.prompt = ""; },
  skills: () => { bundle.agents.coding.skills.push(entry); },
  fields: () => { entry.fields.tags.push("x"); },
  extra: () => { entry.extra.owner.team = "x"; },
  helper: () => { coding.renderSkill.cache = {}; },
  errorClass: () => { bundle.SkillError.prototype.code = "x"; },
};
console.log(JSON.stringify({
  exports: Object.keys(bundle),
  prompt: bundle.getPrompt("coding") === readFileSync("dist/skills/prompts/coding.txt", "utf8") && coding.getPrompt("coding") === bundle.getPrompt("coding"),
  rendered: coding.renderSkill("coding", "deploy", "app 'eu west'"),
  thrown: Object.entries(mutations).map(([name, mutate]) => { try { mutate(); return name + ": no error"; } catch (error) { return name + ": " + error.constructor.name; } }),
}));
`,
    );
    expect(report).toEqual({
      exports: ["SkillError", "agents", "callSkillTool", "expandCommand", "findSkill", "getPrompt", "getSkill", "listUserInvocable", "renderSkill", "skillTool"],
      prompt: true,
      rendered: expect.stringContaining("\n\nDeploy app to eu west in region [].\n</skill>"),
      thrown: ["binding", "agent", "skills", "fields", "extra", "helper", "errorClass"].map((name) => `${name}: TypeError`),
    });
  });

  it("agents/<id>.js holds its own agent only", async () => {
    const chat = await load("agents/chat.js");
    expect(Object.keys(chat.agents)).toEqual(["chat"]);
    expect(() => chat.getPrompt("coding")).toThrow('Unknown agent "coding". This bundle has: chat.');
    const text = await readFile(join(out, "agents/chat.js"), "utf8");
    expect(text).not.toContain("Commit with message");
    expect(text).toContain("Review the change.");
  });

  it("getSkill carries what the manifest says of the skill, with the agent's mode and source", async () => {
    const index = await load("index.js");
    const manifest = JSON.parse(await readFile(join(out, "manifest.json"), "utf8"));
    const fromManifest = manifest.skills.find((skill: { name: string }) => skill.name === "notes");
    const notes = index.getSkill("coding", "notes");
    const shared = ["name", "description", "file", "location", "baseDir", "hash", "fields", "extra", "body"];
    const files = fromManifest.files.map(({ path, size }: { path: string; size: number }) => ({ path, size }));
    expect(notes).toEqual({ ...Object.fromEntries(shared.map((key) => [key, fromManifest[key]])), files, structure: fromManifest.structure, mode: "available", listed: true, source: 0 });
    expect(notes.fields).toEqual({ "allowed-tools": ["Read", "Grep"], tags: ["a", "b"], "user-invocable": false, context: "inline", agent: "general", "disable-model-invocation": false });
    expect(notes.extra).toEqual({ owner: { team: "docs", since: 2024 } });
    expect(notes.location).toBe("skills/notes/SKILL.md");
    expect(notes.baseDir).toBe("skills/notes");
    expect(index.getSkill("coding", "commit").mode).toBe("inline");
    expect(index.agents.coding!.skills.map((skill) => skill.name)).toEqual(["commit", "deploy", "notes"]);
  });

  it("unknown agent and skill names throw, listing the valid ones", async () => {
    const index = await load("index.js");
    expect(() => index.getSkill("coding", "review")).toThrow('Unknown skill "review" for agent "coding". Its skills are: commit, deploy, notes.');
    expect(() => index.renderSkill("nope", "commit")).toThrow('Unknown agent "nope". This bundle has: chat, coding, empty.');
  });

  describe("renderSkill", () => {
    const block = (name: string, body: string) =>
      `<skill name="${name}" location="skills/${name}/SKILL.md">\nReferences are relative to skills/${name}.\n\n${body}\n</skill>`;

    it("is the prompt's inline block when there are no arguments", async () => {
      const index = await load("index.js");
      expect(index.renderSkill("coding", "commit")).toBe(block("commit", "Commit with message: "));
      expect(index.getPrompt("coding").endsWith(block("commit", "Commit with message: $ARGUMENTS"))).toBe(true);
    });

    it("$ARGUMENTS takes the whole string, quotes and all", async () => {
      const index = await load("index.js");
      expect(index.renderSkill("coding", "commit", `fix: the "quoted" & 'single' bug`)).toBe(block("commit", `Commit with message: fix: the "quoted" & 'single' bug`));
    });

    it("$N and $ARGUMENTS[N] take shell words; a missing index is empty", async () => {
      const index = await load("index.js");
      expect(index.renderSkill("coding", "deploy", `"my app" 'eu west'`)).toBe(block("deploy", "Deploy my app to eu west in region []."));
      expect(index.renderSkill("coding", "deploy", "")).toBe(block("deploy", "Deploy  to  in region []."));
    });

    it("a body without placeholders gets ARGUMENTS appended, and nothing for empty args", async () => {
      const index = await load("index.js");
      const body = "Keep notes — in UTF-8: ünïcödé ✓ 😀.";
      expect(index.renderSkill("coding", "notes", " two words ")).toBe(block("notes", `${body}\n\nARGUMENTS: two words`));
      expect(index.renderSkill("coding", "notes", "")).toBe(block("notes", body));
      expect(index.renderSkill("coding", "notes")).toBe(block("notes", body));
    });

    it("renders the agent's format: markdown", async () => {
      const index = await load("index.js");
      expect(index.renderSkill("chat", "review", "now")).toBe(`[Skill: review]\nBase directory for this skill: skills/review\n\nReview the change.\n\nARGUMENTS: now`);
    });
  });

  it("listUserInvocable leaves out user-invocable: false", async () => {
    const index = await load("index.js");
    expect(index.listUserInvocable("coding").map((skill) => skill.name)).toEqual(["commit", "deploy"]);
  });

  it("skillTool: use_skill over the model-invocable skills, a JSON Schema the tool APIs accept; null with none", async () => {
    const index = await load("index.js");
    const tool = index.skillTool("coding")!;
    expect(tool.name).toBe("use_skill");
    expect(tool.description.length).toBeGreaterThan(20);
    expect(tool.parameters).toEqual({
      type: "object",
      properties: {
        skill: { type: "string", enum: ["commit", "notes"], description: expect.any(String) },
        args: { type: "string", description: expect.any(String) },
      },
      required: ["skill"],
      additionalProperties: false,
    });
    const Ajv = AjvModule.default ?? AjvModule;
    const validate = new Ajv({ strict: true }).compile(tool.parameters);
    expect([validate({ skill: "notes" }), validate({ skill: "commit", args: "x" })]).toEqual([true, true]);
    expect([validate({ skill: "deploy" }), validate({ args: "x" }), validate({ skill: "notes", other: 1 })]).toEqual([false, false, false]);
    expect(index.skillTool("empty")).toBeNull();
  });

  it("skillTool in each API's shape: anthropic, openai (Chat Completions), openai-responses, mcp; an unknown dialect throws", async () => {
    const index = await load("index.js");
    const { name, description, parameters } = index.skillTool("coding")!;
    expect(index.skillTool("coding", "anthropic")).toEqual({ name, description, input_schema: parameters });
    expect(index.skillTool("coding", "openai")).toEqual({ type: "function", function: { name, description, parameters } });
    expect(index.skillTool("coding", "openai-responses")).toEqual({ type: "function", name, description, parameters, strict: false });
    expect(index.skillTool("coding", "mcp")).toEqual({ name, description, inputSchema: parameters });
    expect(index.skillTool("empty", "anthropic")).toBeNull();
    expect(() => index.skillTool("coding", "claude" as "anthropic")).toThrow('Unknown tool dialect "claude". Use one of: anthropic, openai, openai-responses, mcp, or none for the neutral shape.');
  });

  it("everything exported is frozen but skillTool's tool, a new plain object each call: mutation throws (ESM is strict mode)", async () => {
    const index = await load("index.js");
    const entry = index.getSkill("coding", "notes");
    const mutations: (() => void)[] = [
      () => ((index as unknown as Record<string, unknown>).getPrompt = () => ""),
      () => (index.agents.coding = index.agents.chat!),
      () => ((index.agents.coding as { prompt: string }).prompt = ""),
      () => ((index.agents.coding as { skills: unknown }).skills = []),
      () => (index.agents.coding!.skills as Entry[]).push(entry),
      () => (entry.body = ""),
      () => ((entry.fields.tags as string[])[0] = "x"),
      () => ((entry.extra.owner as Record<string, unknown>).team = "x"),
      () => (entry.extra.added = 1),
      () => (index.listUserInvocable("coding") as Entry[]).pop(),
      () => Object.assign(index.getSkill, { extra: 1 }),
    ];
    for (const mutate of mutations) expect(mutate).toThrow(TypeError);
    expect(index.getSkill("coding", "notes").body).toBe("Keep notes — in UTF-8: ünïcödé ✓ 😀.");
    const tool = index.skillTool("coding")!;
    tool.parameters.properties.skill.enum.push("x");
    expect(index.skillTool("coding")!.parameters.properties.skill.enum).toEqual(["commit", "notes"]);
  });

  it("imports nothing: the text has no import, require, process or fs, and is ASCII (non-ASCII is escaped)", async () => {
    for (const path of ["index.js", "agents/coding.js", "agents/chat.js", "agents/empty.js"]) {
      const text = await readFile(join(out, path), "utf8");
      expect(text).not.toMatch(/\b(import|require|process|fs)\b/);
      expect(text).toMatch(/^[\x00-\x7f]*$/);
    }
  });

  it("cites no document the bundle's users do not have (the repository's SPEC.md)", async () => {
    for (const path of ["index.js", "index.d.ts", "agents/chat.js", "agents/chat.d.ts", "manifest.json"]) expect(await readFile(join(out, path), "utf8"), path).not.toContain("SPEC");
  });
});
