import { readFile } from "node:fs/promises";
import { basename, dirname, relative } from "node:path";
import AjvModule from "ajv";
import fc from "fast-check";
import { glob } from "tinyglobby";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import type { RuleCode } from "../src/compile/rules.js";
import { frontmatterJsonSchema, OPTIONAL_FIELD_NAMES } from "../src/compile/model.js";
import { parseSkillFile } from "../src/compile/parse.js";
import { validateSkill } from "../src/compile/validate.js";
import { REPO } from "./helpers.js";

/**
 * `skills schema frontmatter` and the compiler must judge a frontmatter alike. What they agree on, exactly:
 * for a SKILL.md whose frontmatter parses to a mapping with plain keys, the schema rejects it if and only if the
 * compiler reports one of these codes, whatever their configured severity. These are the codes that depend on
 * the frontmatter mapping alone. Left out, because JSON Schema cannot see them: `name-mismatch` (the folder
 * name), `field-unknown` (unknown fields are allowed, they pass through under `extra`), the parse-level codes
 * (no frontmatter, bad YAML, not a mapping, encoding, size) and the body codes. Lengths agree for text
 * without characters outside the Basic Multilingual Plane: the compiler counts UTF-16 code units like Pi,
 * JSON Schema validators count code points.
 */
const FRONTMATTER_CODES: ReadonlySet<RuleCode> = new Set([
  "name-missing",
  "name-type",
  "name-invalid",
  "name-too-long",
  "description-missing",
  "description-type",
  "description-too-long",
  "field-invalid",
]);

const Ajv = AjvModule.default ?? AjvModule;
const validateAgainstSchema = new Ajv({ allErrors: true, strict: true }).compile(frontmatterJsonSchema());

interface Verdicts {
  schema: boolean;
  compiler: boolean;
  codes: RuleCode[];
  errors: unknown;
}

/** Both verdicts on one SKILL.md text, or undefined when the frontmatter is not a mapping of plain keys. */
function judge(text: string, folder: string): Verdicts | undefined {
  const parsed = parseSkillFile("SKILL.md", new TextEncoder().encode(text), false);
  if (!parsed.fields || parsed.findings.length > 0) return undefined;
  const mapping = Object.fromEntries(parsed.fields.map((field) => [field.key, field.value]));
  const codes = validateSkill("SKILL.md", folder, parsed).findings.map((finding) => finding.code);
  const schema = validateAgainstSchema(mapping);
  return { schema, compiler: !codes.some((code) => FRONTMATTER_CODES.has(code)), codes, errors: validateAgainstSchema.errors };
}

describe("skills schema frontmatter agrees with the compiler", () => {
  it("on every fixture SKILL.md", async () => {
    const files = (await glob(["test/fixtures/**/SKILL.md"], { cwd: REPO, absolute: true, dot: true })).sort();
    expect(files.length).toBeGreaterThan(40);
    const verdicts = { valid: 0, invalid: 0, notMappings: 0 };
    for (const file of files) {
      const verdict = judge(await readFile(file, "utf8"), basename(dirname(file)));
      if (!verdict) {
        verdicts.notMappings++;
        continue;
      }
      expect({ file: relative(REPO, file), schemaValid: verdict.schema, codes: verdict.codes }).toEqual({
        file: relative(REPO, file),
        schemaValid: verdict.compiler,
        codes: verdict.codes,
      });
      verdicts[verdict.schema ? "valid" : "invalid"]++;
    }
    // The fixtures hold both kinds, so agreement here is not vacuous.
    expect(verdicts.valid).toBeGreaterThan(10);
    expect(verdicts.invalid).toBeGreaterThan(3);
  });

  it("on the fields of a real skill, with every known field set", () => {
    const text = `---
name: release-notes
description: Drafts release notes from merged pull requests. Use when preparing a release.
license: MIT
compatibility: Needs git and network access to GitHub.
metadata:
  author: platform-team
  review: "2025-01"
allowed-tools: Read Grep, Bash(git log:*)
disable-model-invocation: false
user-invocable: true
argument-hint: "[version]"
context: fork
agent: general-purpose
model: sonnet
version: "2.1"
tags: [release, docs]
owner: someone
---
Body`;
    expect(judge(text, "release-notes")).toMatchObject({ schema: true, compiler: true });
    for (const [line, replacement] of [
      ["disable-model-invocation: false", 'disable-model-invocation: "true"'],
      ["context: fork", "context: inline"], // `agent` without `context: fork`
      ["context: fork", "context: Fork"],
      ['version: "2.1"', "version: 2.1"],
      ["tags: [release, docs]", "tags: release"],
      ['  review: "2025-01"', "  review: 2025"],
      ["name: release-notes", "name: Release Notes"],
      ["license: MIT", "license: [MIT]"],
    ] as const) {
      const verdict = judge(text.replace(line, replacement), "release-notes")!;
      expect({ replacement, schema: verdict.schema, compiler: verdict.compiler }).toEqual({ replacement, schema: false, compiler: false });
    }
  });

  it("on generated frontmatter: every known field, right and wrong types, nulls, blanks, lengths and unknown keys", () => {
    const text = fc.string({ unit: fc.constantFrom("a", "b", "-", " ", "é", "A", ":", "#", "\n", "'", '"', "1") });
    const short = fc.oneof(text, fc.constantFrom("", " ", "true", "false", "null", "1.0", "fork", "inline", "my-skill", "Bad_Name", "a--b"));
    const lengthy = (limit: number) => fc.integer({ min: limit - 2, max: limit + 2 }).map((length) => "x".repeat(length));
    const anything = fc.oneof(
      short,
      lengthy(64),
      lengthy(1024),
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.boolean(),
      fc.constant(null),
      fc.array(fc.oneof(short, fc.integer()), { maxLength: 3 }),
      fc.dictionary(fc.constantFrom("author", "n"), fc.oneof(short, fc.integer(), fc.boolean()), { maxKeys: 2 }),
    );
    // Mostly well-typed values, so that one wrong field at a time decides the verdict.
    const plausible: Record<string, fc.Arbitrary<unknown>> = {
      name: fc.oneof(fc.constantFrom("my-skill", "release-notes", "a1"), lengthy(64)),
      description: fc.oneof(fc.constantFrom("Drafts release notes. Use when preparing a release.", "x"), lengthy(1024)),
      compatibility: fc.oneof(short, lengthy(500)),
      metadata: fc.dictionary(fc.constantFrom("author", "team"), short, { maxKeys: 2 }),
      "allowed-tools": fc.oneof(short, fc.array(short, { maxLength: 3 })),
      "disable-model-invocation": fc.boolean(),
      "user-invocable": fc.boolean(),
      context: fc.constantFrom("inline", "fork"),
      tags: fc.array(short, { maxLength: 3 }),
    };
    const keys = ["name", "description", ...OPTIONAL_FIELD_NAMES, "owner", "Name", "x-custom"];
    const frontmatter = fc.record(
      Object.fromEntries(keys.map((key) => [key, fc.oneof({ weight: 12, arbitrary: plausible[key] ?? short }, { weight: 1, arbitrary: anything })])),
      { requiredKeys: [] },
    );
    const seen = { valid: 0, invalid: 0 };
    fc.assert(
      fc.property(frontmatter, fc.constantFrom("my-skill", "release-notes"), (fields, folder) => {
        const verdict = judge(`---\n${stringify(fields)}---\nBody\n`, folder);
        expect(verdict).toBeDefined(); // generated keys are plain, so every case is judged
        expect({ fields, schema: verdict!.schema, codes: verdict!.codes }).toEqual({ fields, schema: verdict!.compiler, codes: verdict!.codes });
        seen[verdict!.schema ? "valid" : "invalid"]++;
      }),
      { numRuns: 2000 },
    );
    expect(seen.valid).toBeGreaterThan(100);
    expect(seen.invalid).toBeGreaterThan(100);
  });
});

describe("the frontmatter JSON Schema", () => {
  it("is draft-07 with a title and a description per field, which yaml-language-server shows on hover", () => {
    const schema = frontmatterJsonSchema() as { $schema: string; title: string; properties: Record<string, { description?: string }>; required: string[] };
    expect(schema.$schema).toBe("http://json-schema.org/draft-07/schema#");
    expect(schema.title).toBe("SKILL.md frontmatter");
    expect(schema.required).toEqual(["name", "description"]);
    for (const [field, property] of Object.entries(schema.properties)) expect({ field, described: Boolean(property.description) }).toEqual({ field, described: true });
  });
});
