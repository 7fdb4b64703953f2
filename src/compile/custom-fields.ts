import * as z from "zod";
import type { Finding } from "./diagnostics.js";
import { frontmatterJsonSchema, KNOWN_FIELD_NAMES } from "./model.js";
import type { Position } from "./parse.js";
import { didYouMean } from "./suggest.js";
import { defineOwn, type SkillContent } from "./validate.js";

/**
 * The config's `frontmatter`: a zod object schema of the team's own fields (`owner`, `tier`…). Checked by shape,
 * not by `instanceof`: a JavaScript config imports `z` from the installed package, which need not be the copy of
 * zod the CLI carries.
 */
export type FrontmatterSchema = z.ZodObject;

export function isObjectSchema(value: unknown): value is FrontmatterSchema {
  const schema = value as { safeParse?: unknown; _zod?: { def?: { type?: unknown }; version?: { major?: unknown } } } | null;
  return typeof schema?.safeParse === "function" && schema._zod?.def?.type === "object" && schema._zod.version?.major === 4 && typeof (value as { shape?: unknown }).shape === "object";
}

/** The field names a schema declares. */
export function declaredFields(schema: FrontmatterSchema): string[] {
  return Object.keys(schema.shape);
}

/** Built-in fields a schema may not declare again: they have their own types and rules. */
export function redeclaredFields(schema: FrontmatterSchema): string[] {
  return declaredFields(schema).filter((key) => KNOWN_FIELD_NAMES.includes(key));
}

/** Where an entry of the frontmatter stands; `found: false` when it is absent (then: where its parent is). */
export type Locate = (path: readonly PropertyKey[]) => { valueAt: Position; keyAt?: Position; found: boolean };

/**
 * Checks a skill's custom fields (every field outside the model, in `extra`) against the config's schema. Valid:
 * the declared fields move from `extra` to `fields`, as the schema outputs them (defaults applied). Invalid: one
 * `frontmatter-schema` finding per issue, at the value's line:col, and no content, so the skill is left out and
 * the generated types stay true. `field:` with no value is "not set", as for the built-in fields. Pure.
 */
export function checkCustomFields<Content extends Pick<SkillContent, "fields" | "extra">>(file: string, schema: FrontmatterSchema, content: Content, locate: Locate): { content?: Content; findings: Finding[] } {
  const input: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(content.extra)) if (!KNOWN_FIELD_NAMES.includes(key) && value !== null) defineOwn(input, key, value);
  const result = schema.safeParse(input, { reportInput: true });
  if (!result.success) return { findings: result.error.issues.flatMap((issue) => findingsOf(file, schema, issue, locate)) };
  const declared = new Set(declaredFields(schema));
  // A transform may output what a bundle (JSON, and a module of JSON literals) cannot hold: a Date, a Map, a function.
  const notData = [...declared].filter((key) => Object.hasOwn(result.data, key) && !isJsonData(result.data[key]));
  if (notData.length > 0) {
    return {
      findings: notData.map((key) => ({
        code: "frontmatter-schema" as const,
        file,
        ...locate([key]).valueAt,
        message: `the config's \`frontmatter\` schema turns \`${key}\` into something other than JSON data, which a bundle cannot hold`,
        hint: "Make the schema output strings, numbers, booleans, null, lists and mappings (no transform to a Date, a Map or a class).",
      })),
    };
  }
  const fields: Record<string, unknown> = { ...content.fields };
  const extra: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(content.extra)) if (!declared.has(key)) defineOwn(extra, key, value);
  for (const key of declared) if (Object.hasOwn(result.data, key)) defineOwn(fields, key, result.data[key]);
  return { content: { ...content, fields, extra }, findings: [] };
}

function findingsOf(file: string, schema: FrontmatterSchema, issue: z.core.$ZodIssue, locate: Locate): Finding[] {
  const finding = (at: Position, message: string, hint?: string): Finding => ({ code: "frontmatter-schema", file, ...at, message, ...(hint ? { hint } : {}) });
  const name = fieldPath(issue.path);
  if (issue.code === "unrecognized_keys") {
    const declared = issue.path.length === 0 ? declaredFields(schema) : [];
    return issue.keys.map((key) => {
      const where = locate([...issue.path, key]);
      const field = fieldPath([...issue.path, key]);
      return finding(where.keyAt ?? where.valueAt, `\`${field}\` is not a field the config's \`frontmatter\` schema declares`, `Remove it, or declare it in the schema.${didYouMean(key, declared)}`);
    });
  }
  const where = locate(issue.path);
  if (!where.found) return [finding(where.valueAt, `\`${name}\` is required by the config's \`frontmatter\` schema`, `Add \`${String(issue.path.at(-1))}:\`${issue.path.length > 1 ? ` under \`${fieldPath(issue.path.slice(0, -1))}\`` : ""}.`)];
  switch (issue.code) {
    case "invalid_type":
      return [finding(where.valueAt, `\`${name}\` is ${describe(issue.input)}, not ${article(issue.expected)}`, issue.expected === "string" ? `Quote it: "${String(issue.input)}".` : undefined)];
    case "invalid_value":
      return [finding(where.valueAt, `\`${name}\` is ${describe(issue.input)}, not one of ${issue.values.map((value) => JSON.stringify(value)).join(", ")}`)];
    default:
      return [finding(where.valueAt, `\`${name}\`: ${issue.message.replace(/^Invalid (input|option): /, "")}`)];
  }
}

function isJsonData(value: unknown): boolean {
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isJsonData);
  if (typeof value !== "object" || Object.getPrototypeOf(value) !== Object.prototype) return false;
  return Object.values(value).every(isJsonData);
}

/** `owner`, `deploy.region`, `reviewers[1]`. */
function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((segment, index) => (typeof segment === "number" ? `[${segment}]` : `${index > 0 ? "." : ""}${String(segment)}`)).join("");
}

/** A value as a reader would name it: `"gold"`, `42`, `true`, a list, a mapping. */
function describe(value: unknown): string {
  if (value === null) return "empty";
  if (Array.isArray(value)) return "a list";
  if (value instanceof Date) return `a date (${value.toISOString().slice(0, 10)})`;
  if (typeof value === "object") return "a mapping";
  const text = typeof value === "string" ? JSON.stringify(value) : String(value);
  return `${typeof value === "string" ? "the text" : `the ${typeof value}`} ${text.length > 80 ? `${text.slice(0, 77)}...` : text}`;
}

function article(expected: string): string {
  const words: Record<string, string> = { object: "a mapping", array: "a list", string: "text", int: "an integer", number: "a number", boolean: "true or false", date: "a date" };
  return words[expected] ?? `a ${expected}`;
}

/** JSON Schema of the declared fields, as written in SKILL.md (`input`) or as the bundle holds them (`output`). */
export function customFieldsJsonSchema(schema: FrontmatterSchema, io: "input" | "output"): { properties: Record<string, unknown>; required: string[]; additionalProperties?: unknown } {
  const json = z.toJSONSchema(schema, { io, target: "draft-7", unrepresentable: "any" }) as { properties?: Record<string, unknown>; required?: string[]; additionalProperties?: unknown };
  return { properties: json.properties ?? {}, required: json.required ?? [], ...(json.additionalProperties === false ? { additionalProperties: false } : {}) };
}

/**
 * `skills schema frontmatter` with a config: the built-in fields and the config's own, as written in SKILL.md, so
 * an editor completes and checks both. A strict schema makes undeclared fields errors here too.
 */
export function frontmatterJsonSchemaWith(schema: FrontmatterSchema): Record<string, unknown> {
  const json = frontmatterJsonSchema() as { properties: Record<string, unknown>; required?: string[]; additionalProperties?: unknown };
  const custom = customFieldsJsonSchema(schema, "input");
  Object.assign(json.properties, custom.properties);
  if (custom.required.length > 0) json.required = [...(json.required ?? []), ...custom.required];
  if (custom.additionalProperties === false) json.additionalProperties = false;
  return json;
}
