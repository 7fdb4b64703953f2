import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmod, readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { frontmatterJsonSchema } from "../src/compile/model.js";
import { runCli, skillMd, tempDir, writeTree, type CliRun } from "./helpers.js";

// End-to-end cases for issue #5, the whole skill model: each builds a real project through the CLI, then reads
// the bundle three ways: manifest.json, prompts/<agent>.txt and the generated module.

type Tree = Parameters<typeof writeTree>[1];

interface Entry {
  name: string;
  description: string;
  file: string;
  location: string;
  baseDir: string;
  mode: string;
  source: number;
  fields: Record<string, unknown>;
  extra: Record<string, unknown>;
  body: string;
}
interface BundleModule {
  agents: Record<string, { id: string; format: string; description?: string; prompt: string; skills: readonly Entry[] }>;
  getPrompt(agent: string): string;
  getSkill(agent: string, name: string): Entry;
  renderSkill(agent: string, name: string, args?: string): string;
  listUserInvocable(agent: string): readonly Entry[];
  skillTool(agent: string): { parameters: { properties: { skill: { enum: string[] } } } } | null;
}
interface Manifest {
  agents: Record<string, { format: string; description?: string; budget?: number; context?: string[]; characters: { prompt: number; catalogue: number }; skills: { name: string; file: string; mode: string; source: number; listed: boolean }[] }>;
  skills: (Entry & { files: { path: string; size: number; sha256: string }[]; structure: unknown; staged?: string })[];
  diagnostics: { code: string; severity: string; message: string; file?: string; line?: number; column?: number }[];
}
interface Built {
  dir: string;
  out: string;
  run: CliRun;
  manifest: Manifest;
  module: BundleModule;
  prompt(agent: string): Promise<string>;
}

/** Writes the project (a JSON config, or a TS config's source) and runs `skills build` in it. */
async function attempt(tree: Tree, config: object | string): Promise<Pick<Built, "dir" | "out" | "run">> {
  const dir = await tempDir();
  const configFile: Tree = typeof config === "string" ? { "skills.config.ts": config } : { "skills.config.json": JSON.stringify(config) };
  await writeTree(dir, { ...configFile, ...tree });
  return { dir, out: join(dir, "dist/skills"), run: await runCli(["build"], { cwd: dir }) };
}

/** `attempt`, which must succeed, and what the build wrote. */
async function build(tree: Tree, config: object | string): Promise<Built> {
  const { dir, out, run } = await attempt(tree, config);
  expect(run.code, run.stderr).toBe(0);
  const manifest = JSON.parse(await readFile(join(out, "manifest.json"), "utf8")) as Manifest;
  const module = (await import(pathToFileURL(join(out, "index.js")).href)) as BundleModule;
  return { dir, out, run, manifest, module, prompt: (agent) => readFile(join(out, "prompts", `${agent}.txt`), "utf8") };
}

const md = (frontmatter: string, body = "Body.") => `---\n${frontmatter}\n---\n\n${body}\n`;
const sha256 = (data: string | Buffer) => createHash("sha256").update(data).digest("hex");
const names = (entries: readonly { name: string }[]) => entries.map((entry) => entry.name);
const codes = (built: Built, code: string) => built.manifest.diagnostics.filter((diagnostic) => diagnostic.code === code);

/** Pi's catalogue (SPEC §5) written out from the SPEC, to measure budgets independently of the renderer. */
function piCatalogue(entries: { name: string; description: string; location: string }[]): string {
  if (entries.length === 0) return "";
  return [
    "The following skills provide specialized instructions for specific tasks.",
    "Use the read tool to load a skill's file when the task matches its description.",
    "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.",
    "",
    "<available_skills>",
    ...entries.flatMap((entry) => ["  <skill>", `    <name>${entry.name}</name>`, `    <description>${entry.description}</description>`, `    <location>${entry.location}</location>`, "  </skill>"]),
    "</available_skills>",
  ].join("\n");
}

describe("1. the frontmatter model", () => {
  const FULL = md(
    [
      "name: full",
      "description: Everything set.",
      "license: MIT",
      "compatibility: Node 20 and git",
      "metadata:",
      "  author: me",
      "allowed-tools: Read Grep, Bash(git log:*)",
      "disable-model-invocation: false",
      "user-invocable: true",
      'argument-hint: "[file]"',
      "context: fork",
      "agent: Explore",
      "model: sonnet",
      'version: "1.2"',
      "tags: [a, b]",
      "owner: team-x",
      "license-url:",
    ].join("\n"),
  );
  const LOOSE = md(
    [
      "name: loose",
      "description: Wrong types everywhere.",
      'disable-model-invocation: "true"',
      `compatibility: ${"x".repeat(501)}`,
      "agent: Explore",
      "metadata:",
      "  n: 1",
      "version: 1.0",
      "tags:",
    ].join("\n"),
  );
  const config = { location: "relative", agents: { main: { skills: [{ root: "skills" }] } } };

  it("types every known field in the manifest and the module, and passes unknown fields through under extra", async () => {
    const built = await build({ "skills/full/SKILL.md": FULL }, config);
    const fields = {
      license: "MIT",
      compatibility: "Node 20 and git",
      metadata: { author: "me" },
      "allowed-tools": ["Read", "Grep", "Bash(git log:*)"],
      "disable-model-invocation": false,
      "user-invocable": true,
      "argument-hint": "[file]",
      context: "fork",
      agent: "Explore",
      model: "sonnet",
      version: "1.2",
      tags: ["a", "b"],
    };
    expect(built.manifest.skills[0]).toMatchObject({ fields, extra: { owner: "team-x", "license-url": null } });
    expect(built.module.getSkill("main", "full")).toMatchObject({ fields, extra: { owner: "team-x", "license-url": null } });
    // The generated types come from the same zod model, descriptions included.
    const types = await readFile(join(built.out, "index.d.ts"), "utf8");
    expect(types).toContain('readonly "allowed-tools"?: readonly string[];');
    expect(types).toContain('readonly "context": "inline" | "fork";');
    expect(types).toContain("/** With context: fork, the task type (sub-agent) that runs the skill. */");
  });

  it("reports a known field of the wrong type or size as field-invalid and keeps its value only under extra", async () => {
    const built = await build({ "skills/loose/SKILL.md": LOOSE }, config);
    expect(built.run.stderr).toContain("0 errors, 5 warnings");
    const invalid = codes(built, "field-invalid").map((d) => [d.line, d.column, d.message.split(" ")[0]]);
    expect(invalid).toEqual([
      [4, 27, "`disable-model-invocation`"],
      [5, 16, "`compatibility`"],
      [6, 1, "`agent`"],
      [8, 3, "`metadata.n`"],
      [9, 10, "`version`"],
    ]);
    expect(codes(built, "field-invalid")[2]!.message).toContain("only applies with `context: fork`");
    const extra = { "disable-model-invocation": "true", compatibility: "x".repeat(501), agent: "Explore", metadata: { n: 1 }, version: 1 };
    // `tags:` with no value is "not set": in neither place.
    expect(built.manifest.skills[0]).toMatchObject({ fields: {}, extra });
    expect(built.module.getSkill("main", "loose")).toMatchObject({ fields: {}, extra });
    // A quoted "true" does not count as true: the skill stays in the catalogue and the skill tool.
    expect(await built.prompt("main")).toContain("<name>loose</name>");
    expect(built.module.skillTool("main")!.parameters.properties.skill.enum).toEqual(["loose"]);
  });

  it("`skills schema frontmatter` prints the schema the agreement tests validate with", async () => {
    const run = await runCli(["schema", "frontmatter"], { cwd: await tempDir() });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual(frontmatterJsonSchema());
  });
});

describe("2. invocation control", () => {
  it("disable-model-invocation leaves the catalogue and the skill tool; user-invocable: false leaves listUserInvocable", async () => {
    const built = await build(
      {
        "skills/auto/SKILL.md": md("name: auto\ndescription: Runs when relevant."),
        "skills/manual/SKILL.md": md("name: manual\ndescription: Only on request.\ndisable-model-invocation: true", "Deploy $ARGUMENTS now."),
        "skills/background/SKILL.md": md("name: background\ndescription: Model only.\nuser-invocable: false"),
      },
      { location: "relative", agents: { main: { skills: [{ root: "skills" }] }, inliner: { skills: [{ root: "skills", inline: ["manual"] }] } } },
    );
    const prompt = await built.prompt("main");
    expect(prompt).toContain("<name>auto</name>");
    expect(prompt).toContain("<name>background</name>");
    expect(prompt).not.toContain("manual");
    const { module } = built;
    expect(module.skillTool("main")!.parameters.properties.skill.enum).toEqual(["auto", "background"]);
    expect(module.renderSkill("main", "manual", "staging")).toBe(
      '<skill name="manual" location="skills/manual/SKILL.md">\nReferences are relative to skills/manual.\n\nDeploy staging now.\n</skill>',
    );
    expect(names(module.listUserInvocable("main"))).toEqual(["auto", "manual"]);
    // Still in the manifest, and still inline-able.
    expect(names(built.manifest.agents.main!.skills)).toEqual(["auto", "background", "manual"]);
    expect(await built.prompt("inliner")).toBe('<skill name="manual" location="skills/manual/SKILL.md">\nReferences are relative to skills/manual.\n\nDeploy $ARGUMENTS now.\n</skill>');
    expect(module.skillTool("inliner")).toBeNull();
  });
});

describe("3. description fallback", () => {
  const tree = { "skills/notes/SKILL.md": "---\nname: notes\n---\n# Notes\n\nKeeps meeting notes tidy.\nUse when notes pile up.\n\nSecond paragraph.\n" };

  it('with descriptionFallback: "first-paragraph", a missing description is the first paragraph and a warning', async () => {
    const built = await build(tree, { descriptionFallback: "first-paragraph", location: "relative", agents: { main: { skills: [{ root: "skills" }] } } });
    expect(built.run.stderr).toContain("skills/notes/SKILL.md");
    expect(codes(built, "description-fallback")).toMatchObject([{ severity: "warn", file: "skills/notes/SKILL.md", line: 1, column: 1 }]);
    expect(codes(built, "description-missing")).toEqual([]);
    expect(await built.prompt("main")).toContain("<description>Keeps meeting notes tidy. Use when notes pile up.</description>");
    expect(built.module.getSkill("main", "notes").description).toBe("Keeps meeting notes tidy. Use when notes pile up.");
  });

  it("a first paragraph over 1024 characters is description-too-long, as a written description would be", async () => {
    const long = `${"Keeps notes. ".repeat(90).trim()}`;
    const built = await build({ "skills/notes/SKILL.md": `---\nname: notes\n---\n${long}\n\nSecond paragraph.\n` }, { descriptionFallback: "first-paragraph", agents: { main: { skills: [{ root: "skills" }] } } });
    expect(codes(built, "description-too-long")).toMatchObject([{ severity: "warn", file: "skills/notes/SKILL.md", message: `the description taken from the body's first paragraph is ${long.length} characters, over 1024` }]);
    expect(built.module.getSkill("main", "notes").description).toBe(long);
  });

  it("without it, a missing description stays a description-missing error and nothing is written", async () => {
    const built = await attempt(tree, { agents: { main: { skills: [{ root: "skills" }] } } });
    expect(built.run.code).toBe(1);
    expect(built.run.stderr).toContain("description-missing");
    await expect(stat(built.out)).rejects.toThrow();
  });
});

describe("4. budgets", () => {
  const description = (name: string) => `Handles ${name} work of every kind. Use when ${name} comes up.`;
  const tree: Tree = {
    "core/alpha/SKILL.md": skillMd("alpha", description("alpha")),
    "core/bravo/SKILL.md": skillMd("bravo", description("bravo")),
    "core/hidden/SKILL.md": md("name: hidden\ndescription: Never in the catalogue.\ndisable-model-invocation: true"),
    "core/zulu/SKILL.md": skillMd("zulu", description("zulu")),
    "extra/charlie/SKILL.md": skillMd("charlie", description("charlie")),
    "extra/delta/SKILL.md": skillMd("delta", description("delta")),
    "extra/echo/SKILL.md": skillMd("echo", description("echo")),
  };
  const entry = (root: string, name: string) => ({ name, description: description(name), location: `${root}/${name}/SKILL.md` });
  const fits = piCatalogue([entry("core", "alpha"), entry("core", "bravo"), entry("extra", "charlie")]).length;
  const withDelta = piCatalogue([entry("core", "alpha"), entry("core", "bravo"), entry("extra", "charlie"), entry("extra", "delta")]).length;
  const config = (budget: number) => ({
    location: "relative",
    agents: { main: { budget, skills: [{ root: "core", inline: ["zulu"], available: ["*", "!zulu"] }, { root: "extra" }] } },
  });

  it("drops the last catalogue entries in prompt order, names each with the figures, and keeps the catalogue within the budget", async () => {
    const budget = withDelta - 1;
    const built = await build(tree, config(budget));
    const [exceeded, ...more] = codes(built, "budget-exceeded");
    expect(more).toEqual([]);
    const before = piCatalogue(["alpha", "bravo"].map((name) => entry("core", name)).concat(["charlie", "delta", "echo"].map((name) => entry("extra", name)))).length;
    expect(exceeded).toMatchObject({ severity: "warn", file: "skills.config.json" });
    expect(exceeded!.message).toBe(
      `agent "main": the catalogue takes ${before} characters, over its budget of ${budget}; dropped the last 2 skills in prompt order from it, leaving ${fits}: delta (extra/delta/SKILL.md), echo (extra/echo/SKILL.md)`,
    );
    expect(built.manifest.agents.main).toMatchObject({ budget, characters: { catalogue: fits } });
    expect(fits).toBeLessThanOrEqual(budget);
    // Dropped from the catalogue only: every skill stays the agent's, the dropped ones unlisted.
    expect(names(built.manifest.agents.main!.skills)).toEqual(["alpha", "bravo", "hidden", "zulu", "charlie", "delta", "echo"]);
    expect(names(built.manifest.agents.main!.skills.filter((skill) => skill.listed))).toEqual(["alpha", "bravo", "charlie"]);
    const prompt = await built.prompt("main");
    expect(prompt.startsWith(piCatalogue([entry("core", "alpha"), entry("core", "bravo"), entry("extra", "charlie")]))).toBe(true);
    expect(prompt).toContain('<skill name="zulu"');
    expect(names(built.module.agents.main!.skills)).toEqual(["alpha", "bravo", "hidden", "zulu", "charlie", "delta", "echo"]);
    expect(built.module.skillTool("main")!.parameters.properties.skill.enum).toEqual(["alpha", "bravo", "zulu", "charlie"]);
  });

  it("drops nothing under a budget the catalogue fits, fills one exactly, and `skills list` shows the budget's use", async () => {
    const roomy = await build(tree, config(100_000));
    expect(codes(roomy, "budget-exceeded")).toEqual([]);
    expect(names(roomy.manifest.agents.main!.skills)).toEqual(["alpha", "bravo", "hidden", "zulu", "charlie", "delta", "echo"]);
    const exact = await build(tree, config(fits));
    expect(exact.manifest.agents.main!.characters.catalogue).toBe(fits);
    expect(names(exact.manifest.agents.main!.skills)).toEqual(["alpha", "bravo", "hidden", "zulu", "charlie", "delta", "echo"]);
    const list = await runCli(["list", "--format", "json"], { cwd: exact.dir });
    expect(JSON.parse(list.stdout).agents[0]).toMatchObject({ id: "main", catalogueCharacters: fits, budget: { limit: fits, dropped: ["delta", "echo"] } });
    const pretty = await runCli(["list"], { cwd: exact.dir });
    expect(pretty.stdout).toContain(`catalogue ${fits} characters (100% of its ${fits} budget)`);
  });
});

describe("4. budgets with a function format", () => {
  it("measure the function's catalogue: what it returns for the available skills alone, with no context", async () => {
    const tree = Object.fromEntries(["alpha", "bravo", "charlie"].map((name) => [`skills/${name}/SKILL.md`, skillMd(name)]));
    const format = `(ctx) => [ctx.context, ctx.skills.filter((s) => s.mode === "available" && !s.hidden).map((s) => s.name).join(",")].filter(Boolean).join("|")`;
    const built = await build(
      { ...tree, "context.md": "Context." },
      `export default { agents: { fn: { budget: ${"alpha,bravo".length}, context: ["context.md"], skills: [{ root: "skills" }], format: ${format} } } };\n`,
    );
    expect(codes(built, "budget-exceeded").map((d) => d.message)).toEqual([
      `agent "fn": the catalogue takes ${"alpha,bravo,charlie".length} characters, over its budget of 11; dropped the last skill in prompt order from it, leaving 11: charlie (skills/charlie/SKILL.md)`,
    ]);
    expect(await built.prompt("fn")).toBe("Context.|alpha,bravo");
    expect(built.manifest.agents.fn!.characters).toEqual({ prompt: "Context.|alpha,bravo".length, catalogue: "alpha,bravo".length });
  });
});

describe("5. formats", () => {
  const tree = {
    "skills/alpha/SKILL.md": md("name: alpha\ndescription: Does alpha.\nmetadata:\n  team: a", "Alpha body."),
    "skills/hidden/SKILL.md": md("name: hidden\ndescription: Hidden.\ndisable-model-invocation: true", "Hidden body."),
    "skills/zulu/SKILL.md": md("name: zulu\ndescription: Does zulu.\nowner: z", "Zulu body with $ARGUMENTS."),
  };

  it("markdown: a list of available skills, then each inline block with its base directory", async () => {
    const built = await build(tree, { format: "markdown", location: "relative", agents: { main: { skills: [{ root: "skills", available: ["*", "!zulu"], inline: ["zulu"] }] } } });
    const expected = "Available skills:\n- alpha: Does alpha. (file: skills/alpha/SKILL.md)\n\n[Skill: zulu]\nBase directory for this skill: skills/zulu\n\nZulu body with $ARGUMENTS.";
    expect(await built.prompt("main")).toBe(expected);
    expect(built.module.getPrompt("main")).toBe(expected);
    expect(built.module.renderSkill("main", "zulu", "x y")).toBe("[Skill: zulu]\nBase directory for this skill: skills/zulu\n\nZulu body with x y.");
  });

  const functionConfig = (format: string) => `import { defineConfig } from "skillbake";
export default defineConfig({
  location: "relative",
  agents: {
    fn: {
      description: "A custom agent",
      context: ["context.md"],
      skills: [{ root: "skills", available: ["*", "!zulu"], inline: ["zulu"] }],
      format: ${format},
    },
  },
});
`;

  it("a function receives the resolved agent and returns the prompt", async () => {
    const DEFAULTS = { context: "inline", agent: "general", "user-invocable": true, "disable-model-invocation": false };
    const format = `(ctx) => JSON.stringify({ agent: ctx.agent, description: ctx.description, context: ctx.context, skills: ctx.skills.map((s) => ({ name: s.name, description: s.description, mode: s.mode, hidden: s.hidden, location: s.location, baseDir: s.baseDir, source: s.source, file: s.file, fields: s.fields, extra: s.extra, body: s.body })) })`;
    const built = await build({ ...tree, "context.md": "House rules.\n" }, functionConfig(format));
    expect(built.run.stderr).toContain("Wrote dist/skills");
    const prompt = await built.prompt("fn");
    expect(JSON.parse(prompt)).toEqual({
      agent: "fn",
      description: "A custom agent",
      context: "House rules.",
      skills: [
        { name: "alpha", description: "Does alpha.", mode: "available", hidden: false, location: "skills/alpha/SKILL.md", baseDir: "skills/alpha", source: 0, file: "skills/alpha/SKILL.md", fields: { ...DEFAULTS, metadata: { team: "a" } }, extra: {}, body: "Alpha body." },
        { name: "hidden", description: "Hidden.", mode: "available", hidden: true, location: "skills/hidden/SKILL.md", baseDir: "skills/hidden", source: 0, file: "skills/hidden/SKILL.md", fields: { ...DEFAULTS, "disable-model-invocation": true }, extra: {}, body: "Hidden body." },
        { name: "zulu", description: "Does zulu.", mode: "inline", hidden: false, location: "skills/zulu/SKILL.md", baseDir: "skills/zulu", source: 0, file: "skills/zulu/SKILL.md", fields: DEFAULTS, extra: { owner: "z" }, body: "Zulu body with $ARGUMENTS." },
      ],
    });
    expect(built.manifest.agents.fn).toMatchObject({ format: "function", description: "A custom agent" });
    expect(built.module.getPrompt("fn")).toBe(prompt);
    expect(built.module.agents.fn).toMatchObject({ format: "function", description: "A custom agent" });
    // renderSkill needs a block format of its own: a function agent's blocks are Pi's.
    expect(built.module.renderSkill("fn", "zulu", "now")).toBe('<skill name="zulu" location="skills/zulu/SKILL.md">\nReferences are relative to skills/zulu.\n\nZulu body with now.\n</skill>');
  });

  it("a function that throws, or returns anything but a string, is a config error (exit 2) naming the agent", async () => {
    const thrown = await attempt(tree, functionConfig(`() => { throw new Error("no template for this agent"); }`));
    expect(thrown.run.code).toBe(2);
    expect(thrown.run.stderr).toContain('agents.fn.format: the format function threw for agent "fn": no template for this agent');
    expect(thrown.run.stderr).not.toMatch(/\n\s+at /);
    const asynchronous = await attempt(tree, functionConfig(`async () => "late"`));
    expect(asynchronous.run.code).toBe(2);
    expect(asynchronous.run.stderr).toContain('agents.fn.format: the format function returned a Promise (format functions are synchronous) for agent "fn", not the prompt string');
  });

  it("a JSON config cannot name a function: an unknown format is exit 2 with the field path", async () => {
    const built = await attempt(tree, { format: "html", agents: { main: { skills: [{ root: "skills" }] } } });
    expect(built.run.code).toBe(2);
    expect(built.run.stderr).toContain('format: expected "pi", "markdown" or a function (ctx) => string');
  });
});

describe("6. precedence between sources", () => {
  const tree = {
    "builtin/deploy/SKILL.md": skillMd("deploy", "Built-in deploy."),
    "builtin/lint/SKILL.md": skillMd("lint", "Built-in lint."),
    "user/deploy/SKILL.md": skillMd("deploy", "The user's own deploy."),
  };
  const sources = [{ root: "builtin" }, { root: "user" }];

  it('keeps both by default with a warning; "first" and "last" keep one without', async () => {
    const built = await build(tree, {
      location: "relative",
      agents: { both: { skills: sources }, first: { skills: sources, duplicates: "first" }, last: { skills: sources, duplicates: "last" } },
    });
    const warnings = codes(built, "duplicate-across-sources");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.message).toContain('agent "both" selects "deploy" from 2 sources');
    const files = (agent: string) => built.manifest.agents[agent]!.skills.map((skill) => skill.file);
    expect(files("both")).toEqual(["builtin/deploy/SKILL.md", "builtin/lint/SKILL.md", "user/deploy/SKILL.md"]);
    expect(files("first")).toEqual(["builtin/deploy/SKILL.md", "builtin/lint/SKILL.md"]);
    expect(files("last")).toEqual(["builtin/lint/SKILL.md", "user/deploy/SKILL.md"]);
    expect(built.module.getSkill("first", "deploy").description).toBe("Built-in deploy.");
    expect(built.module.getSkill("last", "deploy").description).toBe("The user's own deploy.");
    expect(await built.prompt("last")).not.toContain("Built-in deploy.");
  });
});

describe("7. allow-lists", () => {
  it("undefined keeps all, [] none, [\"*\"] all, globs and exclusions some; a pattern that allows nothing is reported", async () => {
    const tree = Object.fromEntries(["api-docs", "api-lint", "abc", "deploy"].map((name) => [`skills/${name}/SKILL.md`, skillMd(name)]));
    const skills = [{ root: "skills" }];
    const built = await build(tree, {
      agents: {
        unset: { skills },
        none: { skills, allow: [] },
        star: { skills, allow: ["*"] },
        some: { skills, allow: ["api-*", "!api-lint", "deploy", "nope"] },
      },
    });
    const allowed = (agent: string) => names(built.manifest.agents[agent]!.skills);
    expect(allowed("unset")).toEqual(["abc", "api-docs", "api-lint", "deploy"]);
    expect(allowed("none")).toEqual([]);
    expect(allowed("star")).toEqual(["abc", "api-docs", "api-lint", "deploy"]);
    expect(allowed("some")).toEqual(["api-docs", "deploy"]);
    expect(names(built.module.agents.some!.skills)).toEqual(["api-docs", "deploy"]);
    expect(built.module.getPrompt("none")).toBe("");
    expect(codes(built, "pattern-unmatched").map((d) => d.message)).toEqual(['agents.some.allow: "nope" allows no selected skill']);
  });
});

describe("8. resources and staging", () => {
  const script = "#!/bin/sh\necho staged-script-ran\n";
  const logo = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]);
  const tree: Tree = {
    "skills/.gitignore": "*.log\n",
    "skills/pdf/SKILL.md": md("name: pdf\ndescription: Reads PDFs.", "See references/guide.md and run scripts/run.sh."),
    "skills/pdf/references/guide.md": "# Guide\n",
    "skills/pdf/scripts/run.sh": script,
    "skills/pdf/scripts/debug.log": "ignored\n",
    "skills/pdf/assets/logo.png": logo,
    "skills/pdf/.cache/x": "dot folders are skipped\n",
    "skills/pdf/node_modules/dep/index.js": "skipped\n",
    "skills/pdf/shared": { link: "../common" },
    "skills/pdf/secret.txt": { link: "../../../outside.txt" },
    "skills/common/data.txt": "shared data\n",
    "outside.txt": "never listed\n",
  };
  const config = (extra: object = {}) => ({ location: "relative", agents: { main: { skills: [{ root: "skills" }] } }, ...extra });
  const file = (path: string, data: string | Buffer) => ({ path, size: Buffer.byteLength(data), sha256: sha256(data) });
  const pdfFiles = [
    file("SKILL.md", tree["skills/pdf/SKILL.md"] as string),
    file("assets/logo.png", logo),
    file("references/guide.md", "# Guide\n"),
    file("scripts/run.sh", script),
    file("shared/data.txt", "shared data\n"),
  ];

  async function project(extra: object = {}): Promise<Built> {
    const dir = await tempDir();
    // The root is `<dir>/project/skills`, so the link to `<dir>/outside.txt` leaves it.
    await writeTree(dir, { "outside.txt": "never listed\n" });
    const projectTree = Object.fromEntries(Object.entries(tree).filter(([path]) => path !== "outside.txt").map(([path, content]) => [`project/${path}`, content]));
    await writeTree(dir, { ...projectTree, "project/skills.config.json": JSON.stringify(config(extra)) });
    await chmod(join(dir, "project/skills/pdf/scripts/run.sh"), 0o755);
    const run = await runCli(["build"], { cwd: join(dir, "project") });
    expect(run.stderr).toContain("Wrote dist/skills");
    const out = join(dir, "project/dist/skills");
    const manifest = JSON.parse(await readFile(join(out, "manifest.json"), "utf8")) as Manifest;
    const module = (await import(pathToFileURL(join(out, "index.js")).href)) as BundleModule;
    return { dir: join(dir, "project"), out, run, manifest, module, prompt: (agent) => readFile(join(out, "prompts", `${agent}.txt`), "utf8") };
  }

  it("the manifest lists each skill's files (path, size, sha256) by the discovery rules, and a folder summary", async () => {
    const built = await project();
    const pdf = built.manifest.skills.find((skill) => skill.name === "pdf")!;
    expect(pdf.files).toEqual(pdfFiles);
    expect(pdf.structure).toEqual({
      files: 5,
      bytes: pdfFiles.reduce((sum, entry) => sum + entry.size, 0),
      folders: {
        assets: { files: 1, bytes: logo.length },
        references: { files: 1, bytes: 8 },
        scripts: { files: 1, bytes: script.length },
        shared: { files: 1, bytes: 12 },
      },
    });
    expect(pdf.staged).toBeUndefined();
    expect(built.manifest.diagnostics.map((d) => [d.code, d.file])).toEqual([["symlink-escape", "skills/pdf/secret.txt"]]);
  });

  it("stage: true copies each skill folder into skills/<name>/ and the bundle works after the originals are deleted", async () => {
    const built = await project({ stage: true });
    expect(built.manifest.skills.find((skill) => skill.name === "pdf")).toMatchObject({ staged: "skills/pdf", location: "dist/skills/skills/pdf/SKILL.md", files: pdfFiles });
    await rm(join(built.dir, "skills"), { recursive: true });

    const prompt = await built.prompt("main");
    expect(prompt).toContain("<location>dist/skills/skills/pdf/SKILL.md</location>");
    const pdf = built.module.getSkill("main", "pdf");
    for (const entry of pdfFiles) {
      const copy = await readFile(join(built.dir, pdf.baseDir, entry.path));
      expect({ path: entry.path, sha256: sha256(copy) }).toEqual({ path: entry.path, sha256: entry.sha256 });
    }
    expect(await readFile(join(built.dir, pdf.location), "utf8")).toBe(tree["skills/pdf/SKILL.md"]);
    expect(execFileSync(join(built.dir, pdf.baseDir, "scripts/run.sh"), { encoding: "utf8" })).toBe("staged-script-ran\n");
    expect(built.module.renderSkill("main", "pdf")).toContain("References are relative to dist/skills/skills/pdf.");
  });

  it("with stage, { base } names where the bundle is deployed, and build --check notices a changed copy", async () => {
    const built = await project({ stage: true, location: { base: "/app/skills-bundle" } });
    expect(await built.prompt("main")).toContain("<location>/app/skills-bundle/skills/pdf/SKILL.md</location>");
    expect((await runCli(["build", "--check"], { cwd: built.dir })).code).toBe(0);
    await writeFile(join(built.out, "skills/pdf/references/guide.md"), "# Edited\n");
    const check = await runCli(["build", "--check"], { cwd: built.dir });
    expect(check.code).toBe(1);
    expect(check.stderr).toContain("skills/pdf/references/guide.md");
  });

  it("a root around the outDir does not find the staged copies as skills on the next build", async () => {
    const built = await build({ "tools/lint/SKILL.md": skillMd("lint") }, { stage: true, location: "relative", agents: { main: { skills: [{ root: "." }] } } });
    const again = await runCli(["build"], { cwd: built.dir });
    expect(again.stderr).toContain("(1 agent, 1 skill); 0 errors, 0 warnings");
    expect(JSON.parse(await readFile(join(built.out, "manifest.json"), "utf8")).skills.map((skill: Entry) => skill.file)).toEqual(["tools/lint/SKILL.md"]);
  });

  it("staged folders of one name get -2, -3…; invalid names are made safe", async () => {
    const built = await build(
      {
        "a/deploy/SKILL.md": skillMd("deploy"),
        "b/deploy/SKILL.md": skillMd("deploy"),
        "b/deploy-2/SKILL.md": skillMd("deploy-2"),
        "b/odd/SKILL.md": skillMd("Odd Name!"),
        "c/deploy/SKILL.md": skillMd("deploy"),
        "c/deploy-4/SKILL.md": skillMd("deploy-4"),
        "d/deploy/SKILL.md": skillMd("deploy"),
      },
      { stage: true, location: "relative", agents: { main: { skills: [{ root: "a" }, { root: "b" }, { root: "c" }, { root: "d" }] } } },
    );
    expect(Object.fromEntries(built.manifest.skills.map((skill) => [skill.file, skill.staged]))).toEqual({
      "a/deploy/SKILL.md": "skills/deploy",
      "b/deploy-2/SKILL.md": "skills/deploy-2",
      "b/deploy/SKILL.md": "skills/deploy-3",
      "b/odd/SKILL.md": "skills/odd-name",
      "c/deploy/SKILL.md": "skills/deploy-5",
      "c/deploy-4/SKILL.md": "skills/deploy-4",
      "d/deploy/SKILL.md": "skills/deploy-6",
    });
    expect(await readFile(join(built.out, "skills/deploy-3/SKILL.md"), "utf8")).toBe(skillMd("deploy"));
  });
});

describe("9. agent context", () => {
  it("context files are joined in path order with a rule between them, before the skills", async () => {
    const built = await build(
      {
        "agent-context/b-tools.md": "Use the tools.\r\n",
        "agent-context/a-house-rules.md": "\uFEFF# House rules\n\nBe brief.\n\n",
        "agent-context/notes.txt": "not Markdown\n",
        "skills/alpha/SKILL.md": skillMd("alpha", "Does alpha."),
      },
      { location: "relative", agents: { main: { context: ["agent-context/*.md", "missing/*.md"], skills: [{ root: "skills" }] } } },
    );
    const context = "# House rules\n\nBe brief.\n\n---\n\nUse the tools.";
    const expected = `${context}\n\n${piCatalogue([{ name: "alpha", description: "Does alpha.", location: "skills/alpha/SKILL.md" }])}`;
    expect(await built.prompt("main")).toBe(expected);
    expect(built.module.getPrompt("main")).toBe(expected);
    expect(built.manifest.agents.main!.context).toEqual(["agent-context/a-house-rules.md", "agent-context/b-tools.md"]);
    expect(codes(built, "pattern-unmatched").map((d) => d.message)).toEqual(['agents.main.context: "missing/*.md" matches no file']);
  });
});
