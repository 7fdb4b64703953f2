import { readFile } from "node:fs/promises";
import { join } from "node:path";
import AjvModule from "ajv";
import Ajv2020Module from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { manifestSchema } from "../src/bundle/manifest.js";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const Ajv = AjvModule.default ?? AjvModule;
const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;

async function schema(kind: string): Promise<Record<string, unknown>> {
  const run = await runCli(["schema", kind], { cwd: await tempDir() });
  expect(run.code).toBe(0);
  expect(run.stderr).toBe("");
  return JSON.parse(run.stdout);
}

describe("skills schema", () => {
  it("manifest: the manifest.json of a real build is valid, and parses with the zod model it is generated from", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({
        agents: {
          coding: { skills: [{ root: "skills", available: ["*"], inline: ["b"] }] },
          chat: { format: "markdown", skills: [{ root: "skills", available: ["a", "missing"] }] },
        },
      }),
      "skills/a/SKILL.md": `---\nname: a\ndescription: A.\nallowed-tools: Read Grep\ntags: [x]\nowner: me\n---\n\nBody\n`,
      "skills/b/SKILL.md": skillMd("b"),
      "skills/b/references/guide.md": "# Guide\n",
      // A finding that counts others (its `count`).
      "skills/c/SKILL.md": skillMd("c", "C.", Array.from({ length: 102 }, (_, index) => `[${index}](missing-${index}.md)`).join("\n")),
    });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const manifest = JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8"));
    expect(manifest.diagnostics.map((diagnostic: { code: string }) => diagnostic.code)).toContain("pattern-unmatched");
    expect(manifest.diagnostics.filter((diagnostic: { count?: number }) => diagnostic.count !== undefined)).toEqual([expect.objectContaining({ code: "link-broken", count: 2 })]);

    const validate = new Ajv2020({ strict: true, allErrors: true }).compile(await schema("manifest"));
    expect(validate(manifest), JSON.stringify(validate.errors)).toBe(true);
    expect(manifestSchema().parse(manifest)).toEqual(manifest);
    // The manifest names the schema its installed package ships, by a path editors resolve against the manifest.
    expect(manifest.$schema).toBe("../../node_modules/skillbake/dist/manifest.schema.json");
    expect((await schema("manifest")).$id).toBeUndefined();

    // The schema is strict: it is the definition of the format, not a loose description of it.
    expect(validate({ ...manifest, schemaVersion: 2 })).toBe(false);
    expect(validate({ ...manifest, surprise: true })).toBe(false);
    const [skill] = manifest.skills;
    expect(validate({ ...manifest, skills: [{ ...skill, fields: { ...skill.fields, "allowed-tools": "Read Grep" } }] })).toBe(false);
  });

  it("config: a JSON Schema that accepts a valid config and rejects a bad field", async () => {
    const validate = new Ajv2020({ strict: false }).compile(await schema("config"));
    expect(validate({ agents: { coding: { skills: [{ root: "skills", available: ["*"] }], format: "markdown" } }, location: { base: "/srv" } })).toBe(true);
    expect(validate({ agents: { coding: { skills: [{ root: 42 }] } } })).toBe(false);
    expect(validate({ agents: { Coding: { skills: [{ root: "skills" }] } } })).toBe(false);
  });

  it("frontmatter: draft-07 for editors", async () => {
    const frontmatter = await schema("frontmatter");
    expect(frontmatter.$schema).toBe("http://json-schema.org/draft-07/schema#");
    const validate = new Ajv({ strict: false }).compile(frontmatter);
    expect(validate({ name: "pdf", description: "Fill PDF forms.", "allowed-tools": "Read Grep", owner: "me" })).toBe(true);
    expect(validate({ name: "pdf" })).toBe(false);
  });

  it("exit 2 with the choices when the schema is missing or unknown", async () => {
    const cwd = await tempDir();
    const missing = await runCli(["schema"], { cwd });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("name the schema to print: frontmatter, config, manifest");
    const typo = await runCli(["schema", "manfest"], { cwd });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain('unknown schema "manfest"; choose frontmatter, config, manifest. Did you mean "manifest"?');
    expect((await runCli(["schema", "toString"], { cwd })).code).toBe(2);
  });
});
