import * as z from "zod";
import { lazyProperties, once } from "./once.js";

/**
 * The frontmatter model: the single source of the known fields' types. Validation,
 * the manifest and the generated `.d.ts` all derive from it.
 * `name` and `description` are checked by their own rules (name-*, description-*), so they are
 * not part of this object; every field here is optional and a bad value is `field-invalid`.
 */
const toolList = () =>
  z
    .union([z.string(), z.array(z.string())])
    .transform((value) => (typeof value === "string" ? splitTools(value) : value))
    // The declared output type lets JSON Schema (manifest, .d.ts) describe what a transform cannot.
    .pipe(z.array(z.string()));

/** `Read Grep, Bash(git log:*)` → three tools: separators inside parentheses belong to the tool. */
function splitTools(list: string): string[] {
  return list.match(/(?:[^\s,(]+|\([^)]*\)?)+/g) ?? [];
}

/** The Agent Skills spec's limit on `compatibility`, in characters. */
export const MAX_COMPATIBILITY_LENGTH = 500;

/** Each field's schema is built when first read: a build validates the fields its skills set, and builds no others. */
export const optionalFields = lazyProperties({
  license: () => z.string().describe("License name, or the file in the skill folder that holds it."),
  compatibility: () => z.string().max(MAX_COMPATIBILITY_LENGTH).describe("Environment requirements: products, system packages, network access."),
  metadata: () => z.record(z.string(), z.string()).describe("Any further string properties, e.g. author."),
  "allowed-tools": () => toolList().describe("Tools the skill may use without asking: a list, or a space- or comma-separated string."),
  "disable-model-invocation": () => z.boolean().describe("true: only a user can invoke the skill; it is left out of the catalogue and the skill tool."),
  "user-invocable": () => z.boolean().describe("false: users cannot invoke the skill themselves; the model still sees it."),
  "argument-hint": () => z.string().describe("Shown to users when they invoke the skill, e.g. [issue-number]."),
  context: () => z.enum(["inline", "fork"]).describe("fork: the skill runs in a sub-agent of its own; inline (default): in the conversation."),
  agent: () => z.string().describe("With context: fork, the task type (sub-agent) that runs the skill."),
  model: () => z.string().describe("The model to use while the skill is active."),
  version: () => z.string().describe("The skill's version, as text (quote numbers: \"1.0\")."),
  tags: () => z.array(z.string()).describe("Labels for catalogues and dashboards."),
});

/**
 * The data `optionalFields[key].safeParse(value)` gives (an equal value) when it is a success, for the values
 * frontmatter mostly holds (a string, a boolean, a list of strings, a map of strings): told by their type, without
 * zod, which takes ~3.5 µs a field over a build's first thousands (under 1 so). Undefined for anything else (and for
 * `allowed-tools`, which zod transforms), which zod then parses, and explains when it is invalid.
 */
export function plainFieldValue(key: OptionalFieldName, value: unknown): { success: true; data: unknown } | undefined {
  switch (key) {
    case "license":
    case "argument-hint":
    case "agent":
    case "model":
    case "version":
      return typeof value === "string" ? { success: true, data: value } : undefined;
    case "compatibility":
      return typeof value === "string" && value.length <= MAX_COMPATIBILITY_LENGTH ? { success: true, data: value } : undefined;
    case "disable-model-invocation":
    case "user-invocable":
      return typeof value === "boolean" ? { success: true, data: value } : undefined;
    case "context":
      return value === "inline" || value === "fork" ? { success: true, data: value } : undefined;
    case "tags":
      return isStringList(value) ? { success: true, data: value } : undefined;
    case "metadata":
      return isStringMap(value) ? { success: true, data: value } : undefined;
    default:
      return undefined;
  }
}

/** An array of strings, every index held. */
function isStringList(value: unknown): value is string[] {
  if (!Array.isArray(value)) return false;
  for (let index = 0; index < value.length; index++) if (typeof value[index] !== "string") return false;
  return true;
}

/** A plain object of string values, without a `__proto__` key (zod's record leaves that one out). */
function isStringMap(value: unknown): value is Record<string, string> {
  if (typeof value !== "object" || value === null || Array.isArray(value) || Object.getPrototypeOf(value) !== Object.prototype) return false;
  if (Object.hasOwn(value, "__proto__") || Object.getOwnPropertySymbols(value).length > 0) return false;
  return Object.values(value).every((item) => typeof item === "string");
}

export const MAX_NAME_LENGTH = 64;
export const MAX_DESCRIPTION_LENGTH = 1024;
export const NAME_PATTERN = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/**
 * What a skill that does not set these fields gets: it runs in the conversation (`inline`), as the general agent,
 * and both the user and the model may invoke it. The manifest and the module carry all four in every skill's
 * `fields`, so a server reads them without a fallback of its own.
 */
export const FIELD_DEFAULTS = { context: "inline", agent: "general", "user-invocable": true, "disable-model-invocation": false } as const;

/**
 * `agent` names the task type a forked skill runs as, so another value only means something with `context: fork`.
 * `fork` without `agent` is valid: the server picks its default (Claude Code's is general-purpose). `general`, the
 * default, is fine anywhere: catalogues that write `context: inline` and `agent: general` in every skill are clean.
 */
export function agentWithoutFork(fields: { context?: unknown; agent?: unknown }): boolean {
  return fields.agent !== undefined && fields.agent !== null && fields.agent !== FIELD_DEFAULTS.agent && fields.context !== "fork";
}

/**
 * The whole frontmatter as `skills schema frontmatter` publishes it, for editors (yaml-language-server) and
 * other tools. It rejects exactly what the compiler reports from the frontmatter mapping alone: `name-missing`,
 * `name-type`, `name-invalid`, `name-too-long`, `description-missing`, `description-type`,
 * `description-too-long` and `field-invalid`, whatever their severity. `null` (`field:` with no value) is
 * "not set". Unknown fields are allowed: they pass through under `extra`. Built at its first use: no build needs it.
 */
const frontmatterSchema = once(() =>
  z
    .looseObject({
      name: z.string().max(MAX_NAME_LENGTH).regex(NAME_PATTERN).describe("Lowercase letters, digits and single hyphens; the skill folder's name."),
      description: z
        .string()
        .regex(/\S/)
        .max(MAX_DESCRIPTION_LENGTH)
        .describe("What the skill does and when to use it: agents choose skills by it."),
      ...(Object.fromEntries(Object.entries(optionalFields).map(([key, schema]) => [key, schema.nullable().optional().describe(schema.description!)])) as {
        [K in keyof typeof optionalFields]: z.ZodOptional<z.ZodNullable<(typeof optionalFields)[K]>>;
      }),
    })
    .meta({
      title: "SKILL.md frontmatter",
      // agentWithoutFork, for JSON Schema: unless `context` is `fork`, `agent` is absent, null or the default.
      if: { not: { properties: { context: { const: "fork" } }, required: ["context"] } },
      then: { properties: { agent: { enum: [null, FIELD_DEFAULTS.agent] } } },
    }),
);

/** JSON Schema (draft-07, which yaml-language-server and most editors read) of the frontmatter. */
export function frontmatterJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(frontmatterSchema(), { io: "input", target: "draft-7" }) as Record<string, unknown>;
}

export type OptionalFieldName = keyof typeof optionalFields;
export const OPTIONAL_FIELD_NAMES = Object.keys(optionalFields) as OptionalFieldName[];
export const KNOWN_FIELD_NAMES: readonly string[] = ["name", "description", ...OPTIONAL_FIELD_NAMES];

export type SkillFields = { -readonly [K in OptionalFieldName]?: z.output<(typeof optionalFields)[K]> };

/** How an agent sees a skill: listed in its catalogue, or inlined whole into its prompt. */
export type Mode = "available" | "inline";
