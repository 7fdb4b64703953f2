import { join, relative, sep } from "node:path";
import * as z from "zod";
import { AGENT_ID_MAX_LENGTH, AGENT_ID_PATTERN, TOOL_STYLES } from "../compile/config.js";
import { RULE_CODES } from "../compile/rules.js";
import { customFieldsJsonSchema, type FrontmatterSchema } from "../compile/custom-fields.js";
import { FIELD_DEFAULTS, optionalFields } from "../compile/model.js";
import { TOKEN_ENCODINGS } from "../compile/tokens.js";
import { once } from "../compile/once.js";

/**
 * `manifest.json`: the bundle's data for servers in any language. This schema is its definition:
 * `bundle.ts` builds a `Manifest`, `skills schema manifest` publishes the JSON Schema, and readers can parse
 * with it. A change that breaks readers bumps `schemaVersion`.
 */
export const SCHEMA_VERSION = 1;
/** The manifest's JSON Schema in an installed skillbake, from the folder it is installed in (`prepack` writes it). */
const INSTALLED_SCHEMA = "node_modules/skillbake/dist/manifest.schema.json";

/**
 * The manifest's `$schema`: the installed package's JSON Schema by a path relative to the manifest, as editors
 * resolve it, for skillbake installed beside the config. It depends on the outDir and the config folder alone,
 * so every checkout writes the same; `/`-separated on every platform.
 */
export function manifestSchemaPath(outDir: string, configDir: string): string {
  return relative(outDir, join(configDir, INSTALLED_SCHEMA)).split(sep).join("/");
}
/** The manifest's top-level `generator`: how `skills build` tells a bundle it wrote (see `emit.ts`). */
export const GENERATOR = "skillbake";

/**
 * The manifest's zod schema, built at its first use and kept: `skills build` writes manifests and reads none, and
 * constructing this schema and the frontmatter's at every start of the CLI took ~2 ms.
 */
export const manifestSchema = once(() => {
  const skillMode = z.enum(["available", "inline"]);
  const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

  const manifestAgent = z.strictObject({
    format: z.enum(["pi", "markdown", "function"]).describe("function: a format function of the config wrote the prompt."),
    prompt: z.string().describe("The agent's prompt file, relative to the bundle: prompts/<agent>.txt."),
    characters: z.strictObject({
      prompt: z.number().int().nonnegative(),
      catalogue: z.number().int().nonnegative().describe("The catalogue of available skills alone, as a budget counts it."),
    }),
    skills: z
      .array(
        z.strictObject({
          name: z.string(),
          mode: skillMode,
          source: z.number().int().nonnegative().describe("Index of the source in the agent's `skills` config."),
          file: z.string().describe("The skill's SKILL.md, as in `skills[].file`."),
          listed: z
            .boolean()
            .describe("Whether the agent's catalogue lists it: false for an inline skill, a disable-model-invocation one, or one the budget dropped (still invoked by name)."),
          location: z.string().optional().describe("Where this agent's prompt says the file is, when not `skills[].location` (per-agent staging)."),
          baseDir: z.string().optional().describe("The folder of this agent's `location`, when it has its own."),
          staged: z.string().optional().describe("This agent's own staged copy of the skill folder, agents/<id>/skills/<name>."),
        }),
      )
      .describe("The skills the agent sees, in prompt order."),
    tokens: z
      .strictObject({ encoding: z.enum(TOKEN_ENCODINGS), prompt: z.number().int().nonnegative(), catalogue: z.number().int().nonnegative() })
      .optional()
      .describe("With `tokens` in the config (or a budget in tokens): the prompt's and the catalogue's tokens in this encoding."),
    description: z.string().optional().describe("The agent's `description` from the config."),
    toolDescription: z.string().optional().describe('With `catalogue: "tool"`: the skill tool\'s description, which holds the catalogue instead of the prompt.'),
    budget: z
      .union([z.number().int().positive(), z.strictObject({ tokens: z.number().int().positive() })])
      .optional()
      .describe("The agent's budget: characters its catalogue may take (its own `budget`, or SKILLS_PROMPT_CHAR_BUDGET's), or { tokens } (counted in `tokens.encoding`)."),
    context: z.array(z.string()).optional().describe("The agent's context files, relative to the config folder, in prompt order."),
    contextSha256: z.record(z.string(), sha256).optional().describe("sha256 of each context file's bytes, by its path as in `context`."),
    notAllowed: z.array(z.string()).optional().describe("The SKILL.md files (as in `skills[].file`) the agent's sources selected and its `allow` list left out."),
    tool: z
      .strictObject({ style: z.enum(TOOL_STYLES), name: z.string() })
      .optional()
      .describe("The agent's skill tool, when its `tool` setting is given: the style and the name the model calls it by."),
    contextFile: z.string().optional().describe("With `contextFile`: the agent's context written out, agents/<id>/<contextFile>, relative to the bundle."),
    files: z.literal("embed").optional().describe('With `files: "embed"`: the agent\'s module holds every file of the skills it serves.'),
    publish: z
      .strictObject({ wellKnown: z.string() })
      .optional()
      .describe("With `publish`: the folder, relative to the config folder, whose .well-known/agent-skills/ holds the agent's discovery index."),
    served: z
      .array(z.string())
      .optional()
      .describe('With `files: "embed"` or `publish`: the names of the skills the agent serves (over MCP, in its discovery index), in prompt order.'),
  });

  const manifestSkill = z.strictObject({
    name: z.string(),
    description: z.string(),
    file: z.string().describe("SKILL.md relative to the config folder, `/`-separated."),
    location: z.string().describe("Where the prompt says the file is."),
    baseDir: z.string().describe("The folder of `location`."),
    hash: sha256.describe("sha256 of the SKILL.md bytes."),
    fields: z
      .looseObject(optionalFields)
      .partial()
      .required(Object.fromEntries(Object.keys(FIELD_DEFAULTS).map((key) => [key, true])) as { [K in keyof typeof FIELD_DEFAULTS]: true })
      .describe("The known frontmatter fields, validated and normalised (context, agent, user-invocable and disable-model-invocation always, with their defaults), then the fields the config's `frontmatter` schema declares, as it outputs them."),
    extra: z.record(z.string(), z.unknown()).describe("Every other frontmatter field, untouched."),
    body: z.string().describe("The Markdown after the frontmatter, trimmed."),
    files: z
      .array(
        z.strictObject({
          path: z.string().describe("Relative to the skill folder, `/`-separated."),
          size: z.number().int().nonnegative(),
          sha256,
        }),
      )
      .describe("Every file of the skill folder, SKILL.md included, in path order; the discovery rules apply (no dot files, node_modules, ignored files or links out of the root)."),
    structure: z
      .strictObject({
        files: z.number().int().nonnegative(),
        bytes: z.number().int().nonnegative(),
        folders: z.record(z.string(), z.strictObject({ files: z.number().int().nonnegative(), bytes: z.number().int().nonnegative() })),
      })
      .describe("Totals of `files`, and per top-level folder (references, scripts, assets…)."),
    staged: z.string().optional().describe("With `stage`: the skill folder's copy inside the bundle, skills/<name> (with per-agent staging, the first agent's)."),
  });

  const manifestDiagnostic = z.strictObject({
    code: z.enum(RULE_CODES as [string, ...string[]]),
    severity: z.enum(["error", "warn"]),
    message: z.string(),
    file: z.string().optional(),
    line: z.number().int().positive().optional(),
    column: z.number().int().positive().optional(),
    endLine: z.number().int().positive().optional(),
    endColumn: z.number().int().positive().optional(),
    hint: z.string().optional(),
    count: z.number().int().positive().optional().describe("How many findings of its code it stands for, itself included, when it counts those a rule does not name one by one."),
  });

  return z
    .strictObject({
      $schema: z.string().describe("This manifest's JSON Schema (for editors)."),
      schemaVersion: z.literal(SCHEMA_VERSION),
      generator: z.literal(GENERATOR),
      agents: z.record(z.string().regex(AGENT_ID_PATTERN).max(AGENT_ID_MAX_LENGTH), manifestAgent),
      skills: z.array(manifestSkill).describe("Every selected SKILL.md once, sorted by file."),
      diagnostics: z.array(manifestDiagnostic),
      hashes: z.strictObject({
        inputs: sha256.describe("The resolved config and every bundled skill's path and content hash."),
        outputs: z.record(z.string(), sha256).describe("sha256 of every other file of the bundle, by path."),
      }),
    })
    .meta({ title: "skillbake bundle manifest" });
});

export type Manifest = z.output<ReturnType<typeof manifestSchema>>;

/**
 * JSON Schema of `manifest.json`, as the manifest is written (normalised field values); with the config's
 * `frontmatter` schema, the skills' `fields` name its fields and types too.
 */
export function manifestJsonSchema(frontmatter?: FrontmatterSchema): Record<string, unknown> {
  const schema = z.toJSONSchema(manifestSchema(), { io: "output" }) as unknown as ManifestJsonSchema;
  if (frontmatter) {
    const custom = customFieldsJsonSchema(frontmatter, "output");
    const fields = schema.properties.skills.items.properties.fields;
    Object.assign(fields.properties, custom.properties);
    fields.required = [...(fields.required ?? []), ...custom.required];
    fields.additionalProperties = false;
    return schema;
  }
  return schema;
}

/** The part of the manifest's JSON Schema that custom fields go into. */
interface ManifestJsonSchema extends Record<string, unknown> {
  properties: { skills: { items: { properties: { fields: { properties: Record<string, unknown>; required?: string[]; additionalProperties?: unknown } } } } };
}
