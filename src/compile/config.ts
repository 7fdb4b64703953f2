import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, readlinkSync } from "node:fs";
import { createRequire, isBuiltin, SourceMap } from "node:module";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { inspect } from "node:util";
import { Script } from "node:vm";
import * as z from "zod";
import { zodForConfigs } from "./config-zod.js";
import { isObjectSchema, redeclaredFields, type FrontmatterSchema } from "./custom-fields.js";
import { PRESETS, RULE_CODES } from "./rules.js";
import { readRegularFile } from "./cache-file.js";
import { dataJson, readTranspiledConfig, readValidatedConfig, writeTranspiledConfig, writeValidatedConfig, type TranspiledConfig } from "./config-cache.js";
import { once } from "./once.js";
import { didYouMean } from "./suggest.js";
import { clipLines } from "./diagnostics.js";
import { systemErrorReason } from "./fs-error.js";
import { DEFAULT_TOKEN_ENCODING, TOKEN_ENCODINGS } from "./tokens.js";
import type { FormatFunction } from "./render.js";

export const CONFIG_FILE_NAMES = ["skills.config.ts", "skills.config.mts", "skills.config.js", "skills.config.mjs", "skills.config.json"] as const;

/** The skill tool's styles: see `ToolStyle` in src/runtime/helpers.ts. */
export const TOOL_STYLES = ["use_skill", "read_skill", "Skill"] as const;

export const AGENT_ID_PATTERN = /^[a-z][a-z0-9-]*$/;
export const AGENT_ID_MAX_LENGTH = 64;

const FORMAT_NAMES = ["pi", "markdown"] as const;

/** The schemas of a config's parts: an agent, a source of skills, rules, a format. See `configSchemas`. */
const partSchemas = once(() => {
  const patterns = z.array(z.string().min(1, "a pattern cannot be empty"));

  const sourceSchema = z.strictObject({
    root: z.string().min(1, "a root cannot be empty"),
    available: patterns.optional(),
    inline: patterns.optional(),
    include: patterns.optional(),
    exclude: patterns.optional(),
    /** A folder with a SKILL.md inside a skill's folder is a skill of its own (as the MCP skills extension allows), not one of that skill's files. */
    nested: z.boolean().optional(),
    /** The root may be absent (`~/skills` on a laptop): no `root-missing` then. */
    optional: z.boolean().optional(),
  });

  /** Per-code severities: the top-level `rules`, and each entry of `overrides`. */
  const rulesSchema = z.partialRecord(z.enum(RULE_CODES as [string, ...string[]]), z.enum(["off", "warn", "error"]));

  /** A function format exists only in TS/JS configs; JSON Schema cannot describe it, so `configJsonSchema` leaves it out. */
  const formatFunction = z.custom<FormatFunction>((value) => typeof value === "function", {
    message: 'expected "pi", "markdown" or a function (ctx) => string',
  });
  const formatSchema = z.union([z.enum(FORMAT_NAMES), formatFunction], {
    error: 'expected "pi", "markdown" or a function (ctx) => string',
  });

  /** A zod schema exists only in TS/JS configs; `configJsonSchema` says so. */
  const frontmatterSetting = z
    .custom<FrontmatterSchema>(isObjectSchema, { message: 'expected a zod object schema: frontmatter: z.object({ … }), with `import { defineConfig, z } from "skillbake"`' })
    .superRefine((schema, context) => {
      for (const key of redeclaredFields(schema)) context.addIssue({ code: "custom", path: [key], message: `\`${key}\` is a built-in frontmatter field, with its own type and rules; declare only your own fields` });
    });

  const agentSchema = z.strictObject({
    /** Omitted or []: an agent of context files only (a chat agent that invokes no skill, say). */
    skills: z.array(sourceSchema).default([]),
    format: formatSchema.optional(),
    /** What the catalogue of available skills may take, in characters, `{ contextWindow }` or `{ tokens }`; later skills are dropped from it past that. */
    budget: z
      .union(
        [
          z.number().int().positive("a budget is a positive number of characters"),
          /** 2% of the model's context window (in tokens), counted in characters at 4 a token: 16,000 for 200,000 tokens. */
          z.strictObject({ contextWindow: z.number().int().positive("a context window is a positive number of tokens") }),
          z.strictObject({ tokens: z.number().int().positive("a budget is a positive number of tokens") }),
        ],
        { error: "expected a number of characters, { contextWindow: tokens } or { tokens: N }" },
      )
      .optional(),
    /** One name from several sources: keep every copy and warn (the default), or only the first or last source's; "last" also makes the last of one name in one root win. */
    duplicates: z.enum(["keep-all", "first", "last"]).optional(),
    /** Names or globs over the selected skills' names: undefined keeps all, [] none. */
    allow: z.array(z.string().min(1, "a pattern cannot be empty")).optional(),
    /** Globs, relative to the config folder, of Markdown files placed before the skills in the prompt. */
    context: patterns.optional(),
    description: z.string().optional(),
    /** The skill tool's style (its parameters and answer) and the name the model calls it by; `use_skill` when omitted. */
    tool: z
      .strictObject({
        style: z.enum(TOOL_STYLES).default("use_skill"),
        // What the tool APIs accept as a tool name (Anthropic, OpenAI, MCP).
        name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "a tool name is 1 to 64 letters, digits, _ or -").optional(),
      })
      .optional(),
    /** How the model invokes a skill: "read" (omitted) its file, as in Pi and Codex; "tool": it calls the skill tool, as in Claude Code. */
    invoke: z.enum(["read", "tool"]).optional(),
    /** Where the catalogue goes: "prompt" (omitted), or "tool": the skill tool's description, as Claude Code lists its skills. */
    catalogue: z.enum(["prompt", "tool"]).optional(),
    /** "embed": every file of each skill the agent serves goes into its module (text as strings, binary as bytes), for an MCP server. */
    /** `{ wellKnown: DIR }`: the agent's skills published as an Agent Skills discovery index in DIR/.well-known/agent-skills/ (DIR relative to the config folder). */
    publish: z.strictObject({ wellKnown: z.string().min(1, "a folder cannot be empty") }).optional(),
    files: z.literal("embed", { error: 'expected "embed": every file of the agent\'s skills in its module, for serving them over MCP' }).optional(),
  }).refine((agent) => agent.catalogue !== "tool" || agent.invoke === "tool", {
    message: 'catalogue: "tool" lists the skills in the skill tool, so the model invokes them with it: set invoke: "tool" too',
    path: ["invoke"],
  });
  return { patterns, sourceSchema, rulesSchema, formatSchema, frontmatterSetting, agentSchema };
});

/**
 * The config's zod schemas, built when first needed: a build whose config is the one validated before (see
 * `readValidatedConfig`) builds none, which took ~2 ms and 1 MB of every start.
 */
export const configSchemas = once(() => {
  const { patterns, sourceSchema, rulesSchema, formatSchema, frontmatterSetting, agentSchema } = partSchemas();
  const configSchema = z.strictObject({
    /** Lets `skills.config.json` name its JSON Schema (`skills schema config`) for editor completion; ignored. */
    $schema: z.string().optional(),
    outDir: z.string().min(1).default("dist/skills"),
    location: z
      .union([z.enum(["absolute", "relative"]), z.strictObject({ base: z.string().min(1) })], { error: 'expected "absolute", "relative" or { base: "/where/the/app/runs" }' })
      .default("relative"),
    format: formatSchema.default("pi"),
    yaml: z.enum(["strict", "recover"]).default("strict"),
    /** The team's own frontmatter fields: every SKILL.md is checked against it, and the fields are typed in the bundle. */
    frontmatter: frontmatterSetting.optional(),
    /** Count each agent's prompt and catalogue in tokens of this encoding (manifest, `skills list`, `skills diff`). */
    tokens: z.strictObject({ encoding: z.enum(TOKEN_ENCODINGS).default(DEFAULT_TOKEN_ENCODING) }).optional(),
    /**
     * true: copy each selected skill's folder into `<outDir>/skills/<name>/` and point locations there. An object
     * sets where (`per-agent`: `<outDir>/agents/<id>/skills/<name>/`, for an agent that lists a folder of its own)
     * and how (`link`: hard links).
     */
    stage: z
      .union([
        z.boolean(),
        z.strictObject({
          layout: z.enum(["shared", "per-agent"]).default("shared"),
          method: z.enum(["copy", "link"]).default("copy"),
        }),
      ])
      .optional(),
    /**
     * A Markdown file name: each agent's context is also written to `<outDir>/agents/<id>/<contextFile>` (an
     * AGENTS.md, for an agent that reads its instructions from disk, as Codex does). Only a plain `.md` name: it cannot leave the agent's folder or take the place of its `skills`.
     */
    contextFile: z
      .string()
      .regex(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,251}\.md$/, "a Markdown file name of letters, digits, ., _ or -, not starting with a dot (e.g. AGENTS.md)")
      .optional(),
    /** A missing description becomes the body's first paragraph, with a `description-fallback` warning. */
    descriptionFallback: z.literal("first-paragraph").optional(),
    preset: z.enum(Object.keys(PRESETS) as [keyof typeof PRESETS]).optional(),
    rules: rulesSchema.default({}),
    /** Severities per path, as ESLint's `overrides`: each entry whose `files` globs match a diagnostic's file applies its `rules`, later entries winning. */
    overrides: z.array(z.strictObject({ files: patterns.min(1, "give at least one glob"), rules: rulesSchema })).optional(),
    agents: z
      .record(
        z
          .string()
          .regex(AGENT_ID_PATTERN, "agent ids are lowercase letters, digits and hyphens, starting with a letter")
          // Each id names files (prompts/<id>.txt, agents/<id>.d.ts): the limit keeps them under the 255 bytes a file name may take.
          .max(AGENT_ID_MAX_LENGTH, `agent ids are at most ${AGENT_ID_MAX_LENGTH} characters`),
        agentSchema,
      )
      .refine((agents) => Object.keys(agents).length > 0, "define at least one agent"),
  });
  return { config: configSchema, source: sourceSchema, agent: agentSchema, format: formatSchema, frontmatter: frontmatterSetting };
});

/**
 * JSON Schema of a config file (`skills schema config`). A function `format` cannot be written in JSON, so
 * the schema offers the named formats only.
 */
export function configJsonSchema(): Record<string, unknown> {
  const { config: configSchema, format: formatSchema, frontmatter: frontmatterSetting } = configSchemas();
  return z.toJSONSchema(configSchema, {
    io: "input",
    unrepresentable: "any",
    override: ({ zodSchema, jsonSchema }) => {
      if (zodSchema === frontmatterSetting) {
        Object.assign(jsonSchema, { not: {}, description: "A zod schema: possible in TS and JS configs only (skills.config.ts)." });
        return;
      }
      if (zodSchema !== formatSchema) return;
      delete jsonSchema.anyOf;
      Object.assign(jsonSchema, { type: "string", enum: FORMAT_NAMES, description: "pi | markdown; a TS or JS config may also give a function (ctx) => string" });
    },
  }) as Record<string, unknown>;
}

/** What a config file may contain (defaults not yet applied). */
type ConfigSchemas = ReturnType<typeof configSchemas>;
export type SkillsConfig = z.input<ConfigSchemas["config"]>;
export type ResolvedConfig = z.output<ConfigSchemas["config"]>;
export type SourceConfig = z.output<ConfigSchemas["source"]>;
export type AgentConfig = z.output<ConfigSchemas["agent"]>;

/** Types a config file; returns it unchanged. */
export function defineConfig(config: SkillsConfig): SkillsConfig {
  return config;
}

export interface LoadedConfig {
  /** Absolute path of the config file. */
  file: string;
  /** The folder relative paths are resolved against. */
  dir: string;
  config: ResolvedConfig;
  /** Local files the config imports (with the config itself), for watch mode. */
  inputs: string[];
  /** `SKILLS_PROMPT_CHAR_BUDGET` as the config was loaded: the budget, in characters, of every agent that sets none. */
  environmentBudget?: number;
  /** No config file: `skills check PATH…`, one agent over the paths, every skill under them built. */
  implicit?: true;
}

/** The environment variable that sets the character budget of every agent whose config sets none. */
export const BUDGET_VARIABLE = "SKILLS_PROMPT_CHAR_BUDGET";

/** `SKILLS_PROMPT_CHAR_BUDGET`, when set: a positive whole number, or the run stops as for a bad config. */
function environmentBudget(file: string): number | undefined {
  const text = process.env[BUDGET_VARIABLE];
  if (text === undefined || text.trim() === "") return undefined;
  if (!/^\s*[1-9][0-9]{0,15}\s*$/.test(text)) {
    throw new ConfigError(file, `${BUDGET_VARIABLE} (environment) is ${JSON.stringify(text.slice(0, 40))}${text.length > 40 ? "…" : ""}: expected a positive whole number of characters`);
  }
  return Number(text);
}

/** What an agent's catalogue may take: its own `budget`, else the environment's characters; undefined for no limit. */
export function agentBudget(budget: AgentConfig["budget"], fromEnvironment: number | undefined): { limit: number; unit: "characters" | "tokens" } | undefined {
  if (budget === undefined) return fromEnvironment === undefined ? undefined : { limit: fromEnvironment, unit: "characters" };
  if (typeof budget === "number") return { limit: budget, unit: "characters" };
  if ("tokens" in budget) return { limit: budget.tokens, unit: "tokens" };
  return { limit: Math.floor(budget.contextWindow * 0.02 * CHARACTERS_PER_TOKEN), unit: "characters" };
}

/** The estimate `{ contextWindow }` counts with, as `skills diff` does. */
const CHARACTERS_PER_TOKEN = 4;

/** A config that cannot be found, loaded or validated: the CLI exits 2 with this message. */
export class ConfigError extends Error {
  override name = "ConfigError";
  /** What is wrong, a line a problem, clipped (`clipLines`): it may quote the keys of a JSON config or a suppressions file. */
  readonly detail: string;

  constructor(
    readonly file: string,
    detail: string,
  ) {
    const clipped = clipLines(detail);
    super(`${file}: ${clipped}`);
    this.detail = clipped;
  }
}

/** Finds (`path` omitted: the first config file in `cwd`), loads and validates a config. */
export async function loadConfig(path?: string, cwd = process.cwd(), { readOnly = false } = {}): Promise<LoadedConfig> {
  // lstat: a link named skills.config.ts is found even when its target is missing, and then reported as such.
  const file = path ? resolve(cwd, path) : CONFIG_FILE_NAMES.map((name) => join(cwd, name)).find((candidate) => lstatSync(candidate, { throwIfNoEntry: false }));
  if (!file) throw new ConfigError(cwd, `no config found (looked for ${CONFIG_FILE_NAMES.join(", ")}); run \`skills init\` to create one`);
  assertConfigFile(file);
  const { value, inputs, exportAt, code } = await importConfigFile(file, readOnly);
  if (file.endsWith(".json") && typeof value === "object" && value !== null && Object.hasOwn(value, "frontmatter")) {
    throw new ConfigError(file, "frontmatter: a JSON config cannot hold a zod schema; move the config to skills.config.ts and write `frontmatter: z.object({ … })`");
  }
  // A JSON config is data that a pull request may change, and an entry of the cache could be committed beside it: it
  // is validated every time. A TS or JS config is code, which could do whatever a forged entry could.
  const asData = file.endsWith(".json") ? undefined : dataJson(value);
  const validated = asData === undefined ? undefined : (readValidatedConfig(file, asData) as ResolvedConfig | undefined);
  const config = validated ?? (await validate(file, value, exportAt, code));
  if (asData !== undefined && validated === undefined && !readOnly) writeValidatedConfig(file, asData, config);
  const budget = environmentBudget(file);
  return { file, dir: dirname(file), config, inputs, ...(budget === undefined ? {} : { environmentBudget: budget }) };
}

/** The config's value checked against its schema: what it resolves to (defaults applied), or a ConfigError. */
async function validate(file: string, value: unknown, exportAt: string | undefined, code: ConfigCode | undefined): Promise<ResolvedConfig> {
  let parsed: ReturnType<ConfigSchemas["config"]["safeParse"]>;
  try {
    // Validation reads the export: a getter or a proxy trap in it runs here, and may throw. Once a process, so
    // without zod's compiled fast path (made with `new Function` on a schema's first parse: ~1 ms more than it saves).
    parsed = configSchemas().config.safeParse(value, { jitless: true });
  } catch (error) {
    const message = thrownMessage(error);
    const where = (code ? await failureLocation(error, code) : undefined) ?? exportAt ?? file;
    throw new ConfigError(where, `the config failed to load: ${message}`);
  }
  if (!parsed.success) {
    const [first] = parsed.error.issues;
    if (first?.code === "invalid_type" && first.path.length === 0) {
      const fix = file.endsWith(".json") ? 'write `{ "agents": { … } }`' : "write `export default defineConfig({ agents: { … } })`";
      throw new ConfigError(exportAt ?? file, `${file.endsWith(".json") ? "the config" : "the default export"} is ${describeValue(value)}, not a config object; ${fix}`);
    }
    throw new ConfigError(file, formatIssues(parsed.error.issues));
  }
  return parsed.data;
}

interface ImportedConfig {
  value: unknown;
  inputs: string[];
  /** `file:line:col` of the default export (of the JSON text), for an export of the wrong shape. */
  exportAt?: string;
  /** The code that ran, to point a failure while validating the export (a throwing getter) at its line. */
  code?: ConfigCode;
}

/** A config file's most bytes: far past any config, and far below the longest text Node makes of a file. */
const CONFIG_MAX_BYTES = 64 * 1024 * 1024;

/**
 * The config must be a regular file that can be read. It is opened non-blocking and checked before anything
 * reads it: a folder would fail deep inside esbuild or Node, a FIFO would wait for a writer forever, and a file of
 * gigabytes would stop the build with an internal error.
 */
function assertConfigFile(file: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new ConfigError(file, `${stats.isDirectory() ? "a folder" : "not a regular file (a FIFO, socket or device), so it is not read"}, not a config file; name the config file itself`);
    if (stats.size > CONFIG_MAX_BYTES) throw new ConfigError(file, `the config file is ${(stats.size / 1024 / 1024).toFixed(0)} MiB, over the ${CONFIG_MAX_BYTES / 1024 / 1024} MiB a config file may hold`);
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") {
      const link = lstatSync(file, { throwIfNoEntry: false })?.isSymbolicLink();
      throw new ConfigError(file, link ? `the config file is a symbolic link to ${readlinkSync(file)}, which does not exist` : "the config file does not exist");
    }
    throw new ConfigError(file, `cannot read the config file: ${systemErrorReason(error as NodeJS.ErrnoException)}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

async function importConfigFile(file: string, readOnly: boolean): Promise<ImportedConfig> {
  if (file.endsWith(".json")) {
    // A byte order mark is allowed: some editors on Windows save JSON with one.
    const text = (readFileSync(file, "utf8")).replace(/^\uFEFF/, "");
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      throw new ConfigError(file, `invalid JSON: ${(error as Error).message}`);
    }
    const badKey = findBadJsonKey(text);
    if (badKey) {
      const before = text.slice(0, badKey.at).split("\n");
      throw new ConfigError(`${file}:${before.length}:${before.at(-1)!.length + 1}`, badKey.message);
    }
    return { value, inputs: [file], exportAt: `${file}:1:1` };
  }
  if (isBundled(file)) return importBundled(file, readOnly);
  // A CommonJS config (`module.exports = …`) is loaded by Node: a bundle's default export would be the wrong value.
  const code: ConfigCode = { module: file, sources: [{ path: file, text: readFileSync(file, "utf8") }] };
  const url = pathToFileURL(file).href + `?t=${Date.now()}`;
  return { value: await evaluate(file, () => importModule(url), code), inputs: [file], exportAt: exportLocation(file, code), code };
}

/**
 * Whether a config is bundled by esbuild: TypeScript, and JavaScript that Node would run as an ES module (`.mjs`; a
 * `.js` where the nearest package.json says `"type": "module"`, or says no type and the file has module syntax).
 * Imported by Node instead, an ES module's `import … from "skillbake"` loads the whole package (zod, yaml and the
 * compiler: ~90 ms at every run), where a bundle gets the few lines of it a config uses.
 */
function isBundled(file: string): boolean {
  if (file.endsWith(".ts") || file.endsWith(".mts") || file.endsWith(".mjs")) return true;
  if (!file.endsWith(".js")) return false;
  const type = packageType(file);
  return type === "module" || (type === undefined && hasModuleSyntax(readFileSync(file, "utf8")));
}

/** The `type` of the package.json nearest `file`, as Node reads it: undefined for none, or none there. */
function packageType(file: string): string | undefined {
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const path = join(dir, "package.json");
    const manifest = readRegularFile(path, { followLinks: true, maxBytes: PACKAGE_JSON_MAX_BYTES });
    // One that is there but cannot be read or parsed: the config is loaded by Node, which reports it.
    if (!manifest && lstatSync(path, { throwIfNoEntry: false })) return "unreadable";
    if (manifest) {
      try {
        const { type } = (JSON.parse(manifest.toString("utf8")) ?? {}) as { type?: unknown };
        return typeof type === "string" ? type : undefined;
      } catch {
        return "unreadable";
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/** A package.json larger than this is not read for its `type`. */
const PACKAGE_JSON_MAX_BYTES = 16 * 1024 * 1024;

/** What V8 says of module syntax in CommonJS: `import`, `export`, `import.meta` and a top-level `await`. */
const MODULE_SYNTAX_ERRORS = ["Cannot use import statement outside a module", "Unexpected token 'export'", "Cannot use 'import.meta' outside a module", "await is only valid in async functions and the top level bodies of modules"];

/** Whether JavaScript `text` fails to compile as CommonJS for module syntax: Node then runs a `.js` of no package type as an ES module. */
function hasModuleSyntax(text: string): boolean {
  try {
    new Script(`(function (exports, require, module, __filename, __dirname) {${text}\n})`);
    return false;
  } catch (error) {
    return error instanceof SyntaxError && MODULE_SYNTAX_ERRORS.some((message) => error.message.includes(message));
  }
}

/**
 * In valid JSON `text`, the first key that JSON.parse would lose or let change the object's meaning: one
 * given twice in an object (JSON.parse keeps the last, silently), `__proto__` (which a copy turns into the
 * object's prototype, so an agent of that name vanishes) or `constructor`. Returns its offset and what is wrong.
 */
function findBadJsonKey(text: string): { at: number; message: string } | undefined {
  /** For each open object, the keys seen so far; undefined for an open array. */
  const open: (Set<string> | undefined)[] = [];
  const colon = /[ \t\r\n]*:/y;
  for (let index = 0; index < text.length; index++) {
    const char = text[index];
    if (char === "{") open.push(new Set());
    else if (char === "[") open.push(undefined);
    else if (char === "}" || char === "]") open.pop();
    else if (char === '"') {
      let end = index + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      const keys = open.at(-1);
      colon.lastIndex = end + 1;
      if (keys && colon.test(text)) {
        const key = JSON.parse(text.slice(index, end + 1)) as string;
        if (key === "__proto__" || key === "constructor") return { at: index, message: `the key "${key}" is not allowed: it names a built-in part of JavaScript objects; rename it` };
        if (keys.has(key)) return { at: index, message: `the key "${key}" appears twice in one object; JSON keeps only the last, so remove one` };
        keys.add(key);
      }
      index = end;
    }
  }
  return undefined;
}

/**
 * TypeScript and ES module configs are bundled by esbuild and run from memory (as a script, or imported from a data: URL as a
 * module: see `bundleConfig`): no file is written, so `check` and `build --check` work in a read-only checkout
 * and a killed build leaves nothing behind (esbuild's output is cached, by a rename, when the cache folder can be
 * written: src/compile/config-cache.ts). Packages
 * stay external, imported by the absolute path they resolve to from the config's folder, as Node would resolve
 * them beside the config; `import.meta.url` (and `dirname`, `filename`) are the config's, in the local files it
 * imports too (they are one bundle); stack frames name the config (`//# sourceURL`), and are mapped back to the
 * lines of its files through the inline source map.
 */
async function importBundled(file: string, readOnly: boolean): Promise<ImportedConfig> {
  (globalThis as Record<symbol, unknown>)[ZOD_KEY] = zodForConfigs;
  const cwd = process.cwd();
  const { code: output, inputs, kind } = readTranspiledConfig(file, cwd) ?? (await bundleConfigCode(file, cwd, readOnly));
  const url = pathToFileURL(file).href;
  const code = `${output}\n//# sourceURL=${url}\n`;
  const configCode = bundledCode(file, code);
  const load = kind === "script" ? () => runScript(code, url) : () => importModule(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
  return { value: await evaluate(file, load, configCode), inputs, exportAt: exportLocation(file, configCode), code: configCode };
}

/** Bundles a config with esbuild, and caches the result unless `readOnly` (src/compile/config-cache.ts). */
async function bundleConfigCode(file: string, cwd: string, readOnly: boolean): Promise<TranspiledConfig> {
  // A config that imports a package is bundled again at every build (it is not cached): not tried as a script first.
  const script = importsPackage(readFileSync(file, "utf8")) ? undefined : await bundleConfig(file, "script");
  const output = script ?? (await bundleConfig(file, "module"));
  const bundled = Object.entries(output.metafile.inputs).filter(([input]) => !input.startsWith(`${SHIM_NAMESPACE}:`));
  const transpiled: TranspiledConfig = { code: output.code, inputs: bundled.map(([input]) => resolve(cwd, input)).sort(), kind: output.kind };
  const imports = new Map(
    bundled.map(([input, { imports }]) => [
      resolve(cwd, input),
      imports.filter((imported) => !imported.path.startsWith(`${SHIM_NAMESPACE}:`)).map((imported) => (imported.external ? imported : { path: resolve(cwd, imported.path) })),
    ]),
  );
  if (readOnly) return transpiled;
  const sources = new Map(bundledCode(file, transpiled.code).sources.map((source) => [source.path, source.text]));
  writeTranspiledConfig(file, cwd, transpiled, imports, sources);
  return transpiled;
}

/**
 * How esbuild begins a script-kind bundle (see `bundleConfig`): the IIFE whose value is the config's exports
 * assigned to a global, which `runScript` runs without declaring it.
 */
const SCRIPT_NAME = "__skillbakeConfig";
const STRICT = '"use strict";\n';
const SCRIPT_HEAD = `${STRICT}var ${SCRIPT_NAME} = `;

/**
 * esbuild's bundle of the config. A config that imports only its own files (no package, not even Node's own
 * modules), with no top-level `await`, `import()` or `import.meta` (but its url, dirname and filename, which are
 * replaced), is bundled as a script (`runScript`): as strict as a module and seeing the same names, run without
 * starting Node's ES module loader (~3 ms of a small build). Any other is bundled as an ES module; asked for a
 * script, undefined. A config that fails to bundle as a module throws a ConfigError.
 */
async function bundleConfig(file: string, kind: "script"): Promise<ConfigBundle | undefined>;
async function bundleConfig(file: string, kind: "module", shim?: boolean): Promise<ConfigBundle>;
async function bundleConfig(file: string, kind: TranspiledConfig["kind"], shim = true): Promise<ConfigBundle | undefined> {
  const { build } = loadEsbuild();
  const url = pathToFileURL(file).href;
  let output;
  try {
    output = await build({
      entryPoints: [file],
      bundle: true,
      platform: "node",
      ...(kind === "script" ? { format: "iife", globalName: SCRIPT_NAME, banner: { js: STRICT.trim() } } : { format: "esm" }),
      target: "node20",
      write: false,
      metafile: true,
      logLevel: "silent",
      sourcemap: "inline",
      define: { "import.meta.url": JSON.stringify(url), "import.meta.dirname": JSON.stringify(dirname(file)), "import.meta.filename": JSON.stringify(file) },
      plugins: [...(shim ? [skillbakeShim] : []), kind === "script" ? packagesExternal : packagesByPath],
    });
  } catch (error) {
    if (kind === "script") return undefined;
    const first = (error as { errors?: { text: string; detail?: unknown; location?: { file: string; line: number; column: number } }[] }).errors?.[0];
    // A config that imports more of skillbake than the shim has gets the installed package, as Node would load it.
    if (shim && first?.text.startsWith(`No matching export in "${SHIM_NAMESPACE}:skillbake"`)) return bundleConfig(file, "module", false);
    // A missing package is reported as a JavaScript config's would be, where Node fails to load it.
    const text = first?.detail === MISSING_PACKAGE ? `the config failed to load: ${first.text}` : first?.text;
    if (first?.location) throw new ConfigError(`${resolve(dirname(file), basename(first.location.file))}:${first.location.line}:${first.location.column + 1}`, text!);
    throw new ConfigError(file, text ?? String(error));
  }
  const code = output.outputFiles[0]!.text;
  if (kind === "module") return { code, metafile: output.metafile, kind };
  const external = Object.values(output.metafile.inputs).some((input) => input.imports.some((imported) => imported.external));
  // esbuild leaves an `import()` of a computed path as it is, which a script run from memory cannot run.
  if (external || output.warnings.length > 0 || code.includes("import(") || !code.startsWith(SCRIPT_HEAD)) return undefined;
  // The global's declaration blanked (every column kept for the source map): the IIFE's value is the script's.
  return { code: `${STRICT}${" ".repeat(SCRIPT_HEAD.length - STRICT.length)}${code.slice(SCRIPT_HEAD.length)}`, metafile: output.metafile, kind };
}

/** Each specifier a module's text imports (or exports) from, by `from "…"`, `import "…"` or `import("…")`. */
const IMPORTED = /(?:\bfrom|\bimport)\s*(?:\(\s*)?["']([^"']+)["']/g;

/**
 * Whether `text` imports a package: a specifier that is no path, not `skillbake` and not one of Node's modules.
 * @internal
 */
export function importsPackage(text: string): boolean {
  for (const [, specifier] of text.matchAll(IMPORTED)) if (!/^[./]/.test(specifier!) && specifier !== "skillbake" && !isBuiltin(specifier!)) return true;
  return false;
}

interface ConfigBundle {
  code: string;
  metafile: import("esbuild").Metafile;
  kind: TranspiledConfig["kind"];
}

/** Runs a script-kind config (see `bundleConfig`): its exports, or a rejection with what it threw. */
function runScript(code: string, url: string): Promise<{ default?: unknown }> {
  return new Promise((resolve) => resolve(new Script(code, { filename: url }).runInThisContext() as { default?: unknown }));
}

/**
 * esbuild, loaded when a config needs it. `require`, not `import()`: esbuild's entry is CommonJS, and importing it
 * from ESM first scans its 100 KB for export names (cjs-module-lexer), a quarter of the cost of loading it.
 */
function loadEsbuild(): typeof import("esbuild") {
  return (typeof __skillbakeRequire === "function" ? __skillbakeRequire("esbuild") : createRequire(import.meta.url)("esbuild")) as typeof import("esbuild");
}

/** The config's code as Node runs it, so that a failure can be pointed at the config's own line. */
interface ConfigCode {
  /** The module Node imports: the config itself, or esbuild's output for a bundled one. */
  module: string;
  /** Maps esbuild's output back to the config and the local files it imports. */
  sourceMap?: SourceMap;
  /** The config and its local imports, with their text. */
  sources: { path: string; text: string }[];
}

/** esbuild's inline source map holds the sources' paths (relative to the working folder) and their text. */
function bundledCode(module: string, code: string): ConfigCode {
  const inline = /^\/\/# sourceMappingURL=data:application\/json;base64,([A-Za-z0-9+/=]+)$/m.exec(code);
  if (!inline) return { module, sources: [] };
  const payload = JSON.parse(Buffer.from(inline[1]!, "base64").toString("utf8")) as { sources: string[]; sourcesContent?: string[] };
  const sources = payload.sources.map((source, index) => ({ path: resolve(process.cwd(), source), text: payload.sourcesContent?.[index] ?? "" }));
  return { module, sourceMap: new SourceMap(payload as ConstructorParameters<typeof SourceMap>[0]), sources };
}

/** Marks the error of a package that does not resolve, so it reads as a JavaScript config's would. */
const MISSING_PACKAGE = Symbol("missing package");

/**
 * A package the config imports stays external, as the absolute path it resolves to from the importing file (a
 * module imported from a data: URL resolves nothing itself); one that does not resolve fails the bundle at the
 * line that imports it.
 */
const packagesByPath = {
  name: "packages-by-path",
  setup(build: import("esbuild").PluginBuild) {
    const resolving = Symbol("resolving");
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === resolving || isBuiltin(args.path)) return undefined;
      const found = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, importer: args.importer, pluginData: resolving });
      if (found.errors.length > 0) return { errors: [{ text: `Cannot find package '${args.path}'`, detail: MISSING_PACKAGE }] };
      return { path: pathToFileURL(found.path).href, external: true };
    });
  },
};

/** For a script-kind bundle: any package (or Node module) stays external, which makes the config a module (see `bundleConfig`). */
const packagesExternal = {
  name: "packages-external",
  setup(build: import("esbuild").PluginBuild) {
    build.onResolve({ filter: /^[^./]/ }, (args) => ({ path: args.path, external: true }));
  },
};

/** The shim's esbuild namespace: its module is `skillbake-shim:skillbake` in the metafile. */
const SHIM_NAMESPACE = "skillbake-shim";

/**
 * Where the shim finds the function that gives its `z`: a module imported from a data: URL can import no file of
 * ours. The call is marked pure, so esbuild drops it from a config that does not import `z`, which then loads no zod
 * of its own (see src/cli/config-zod.ts).
 */
const ZOD_KEY = Symbol.for("skillbake.zod");

/**
 * `import { defineConfig, z } from "skillbake"` works even where skillbake is not installed beside the config, and
 * its `z` is a zod skillbake carries (`zodForConfigs`), so a `frontmatter` schema needs no zod installed.
 */
const skillbakeShim = {
  name: "skillbake-shim",
  setup(build: import("esbuild").PluginBuild) {
    build.onResolve({ filter: /^skillbake$/ }, () => ({ path: "skillbake", namespace: SHIM_NAMESPACE }));
    build.onLoad({ filter: /.*/, namespace: SHIM_NAMESPACE }, () => ({
      contents: `export const defineConfig = (config) => config;\nexport const z = /* @__PURE__ */ globalThis[Symbol.for("skillbake.zod")]();`,
      loader: "js",
    }));
  },
};

/**
 * How long a config's code may run before its default export is known. Loading runs the config: a top-level
 * `await`, or a default export that is a promise, that never settles would otherwise hang the build (or, with
 * nothing left to wait on, end it silently with exit 0). Synchronous code is not interrupted: that would take
 * evaluating every config first in a worker (~200–400 ms more per start, side effects twice) for trusted code.
 */
export const CONFIG_LOAD_TIMEOUT_MS = 10_000;

/** In the CLI, the launcher's `import()`: the CLI runs as a script, which has no module loader (see cli/launch.ts). */
declare const __skillbakeImport: ((url: string) => Promise<unknown>) | undefined;
/** In the CLI, the launcher's `require`, which runs a package from V8's code cache (see cli/launch.ts). */
declare const __skillbakeRequire: ((id: string) => unknown) | undefined;

/** Imports a module by URL, from the CLI (a script) as from the library. */
export function importModule(url: string): Promise<unknown> {
  return typeof __skillbakeImport === "function" ? __skillbakeImport(url) : import(url);
}

/** Runs the config (`load`) and awaits its default export (which may be a promise of the config), bounded in time. */
async function evaluate(file: string, load: () => Promise<unknown>, code: ConfigCode): Promise<unknown> {
  const timeout = Symbol("timeout");
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeout), CONFIG_LOAD_TIMEOUT_MS);
  });
  let imported = false;
  try {
    const module = await Promise.race([load() as Promise<{ default?: unknown }>, timedOut]);
    imported = true;
    if (module.default === undefined) throw new ConfigError(file, "the config has no default export; write `export default defineConfig({ … })`");
    return await Promise.race([module.default, timedOut]);
  } catch (error) {
    if (error === timeout) {
      const where = imported ? exportLocation(file, code) : findInSources(ownSource(file, code), TOP_LEVEL_AWAIT);
      const cause = imported ? "its default export is a promise that never settles" : "a top-level `await` never settles";
      throw new ConfigError(where ?? file, `the config did not finish loading within ${CONFIG_LOAD_TIMEOUT_MS / 1000} s: ${cause}`);
    }
    if (error instanceof ConfigError) throw error;
    const message = thrownMessage(error).replace(/ imported from \S+$/, "");
    throw new ConfigError((await failureLocation(error, code)) ?? file, `the config failed to load: ${message}`);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `file:line:col` in the config (or a local file it imports) where loading failed: the first stack frame in
 * that code, mapped back through the source map for a bundled config; for a package that cannot be found,
 * the line that imports it; for a JavaScript syntax error, where esbuild finds it.
 */
async function failureLocation(error: unknown, code: ConfigCode): Promise<string | undefined> {
  const stack = error instanceof Error ? (error.stack ?? "") : "";
  for (const [, url, line, column] of stack.matchAll(/(file:\/\/[^\s()]+?):(\d+):(\d+)\)?$/gm)) {
    const path = fileURLToPath(url!.replace(/\?.*$/, ""));
    if (path === code.module && code.sourceMap) {
      const entry = code.sourceMap.findEntry(Number(line) - 1, Number(column) - 1) as { originalSource?: string; originalLine?: number; originalColumn?: number };
      if (entry.originalSource) return `${resolve(process.cwd(), entry.originalSource)}:${entry.originalLine! + 1}:${entry.originalColumn! + 1}`;
    } else if (code.sources.some((source) => source.path === path)) {
      return `${path}:${line}:${column}`;
    }
  }
  const missing = /^Cannot find (?:package|module) '([^']+)'/.exec(error instanceof Error ? error.message : "")?.[1];
  if (missing) {
    // A package by its name; a missing relative file by the name it was imported as (./helper.js, ./helper).
    const name = isAbsolute(missing) ? basename(missing).replace(/\.[cm]?js$/, "") : missing;
    return findInSources(code, new RegExp(`["'](?:[^"'\n]*/)?${escapeRegExp(name)}(?:\\.[cm]?[jt]s)?["']`));
  }
  if (error instanceof SyntaxError && !code.sourceMap) return syntaxErrorLocation(code);
  return undefined;
}

async function syntaxErrorLocation(code: ConfigCode): Promise<string | undefined> {
  const [source] = code.sources;
  if (!source) return undefined;
  const { transform } = loadEsbuild();
  try {
    await transform(source.text, { loader: "js", format: "esm", logLevel: "silent" });
  } catch (error) {
    const location = (error as { errors?: { location?: { line: number; column: number } }[] }).errors?.[0]?.location;
    if (location) return `${source.path}:${location.line}:${location.column + 1}`;
  }
  return undefined;
}

/** An `await` in a statement at the top of a module: `await x`, `const a = await x`, `export const a = await x`. */
const TOP_LEVEL_AWAIT = /^(?:export\s+)?(?:(?:const|let|var)\s+[^=]+=\s*)?await\b/;

/** Where `export default` stands in the config itself. */
function exportLocation(file: string, code: ConfigCode): string | undefined {
  return findInSources(ownSource(file, code), /\bexport\s+default\b/);
}

/** The config file alone, without the local files it imports. */
function ownSource(file: string, code: ConfigCode): ConfigCode {
  return { ...code, sources: code.sources.filter((source) => source.path === file) };
}

function findInSources(code: ConfigCode, pattern: RegExp): string | undefined {
  for (const source of code.sources) {
    const lines = source.text.split("\n");
    for (let index = 0; index < lines.length; index++) {
      const match = pattern.exec(lines[index]!);
      if (match) return `${source.path}:${index + 1}:${match.index + 1}`;
    }
  }
  return undefined;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** The first line of what a config threw: an error's message, or the value itself (`throw { code: 42 }`). */
function thrownMessage(error: unknown): string {
  const text = error instanceof Error ? error.message : typeof error === "string" ? error : inspect(error, { breakLength: Infinity, depth: 2 });
  return text.split("\n")[0]!;
}

function describeValue(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "function") return "a function";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => {
      const path = formatPath(issue.path);
      // A bad record key carries the key's own issue inside.
      const cause = issue.code === "invalid_key" ? (issue.issues[0] ?? issue) : issue;
      const message = cause.message.replace(/^Invalid (input|option): /, "");
      if (issue.code === "unrecognized_keys") {
        return issue.keys.map((key) => `${path ? `${path}.` : ""}${key}: unknown setting.${didYouMean(key, settingsAt(issue.path))}`).join("\n");
      }
      return `${path || "(config)"}: ${message}`;
    })
    .join("\n");
}

/** The settings the object at `path` of a config accepts: the candidates for a mistyped one. */
function settingsAt(path: readonly PropertyKey[]): string[] {
  const schemas = configSchemas();
  if (path.length === 0) return Object.keys(schemas.config.shape);
  if (path[0] === "agents" && path.length === 2) return Object.keys(schemas.agent.shape);
  if (path[0] === "agents" && path[2] === "skills" && path.length === 4) return Object.keys(schemas.source.shape);
  return [];
}

function formatPath(path: readonly PropertyKey[]): string {
  let text = "";
  for (const segment of path) {
    if (typeof segment === "number") text += `[${segment}]`;
    else text += text ? `.${String(segment)}` : String(segment);
  }
  return text;
}

/** The one agent of `skills check PATH…`. */
export const IMPLICIT_AGENT = "paths";

/**
 * What `skills check PATH…` checks without a config: one agent over the paths (relative to `cwd`), every skill
 * under them built (in dot folders and inside other skills' folders too), with the default rules; a SKILL.md path
 * is its skill's folder.
 */
export function implicitConfig(paths: readonly string[], cwd: string): LoadedConfig {
  const parsed = configSchemas().config.safeParse({ agents: { [IMPLICIT_AGENT]: { skills: paths.map((path) => ({ root: skillFolderOf(path, cwd), nested: true })) } } });
  if (!parsed.success) throw new ConfigError(cwd, formatIssues(parsed.error.issues).replaceAll(`agents.${IMPLICIT_AGENT}.skills`, "paths"));
  return { file: join(cwd, "skills check"), dir: cwd, config: parsed.data, inputs: [], implicit: true };
}

/**
 * A path named SKILL.md (a file, or a link to one) stands for its skill's folder, as Pi takes a skill file for a
 * path: a pre-commit hook hands `skills check` the files it changed. Any other path is a root as given; one
 * that does not exist is reported as such by discovery.
 */
function skillFolderOf(path: string, cwd: string): string {
  if (basename(path) !== "SKILL.md") return path;
  const stats = lstatSync(resolve(cwd, path), { throwIfNoEntry: false });
  return stats && (stats.isFile() || stats.isSymbolicLink()) ? dirname(path) : path;
}

/** `~` and `~/…` expand to the home folder; a relative root resolves against the config folder. */
export function resolveRoot(root: string, configDir: string): string {
  if (root === "~") return homedir();
  if (root.startsWith("~/")) return join(homedir(), root.slice(2));
  return isAbsolute(root) ? resolve(root) : resolve(configDir, root);
}
