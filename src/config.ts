import { existsSync } from "node:fs";
import { readFile, unlink, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { z } from "zod";
import { RULE_CODES } from "./diagnostics.js";
import { didYouMean } from "./suggest.js";
import type { FormatFunction } from "./render.js";

export const CONFIG_FILE_NAMES = ["skills.config.ts", "skills.config.mts", "skills.config.js", "skills.config.mjs", "skills.config.json"] as const;

const patterns = z.array(z.string().min(1, "a pattern cannot be empty"));

const sourceSchema = z.strictObject({
  root: z.string().min(1, "a root cannot be empty"),
  available: patterns.optional(),
  inline: patterns.optional(),
  include: patterns.optional(),
  exclude: patterns.optional(),
});

/** A function format exists only in TS/JS configs; JSON Schema cannot describe it, so `configJsonSchema` leaves it out. */
const formatFunction = z.custom<FormatFunction>((value) => typeof value === "function", {
  message: 'expected "pi", "markdown" or a function (ctx) => string',
});
const FORMAT_NAMES = ["pi", "markdown"] as const;
const formatSchema = z.union([z.enum(FORMAT_NAMES), formatFunction], {
  error: 'expected "pi", "markdown" or a function (ctx) => string',
});

const agentSchema = z.strictObject({
  skills: z.array(sourceSchema).min(1, "an agent needs at least one source"),
  format: formatSchema.optional(),
  /** Characters the catalogue of available skills may take; later skills are dropped past it. */
  budget: z.number().int().positive("a budget is a positive number of characters").optional(),
  /** One name from several sources: keep every copy and warn (the default), or only the first or last source's. */
  duplicates: z.enum(["keep-all", "first", "last"]).optional(),
  /** Names or globs over the selected skills' names: undefined keeps all, [] none. */
  allow: z.array(z.string().min(1, "a pattern cannot be empty")).optional(),
  /** Globs, relative to the config folder, of Markdown files placed before the skills in the prompt. */
  context: patterns.optional(),
  description: z.string().optional(),
});

export const AGENT_ID_PATTERN = /^[a-z][a-z0-9-]*$/;

export const configSchema = z.strictObject({
  /** Lets `skills.config.json` name its JSON Schema (`skills schema config`) for editor completion; ignored. */
  $schema: z.string().optional(),
  outDir: z.string().min(1).default("dist/skills"),
  location: z.union([z.enum(["absolute", "relative"]), z.strictObject({ base: z.string().min(1) })]).default("absolute"),
  format: formatSchema.default("pi"),
  yaml: z.enum(["strict", "recover"]).default("strict"),
  /** true: copy each selected skill's folder into `<outDir>/skills/<name>/` and point locations there. */
  stage: z.boolean().optional(),
  /** A missing description becomes the body's first paragraph, with a `description-fallback` warning. */
  descriptionFallback: z.literal("first-paragraph").optional(),
  rules: z.partialRecord(z.enum(RULE_CODES as [string, ...string[]]), z.enum(["off", "warn", "error"])).default({}),
  agents: z
    .record(z.string().regex(AGENT_ID_PATTERN, "agent ids are lowercase letters, digits and hyphens, starting with a letter"), agentSchema)
    .refine((agents) => Object.keys(agents).length > 0, "define at least one agent"),
});

/**
 * JSON Schema of a config file (`skills schema config`). A function `format` cannot be written in JSON, so
 * the schema offers the named formats only.
 */
export function configJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(configSchema, {
    io: "input",
    unrepresentable: "any",
    override: ({ zodSchema, jsonSchema }) => {
      if (zodSchema !== formatSchema) return;
      delete jsonSchema.anyOf;
      Object.assign(jsonSchema, { type: "string", enum: FORMAT_NAMES, description: "pi | markdown; a TS or JS config may also give a function (ctx) => string" });
    },
  }) as Record<string, unknown>;
}

/** What a config file may contain (defaults not yet applied). */
export type SkillsConfig = z.input<typeof configSchema>;
export type ResolvedConfig = z.output<typeof configSchema>;
export type SourceConfig = z.output<typeof sourceSchema>;
export type AgentConfig = z.output<typeof agentSchema>;

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
}

/** A config that cannot be found, loaded or validated: the CLI exits 2 with this message. */
export class ConfigError extends Error {
  override name = "ConfigError";
  constructor(
    readonly file: string,
    readonly detail: string,
  ) {
    super(`${file}: ${detail}`);
  }
}

/** Finds (`path` omitted: the first config file in `cwd`), loads and validates a config. */
export async function loadConfig(path?: string, cwd = process.cwd()): Promise<LoadedConfig> {
  const file = path ? resolve(cwd, path) : CONFIG_FILE_NAMES.map((name) => join(cwd, name)).find((candidate) => existsSync(candidate));
  if (!file) throw new ConfigError(cwd, `no config found (looked for ${CONFIG_FILE_NAMES.join(", ")}); run \`skills init\` to create one`);
  if (!existsSync(file)) throw new ConfigError(file, "the config file does not exist");
  const { value, inputs } = await importConfigFile(file);
  const parsed = configSchema.safeParse(value);
  if (!parsed.success) throw new ConfigError(file, formatIssues(parsed.error.issues));
  return { file, dir: dirname(file), config: parsed.data, inputs };
}

async function importConfigFile(file: string): Promise<{ value: unknown; inputs: string[] }> {
  if (file.endsWith(".json")) {
    const text = await readFile(file, "utf8");
    try {
      return { value: JSON.parse(text), inputs: [file] };
    } catch (error) {
      throw new ConfigError(file, `invalid JSON: ${(error as Error).message}`);
    }
  }
  if (file.endsWith(".ts") || file.endsWith(".mts")) return importTypeScript(file);
  return { value: await evaluate(file, pathToFileURL(file).href + `?t=${Date.now()}`), inputs: [file] };
}

/**
 * TypeScript configs are bundled by esbuild (packages stay external) into a temporary module beside the
 * config, so its relative imports and node_modules resolve as they would for the config itself; the
 * temporary file is removed whatever happens.
 */
async function importTypeScript(file: string): Promise<{ value: unknown; inputs: string[] }> {
  const { build } = await import("esbuild");
  let output;
  try {
    output = await build({
      entryPoints: [file],
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      write: false,
      packages: "external",
      metafile: true,
      logLevel: "silent",
      sourcemap: "inline",
      plugins: [skillbakeShim],
    });
  } catch (error) {
    const first = (error as { errors?: { text: string; location?: { file: string; line: number; column: number } }[] }).errors?.[0];
    if (first?.location) throw new ConfigError(`${resolve(dirname(file), basename(first.location.file))}:${first.location.line}:${first.location.column + 1}`, first.text);
    throw new ConfigError(file, first?.text ?? String(error));
  }
  const code = output.outputFiles[0]!.text;
  const inputs = Object.keys(output.metafile.inputs)
    .filter((input) => !input.startsWith("skillbake-shim:"))
    .map((input) => resolve(process.cwd(), input))
    .sort();
  const temporary = join(dirname(file), `.${basename(file)}.${process.pid}-${Math.random().toString(36).slice(2)}.mjs`);
  await writeFile(temporary, code);
  try {
    return { value: await evaluate(file, pathToFileURL(temporary).href), inputs };
  } finally {
    await unlink(temporary).catch(() => {});
  }
}

/** `import { defineConfig } from "skillbake"` works even where skillbake is not installed beside the config. */
const skillbakeShim = {
  name: "skillbake-shim",
  setup(build: import("esbuild").PluginBuild) {
    build.onResolve({ filter: /^skillbake$/ }, () => ({ path: "skillbake", namespace: "skillbake-shim" }));
    build.onLoad({ filter: /.*/, namespace: "skillbake-shim" }, () => ({ contents: "export const defineConfig = (config) => config;", loader: "js" }));
  },
};

async function evaluate(file: string, url: string): Promise<unknown> {
  let module: { default?: unknown };
  try {
    module = await import(url);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new ConfigError(file, `the config failed to load: ${message.split("\n")[0]}`);
  }
  if (module.default === undefined) throw new ConfigError(file, "the config has no default export; write `export default defineConfig({ … })`");
  return module.default;
}

function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .map((issue) => {
      const path = formatPath(issue.path);
      // A bad record key carries the key's own issue inside.
      const cause = issue.code === "invalid_key" ? (issue.issues[0] ?? issue) : issue;
      const message = cause.message.replace(/^Invalid input: /, "");
      if (issue.code === "unrecognized_keys") {
        return issue.keys.map((key) => `${path ? `${path}.` : ""}${key}: unknown setting.${didYouMean(key, settingsAt(issue.path))}`).join("\n");
      }
      return `${path || "(config)"}: ${message}`;
    })
    .join("\n");
}

/** The settings the object at `path` of a config accepts: the candidates for a mistyped one. */
function settingsAt(path: readonly PropertyKey[]): string[] {
  if (path.length === 0) return Object.keys(configSchema.shape);
  if (path[0] === "agents" && path.length === 2) return Object.keys(agentSchema.shape);
  if (path[0] === "agents" && path[2] === "skills" && path.length === 4) return Object.keys(sourceSchema.shape);
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

/** `~` and `~/…` expand to the home folder; a relative root resolves against the config folder. */
export function resolveRoot(root: string, configDir: string): string {
  if (root === "~") return homedir();
  if (root.startsWith("~/")) return join(homedir(), root.slice(2));
  return isAbsolute(root) ? resolve(root) : resolve(configDir, root);
}
