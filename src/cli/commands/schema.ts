import { existsSync } from "node:fs";
import { join } from "node:path";
import { CONFIG_FILE_NAMES, configJsonSchema, loadConfig } from "../../compile/config.js";
import { frontmatterJsonSchemaWith, type FrontmatterSchema } from "../../compile/custom-fields.js";
import { manifestJsonSchema } from "../../bundle/manifest.js";
import { frontmatterJsonSchema } from "../../compile/model.js";
import { didYouMean } from "../../compile/suggest.js";
import { UsageError, writeJson, type Command } from "./command.js";

/**
 * Each schema is generated from the zod model the compiler itself validates with; the frontmatter's and the
 * manifest's include the fields of the config's `frontmatter` schema, when there is a config.
 */
const SCHEMAS = new Map<string, { customFields: boolean; schema(custom?: FrontmatterSchema): Record<string, unknown> }>([
  ["frontmatter", { customFields: true, schema: (custom) => (custom ? frontmatterJsonSchemaWith(custom) : frontmatterJsonSchema()) }],
  ["config", { customFields: false, schema: configJsonSchema }],
  ["manifest", { customFields: true, schema: manifestJsonSchema }],
]);
const KINDS = [...SCHEMAS.keys()];

export const schemaCommand: Command = {
  name: "schema",
  summary: "print the JSON Schema of SKILL.md frontmatter, the config or manifest.json",
  help: `Usage: skills schema frontmatter|config|manifest [--config FILE]

Prints a JSON Schema on stdout, generated from the models skillbake validates with:
  frontmatter  a SKILL.md's YAML frontmatter (draft-07, for editors such as yaml-language-server)
  config       skills.config.json; a format function, possible in TS and JS configs only, is left out
  manifest     the bundle's manifest.json, for servers written in other languages
The frontmatter and manifest schemas include the fields of the config's \`frontmatter\` schema.

Options:
  --config FILE      config file (default: skills.config.{ts,mts,js,mjs,json} in the current folder, if any)

Examples:
  skills schema frontmatter > .vscode/skill-frontmatter.schema.json
  skills schema manifest > manifest.schema.json`,
  options: { config: { type: "string" } },
  maxPositionals: 1,
  async run(values, positionals, io) {
    const [kind] = positionals;
    if (kind === undefined) throw new UsageError(`name the schema to print: ${KINDS.join(", ")}`);
    const schema = SCHEMAS.get(kind);
    if (!schema) throw new UsageError(`unknown schema "${kind}"; choose ${KINDS.join(", ")}.${didYouMean(kind, KINDS)}`);
    const configFile = (values.config as string | undefined) ?? CONFIG_FILE_NAMES.find((name) => existsSync(join(io.cwd, name)));
    const custom = schema.customFields && configFile !== undefined ? (await loadConfig(configFile, io.cwd)).config.frontmatter : undefined;
    writeJson(io.stdout, JSON.stringify(schema.schema(custom), null, 2));
    return 0;
  },
};
