import { execFile } from "node:child_process";
import { readFile, symlink, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import AjvModule from "ajv";
import Ajv2020Module from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { loadConfig } from "../src/compile/config.js";
import { REPO, runCli, tempDir, writeTree } from "./helpers.js";

/** What every skill's fields carry unwritten (seed 001's defaults), beside the config's own fields. */
const BUILT_IN_DEFAULTS = { context: "inline", agent: "general", "user-invocable": true, "disable-model-invocation": false };

const Ajv = AjvModule.default ?? AjvModule;
const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;
const TSC = join(REPO, "node_modules/typescript/bin/tsc");

/** Required, optional, enum (with a default) and nested fields, as a team would declare them. */
const SCHEMA = `z.object({
    owner: z.string().describe("The team that owns the skill."),
    tier: z.enum(["gold", "silver"]).default("silver"),
    deploy: z.object({ region: z.string(), replicas: z.number().int().optional() }),
    reviewers: z.array(z.string()).optional(),
  })`;

const config = (frontmatter = SCHEMA, rest = "") => `import { defineConfig, z } from "skillbake";
export default defineConfig({
  location: "relative",
  frontmatter: ${frontmatter},${rest}
  agents: { coding: { skills: [{ root: "skills" }] } },
});
`;

const DEPLOY = `---
name: deploy
description: Deploy the app.
owner: platform
tier: gold
deploy:
  region: eu-west-1
  replicas: 3
reviewers: [ana, bo]
team-note: kept as it is
---

Deploy it.
`;

const REVIEW = `---
name: review
description: Review code.
owner: qa
deploy:
  region: us-east-1
---

Review it.
`;

/** Every kind of failure, each on its own line. */
const BROKEN = `---
name: broken
description: Broken fields.
owner: 42
tier: platinum
deploy:
  region: eu
  replicas: many
reviewers: ana
---

Body.
`;

async function project(files: Record<string, string>): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, { "skills.config.ts": config(), "skills/deploy/SKILL.md": DEPLOY, "skills/review/SKILL.md": REVIEW, ...files });
  return dir;
}

const manifestOf = async (dir: string) => JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8"));

describe("custom frontmatter fields (the config's `frontmatter` schema)", () => {
  it("reports each wrong value at its line:col in SKILL.md, as an error that leaves the skill out", async () => {
    const dir = await project({ "skills/broken/SKILL.md": BROKEN });
    const run = await runCli(["check", "--format", "json"], { cwd: dir });
    expect(run.code).toBe(1);
    const diagnostics = JSON.parse(run.stdout).diagnostics.map(({ code, severity, line, column, message }: Record<string, unknown>) => ({ code, severity, line, column, message }));
    const at = (line: number, column: number, message: string) => ({ code: "frontmatter-schema", severity: "error", line, column, message });
    expect(diagnostics).toEqual([
      at(4, 8, "`owner` is the number 42, not text"),
      at(5, 7, '`tier` is the text "platinum", not one of "gold", "silver"'),
      at(8, 13, '`deploy.replicas` is the text "many", not a number'),
      at(9, 12, '`reviewers` is the text "ana", not a list'),
    ]);
    const list = JSON.parse((await runCli(["list", "--format", "json"], { cwd: dir })).stdout);
    expect(list.agents[0].skills.map((skill: { name: string }) => skill.name)).toEqual(["deploy", "review"]);
  });

  it("reports a missing required field, top-level or nested, where its parent is", async () => {
    const dir = await project({ "skills/thin/SKILL.md": "---\nname: thin\ndescription: Thin.\ndeploy:\n  replicas: 2\n---\n\nBody.\n" });
    const run = await runCli(["check", "--format", "json"], { cwd: dir });
    const diagnostics = JSON.parse(run.stdout).diagnostics.map(({ line, column, message, hint }: Record<string, unknown>) => ({ line, column, message, hint }));
    expect(diagnostics).toEqual([
      { line: 1, column: 1, message: "`owner` is required by the config's `frontmatter` schema", hint: "Add `owner:`." },
      { line: 5, column: 3, message: "`deploy.region` is required by the config's `frontmatter` schema", hint: "Add `region:` under `deploy`." },
    ]);
  });

  it("puts valid values under fields (defaults applied) and leaves undeclared ones under extra", async () => {
    const dir = await project({});
    const build = await runCli(["build"], { cwd: dir });
    expect(build.code, build.stderr).toBe(0);
    const skills = (await manifestOf(dir)).skills;
    expect(skills.map((skill: { fields: unknown; extra: unknown }) => [skill.fields, skill.extra])).toEqual([
      [{ ...BUILT_IN_DEFAULTS, owner: "platform", tier: "gold", deploy: { region: "eu-west-1", replicas: 3 }, reviewers: ["ana", "bo"] }, { "team-note": "kept as it is" }],
      [{ ...BUILT_IN_DEFAULTS, owner: "qa", tier: "silver", deploy: { region: "us-east-1" } }, {}],
    ]);
    const { agents } = await import(join(dir, "dist/skills/index.js"));
    expect(agents.coding.skills[1].fields).toMatchObject({ owner: "qa", tier: "silver" });
  });

  it("follows the schema's own strictness: a strict schema makes an undeclared field an error, with a suggestion", async () => {
    const dir = await project({
      "skills.config.ts": config(SCHEMA.replace("z.object({\n    owner", "z.strictObject({\n    owner")),
      "skills/typo/SKILL.md": "---\nname: typo\ndescription: Typo.\nowner: qa\ndeploy:\n  region: eu\nreviewrs: [ana]\n---\n\nBody.\n",
    });
    const run = await runCli(["check", "--format", "json"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).diagnostics).toEqual([
      {
        code: "frontmatter-schema",
        severity: "error",
        file: "skills/deploy/SKILL.md",
        line: 10,
        column: 1,
        message: "`team-note` is not a field the config's `frontmatter` schema declares",
        hint: "Remove it, or declare it in the schema.",
      },
      {
        code: "frontmatter-schema",
        severity: "error",
        file: "skills/typo/SKILL.md",
        line: 7,
        column: 1,
        message: "`reviewrs` is not a field the config's `frontmatter` schema declares",
        hint: 'Remove it, or declare it in the schema. Did you mean "reviewers"?',
      },
    ]);
  });

  it("is configurable in rules: as a warning, the skill is still left out (its fields would break the types)", async () => {
    const dir = await project({ "skills.config.ts": config(SCHEMA, '\n  rules: { "frontmatter-schema": "warn" },'), "skills/broken/SKILL.md": BROKEN });
    const build = await runCli(["build"], { cwd: dir });
    expect(build.code, build.stderr).toBe(0);
    expect(build.stderr).toContain("warning  `owner` is the number 42, not text  [frontmatter-schema]");
    expect((await manifestOf(dir)).skills.map((skill: { name: string }) => skill.name)).toEqual(["deploy", "review"]);
  });

  it("declared fields are not unknown fields", async () => {
    const dir = await project({ "skills.config.ts": config(SCHEMA, '\n  rules: { "field-unknown": "error" },') });
    const run = await runCli(["check", "--format", "json"], { cwd: dir });
    const codes = JSON.parse(run.stdout).diagnostics.map((d: { code: string; message: string }) => d.message);
    expect(codes).toEqual(["`team-note` is not a known frontmatter field; it is kept under `extra`"]);
  });

  it("gives a config's `z` from \"skillbake\" the compiler's own zod", async () => {
    const dir = await project({});
    const loaded = await loadConfig(undefined, dir);
    expect(loaded.config.frontmatter?.constructor).toBe(z.ZodObject);
  });

  it("works from a JavaScript config that imports the installed zod (another copy of zod than the CLI's)", async () => {
    /** A project with zod installed (this checkout's) and a JavaScript config importing its `z` from there. */
    const installed = async (files: Record<string, string>) => {
      const dir = await project({ "skills.config.mjs": config().replace('import { defineConfig, z } from "skillbake";', 'import { defineConfig } from "skillbake";\nimport { z } from "zod";'), ...files });
      await mkdir(join(dir, "node_modules"), { recursive: true });
      await symlink(join(REPO, "node_modules/zod"), join(dir, "node_modules/zod"), "dir");
      return dir;
    };
    const dir = await installed({});
    const build = await runCli(["build", "--config", "skills.config.mjs"], { cwd: dir });
    expect(build.code, build.stderr).toBe(0);
    expect((await manifestOf(dir)).skills[1].fields).toEqual({ ...BUILT_IN_DEFAULTS, owner: "qa", tier: "silver", deploy: { region: "us-east-1" } });
    const broken = await runCli(["check", "--config", "skills.config.mjs"], { cwd: await installed({ "skills/broken/SKILL.md": BROKEN }) });
    expect(broken.code).toBe(1);
    expect(broken.stderr).toContain('`tier` is the text "platinum", not one of "gold", "silver"');
  });

  it("a JSON config cannot carry a zod schema, and a schema may not declare a built-in field again: exit 2", async () => {
    const json = await tempDir();
    await writeTree(json, { "skills.config.json": JSON.stringify({ frontmatter: { owner: "string" }, agents: { coding: { skills: [{ root: "skills" }] } } }) });
    const fromJson = await runCli(["check"], { cwd: json });
    expect(fromJson.code).toBe(2);
    expect(fromJson.stderr).toContain("frontmatter: a JSON config cannot hold a zod schema; move the config to skills.config.ts");

    const dir = await project({ "skills.config.ts": config("z.object({ owner: z.string(), tags: z.array(z.enum([\"a\"])) })") });
    const again = await runCli(["check"], { cwd: dir });
    expect(again.code).toBe(2);
    expect(again.stderr).toContain("frontmatter.tags: `tags` is a built-in frontmatter field, with its own type and rules; declare only your own fields");

    const notSchema = await project({ "skills.config.ts": config("{ owner: 'string' }") });
    const wrong = await runCli(["check"], { cwd: notSchema });
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain("frontmatter: expected a zod object schema");
  });

  it("skills schema frontmatter and manifest include the custom fields when run with a config", async () => {
    const dir = await project({});
    const frontmatter = JSON.parse((await runCli(["schema", "frontmatter"], { cwd: dir })).stdout);
    expect(frontmatter.properties.owner).toEqual({ type: "string", description: "The team that owns the skill." });
    expect(frontmatter.properties.tier).toMatchObject({ enum: ["gold", "silver"] });
    expect(frontmatter.required).toEqual(["name", "description", "owner", "deploy"]);
    const validate = new Ajv({ strict: false }).compile(frontmatter);
    expect(validate({ name: "x", description: "X.", owner: "me", deploy: { region: "eu" } })).toBe(true);
    expect(validate({ name: "x", description: "X.", owner: 42, deploy: { region: "eu" } })).toBe(false);
    expect(validate({ name: "x", description: "X.", owner: "me", tier: "platinum", deploy: { region: "eu" } })).toBe(false);
    // Without a config, the built-in fields alone.
    const bare = JSON.parse((await runCli(["schema", "frontmatter"], { cwd: await tempDir() })).stdout);
    expect(bare.properties.owner).toBeUndefined();

    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const manifestSchema = JSON.parse((await runCli(["schema", "manifest", "--config", "skills.config.ts"], { cwd: dir })).stdout);
    const validateManifest = new Ajv2020({ strict: true, allErrors: true }).compile(manifestSchema);
    const manifest = await manifestOf(dir);
    expect(validateManifest(manifest), JSON.stringify(validateManifest.errors)).toBe(true);
    manifest.skills[0].fields.owner = 7;
    expect(validateManifest(manifest)).toBe(false);
  });

  it("types the fields in the generated .d.ts: tsc accepts right uses and rejects wrong ones", async () => {
    const dir = await project({
      // A description that would end the doc comment it goes in.
      "skills.config.ts": config(SCHEMA.replace("The team that owns the skill.", "The team that owns the skill; */ ends a comment.")),
      "package.json": JSON.stringify({ type: "module" }),
      "check.ts": `import { getSkill } from "./dist/skills/index.js";
const deploy = getSkill("coding", "deploy");
const owner: string = deploy.fields.owner;
const tier: "gold" | "silver" = deploy.fields.tier;
const region: string = deploy.fields.deploy.region;
const replicas: number | undefined = deploy.fields.deploy.replicas;
const reviewers: readonly string[] | undefined = deploy.fields.reviewers;
const tags: readonly string[] | undefined = deploy.fields.tags;
// @ts-expect-error: owner is a string
const wrong: number = deploy.fields.owner;
// @ts-expect-error: not a tier
const platinum: typeof deploy.fields.tier = "platinum";
// @ts-expect-error: replicas may be absent
const sure: number = deploy.fields.deploy.replicas;
// @ts-expect-error: readonly
deploy.fields.owner = "me";
export { owner, tier, region, replicas, reviewers, tags, wrong, platinum, sure };
`,
    });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const args = ["--noEmit", "--strict", "--skipLibCheck", "--module", "nodenext", "--target", "es2022", "--types", "node", "--typeRoots", join(REPO, "node_modules/@types")];
    const tsc = (file: string) =>
      promisify(execFile)(process.execPath, [TSC, ...args, file], { cwd: dir }).then(
        () => "",
        (error: { stdout: string }) => error.stdout,
      );
    expect(await tsc("check.ts")).toBe("");
    expect(await readFile(join(dir, "dist/skills/index.d.ts"), "utf8")).toContain("/** The team that owns the skill; *\\/ ends a comment. */");
    await writeTree(dir, { "wrong.ts": `import { getSkill } from "./dist/skills/index.js";\nexport const owner: number = getSkill("coding", "deploy").fields.owner;\n` });
    expect(await tsc("wrong.ts")).toContain("Type 'string' is not assignable to type 'number'");
  }, 60_000);
});
