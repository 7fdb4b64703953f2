import { z } from "zod";

/**
 * The frontmatter model (SPEC §3): the single source of the known fields' types. Validation,
 * the manifest and the generated `.d.ts` all derive from it.
 * `name` and `description` are checked by their own rules (name-*, description-*), so they are
 * not part of this object; every field here is optional and a bad value is `field-invalid`.
 */
const toolList = z.union([z.string(), z.array(z.string())]).transform((value) => (typeof value === "string" ? splitTools(value) : value));

/** `Read Grep, Bash(git log:*)` → three tools: separators inside parentheses belong to the tool. */
function splitTools(list: string): string[] {
  return list.match(/(?:[^\s,(]+|\([^)]*\)?)+/g) ?? [];
}

export const optionalFields = {
  license: z.string(),
  compatibility: z.string().max(500),
  metadata: z.record(z.string(), z.string()),
  "allowed-tools": toolList,
  "disable-model-invocation": z.boolean(),
  "user-invocable": z.boolean(),
  "argument-hint": z.string(),
  context: z.enum(["inline", "fork"]),
  agent: z.string(),
  model: z.string(),
  version: z.string(),
  tags: z.array(z.string()),
} as const;

export type OptionalFieldName = keyof typeof optionalFields;
export const OPTIONAL_FIELD_NAMES = Object.keys(optionalFields) as OptionalFieldName[];
export const KNOWN_FIELD_NAMES: readonly string[] = ["name", "description", ...OPTIONAL_FIELD_NAMES];

export type SkillFields = { -readonly [K in OptionalFieldName]?: z.output<(typeof optionalFields)[K]> };
