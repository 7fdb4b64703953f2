import { configJsonSchema } from "../../compile/config.js";
import { manifestJsonSchema } from "../../bundle/manifest.js";
import { frontmatterJsonSchema } from "../../compile/model.js";
import { didYouMean } from "../../compile/suggest.js";
import { UsageError, writeJson, type Command } from "./command.js";

/** Each schema is generated from the zod model the compiler itself validates with. */
const SCHEMAS = new Map<string, () => Record<string, unknown>>([
  ["frontmatter", frontmatterJsonSchema],
  ["config", configJsonSchema],
  ["manifest", manifestJsonSchema],
]);
const KINDS = [...SCHEMAS.keys()];

export const schemaCommand: Command = {
  name: "schema",
  summary: "print the JSON Schema of SKILL.md frontmatter, the config or manifest.json",
  help: `Usage: skills schema frontmatter|config|manifest

Prints a JSON Schema on stdout, generated from the models skillbake validates with:
  frontmatter  a SKILL.md's YAML frontmatter (draft-07, for editors such as yaml-language-server)
  config       skills.config.json; a format function, possible in TS and JS configs only, is left out
  manifest     the bundle's manifest.json, for servers written in other languages

Examples:
  skills schema frontmatter > .vscode/skill-frontmatter.schema.json
  skills schema manifest > manifest.schema.json`,
  options: {},
  maxPositionals: 1,
  async run(_values, positionals, io) {
    const [kind] = positionals;
    if (kind === undefined) throw new UsageError(`name the schema to print: ${KINDS.join(", ")}`);
    const schema = SCHEMAS.get(kind);
    if (!schema) throw new UsageError(`unknown schema "${kind}"; choose ${KINDS.join(", ")}.${didYouMean(kind, KINDS)}`);
    writeJson(io.stdout, JSON.stringify(schema(), null, 2));
    return 0;
  },
};
