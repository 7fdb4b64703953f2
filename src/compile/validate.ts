import { bodyLinks, type BodyLink } from "./body-links.js";
import type { Finding } from "./diagnostics.js";
import {
  agentWithoutFork,
  FIELD_DEFAULTS,
  KNOWN_FIELD_NAMES,
  MAX_COMPATIBILITY_LENGTH,
  MAX_DESCRIPTION_LENGTH,
  MAX_NAME_LENGTH,
  NAME_PATTERN,
  OPTIONAL_FIELD_NAMES,
  optionalFields,
  plainFieldValue,
  type SkillFields,
} from "./model.js";
import type { FrontmatterField, ParsedSkillFile, Position } from "./parse.js";
import { HIDDEN_CHARACTER } from "./terminal.js";

/** A skill's validated content, before it is placed in a root and an agent. */
export interface SkillContent {
  name: string;
  description: string;
  fields: SkillFields;
  /** Fields outside the model, and known fields whose value was invalid: nothing is dropped. */
  extra: Record<string, unknown>;
  body: string;
  /** Line in SKILL.md where the body starts: where `findSkillTag` places what it finds. */
  bodyLine: number;
  /** The body's relative links, which `link-broken` checks against the skill folder's files. */
  links: BodyLink[];
}

export interface ValidateOptions {
  /** `first-paragraph`: a missing or blank description becomes the body's first paragraph (`description-fallback`). */
  descriptionFallback?: "first-paragraph";
  /** Fields the config's `frontmatter` schema declares: not unknown (`checkCustomFields` checks their values). */
  customFields?: readonly string[];
  /** Where the entry at a path of keys stands in SKILL.md (its key's position): a field-invalid inside a mapping points at the bad entry. */
  locate?: (path: readonly PropertyKey[]) => Position | undefined;
}

export interface ValidationResult {
  /** Absent when a skip rule hit. */
  content?: SkillContent;
  findings: Finding[];
}

/** Parsed frontmatter → typed skill content and findings. Pure. */
export function validateSkill(file: string, folderName: string, parsed: ParsedSkillFile, options: ValidateOptions = {}): ValidationResult {
  const findings = [...parsed.findings];
  if (!parsed.fields) return { findings };
  const report: Report = (code, at, message, hint) => findings.push({ code, file, line: at.line, column: at.column, message, ...(hint ? { hint } : {}) });

  // A YAML escape can spell half a surrogate pair ("\ud800"), which no UTF-8 file can hold: the prompt file would
  // get U+FFFD where the module keeps the lone half, and getPrompt would differ from prompts/<agent>.txt.
  const unpaired = parsed.fields.find((field) => hasLoneSurrogate(field.key) || hasLoneSurrogate(field.value));
  if (unpaired) {
    report(
      "encoding-invalid",
      unpaired.valueAt,
      `\`${unpaired.key.replace(/[\ud800-\udfff]/gu, "\uFFFD")}\` holds a lone UTF-16 surrogate (a YAML escape such as "\\ud800"), which UTF-8 cannot encode; the skill is left out`,
      "Remove the escape, or write the character it stands for as a whole (a pair of escapes, or the character itself).",
    );
    return { findings };
  }

  const byKey = new Map<string, FrontmatterField>();
  for (const field of parsed.fields) byKey.set(field.key, field);
  const name = nameOf(parsed.fields, byKey.get("name"), folderName, report);
  if (name !== undefined) findings.push(...checkName(file, name, folderName, byKey.get("name")?.valueAt ?? TOP));
  const description = descriptionOf(parsed.fields, parsed.body, byKey.get("description"), options, report);
  const { fields, extra } = fieldsOf(parsed.fields, byKey, options, report);

  if (name === undefined || description === undefined) return { findings };
  return { findings, content: { name, description, fields, extra, body: parsed.body, bodyLine: parsed.bodyLine, links: bodyLinks(parsed.body, parsed.bodyLine) } };
}

/** Adds a finding at a position of the SKILL.md being validated. */
type Report = (code: Finding["code"], at: Position, message: string, hint?: string) => void;

/** Where a finding about a field that is missing points: the file's start. */
const TOP: Position = { line: 1, column: 1 };

/** The skill's name: its `name`, or the folder's when there is none; undefined (the skill is left out) when it is no string. */
function nameOf(all: readonly FrontmatterField[], field: FrontmatterField | undefined, folderName: string, report: Report): string | undefined {
  if (field === undefined || field.value === null || field.value === "") {
    const lookalike = all.find((other) => other.key !== "name" && other.key.trim().toLowerCase() === "name");
    report(
      "name-missing",
      field?.keyAt ?? TOP,
      `no \`name\` in the frontmatter; using the folder name "${folderName}"`,
      lookalike ? `Keys are case-sensitive: rename \`${lookalike.key}:\` on line ${lookalike.keyAt.line} to \`name:\`.` : `Add \`name: ${folderName}\` to the frontmatter.`,
    );
    return folderName;
  }
  if (typeof field.value !== "string") {
    report("name-type", field.valueAt, `\`name\` is a ${typeName(field.value)}, not a string`, `Quote it: name: "${String(field.value)}"`);
    return undefined;
  }
  return field.value;
}

/**
 * The skill's description: its `description`, or (with `descriptionFallback`) the body's first paragraph when it
 * is blank; undefined (the skill is left out) when there is none, or it is no string.
 */
function descriptionOf(all: readonly FrontmatterField[], body: string, field: FrontmatterField | undefined, options: ValidateOptions, report: Report): string | undefined {
  const isBlank = field === undefined || field.value === null || (typeof field.value === "string" && field.value.trim() === "");
  const fallback = isBlank && options.descriptionFallback === "first-paragraph" ? firstParagraph(body) : "";
  if (fallback) {
    report(
      "description-fallback",
      field?.keyAt ?? TOP,
      `${field ? "`description` is blank" : "no `description` in the frontmatter"}; using the body's first paragraph (${fallback.length} characters)`,
      "Write a `description:` saying what the skill does and when to use it; a first paragraph rarely says when.",
    );
    if (fallback.length > MAX_DESCRIPTION_LENGTH) {
      report(
        "description-too-long",
        field?.keyAt ?? TOP,
        `the description taken from the body's first paragraph is ${fallback.length} characters, over ${MAX_DESCRIPTION_LENGTH}`,
        "Write a shorter `description:`, or shorten the body's first paragraph.",
      );
    }
    return fallback;
  }
  if (isBlank) {
    const lookalike = all.find((other) => other.key !== "description" && other.key.trim().toLowerCase() === "description");
    report(
      "description-missing",
      field?.keyAt ?? TOP,
      field ? "`description` is blank" : "no `description` in the frontmatter",
      lookalike
        ? `Keys are case-sensitive: rename \`${lookalike.key}:\` on line ${lookalike.keyAt.line} to \`description:\`.`
        : "Add `description:` saying what the skill does and when to use it; agents choose skills by it.",
    );
    return undefined;
  }
  if (typeof field.value !== "string") {
    report(
      "description-type",
      field.valueAt,
      `\`description\` is a ${typeName(field.value)}, not a string`,
      "Write the description as text; quote it if YAML reads it as a number, a boolean, a list or a mapping.",
    );
    return undefined;
  }
  const description = field.value;
  const hidden = HIDDEN_CHARACTER.exec(description)?.[0];
  if (hidden) {
    report(
      "description-invisible",
      field.valueAt,
      `\`description\` contains ${describeHidden(hidden)}: text a reader does not see, or sees reordered, reaches the model as it is`,
      "Retype the description as plain text; line breaks and tabs are fine.",
    );
  }
  if (description.length > MAX_DESCRIPTION_LENGTH) {
    report(
      "description-too-long",
      field.valueAt,
      `\`description\` is ${description.length} characters, over ${MAX_DESCRIPTION_LENGTH}`,
      "Keep the description to what the skill does and when to use it; move detail into the body.",
    );
  }
  return description;
}

/**
 * The fields besides `name` and `description`: the known ones validated (their defaults filled in), and every
 * other one, or a known one whose value is invalid, kept under `extra`: nothing is dropped.
 */
function fieldsOf(all: readonly FrontmatterField[], byKey: ReadonlyMap<string, FrontmatterField>, options: ValidateOptions, report: Report): { fields: SkillFields; extra: Record<string, unknown> } {
  const fields: SkillFields = {};
  const extra: Record<string, unknown> = {};
  for (const field of all) {
    if (field.key === "name" || field.key === "description") continue;
    if (!(OPTIONAL_FIELD_NAMES as readonly string[]).includes(field.key)) {
      defineOwn(extra, field.key, field.value);
      if (!options.customFields?.includes(field.key)) reportUnknownField(field, byKey, report);
      continue;
    }
    if (field.value === null) continue; // `field:` with no value means "not set"
    const key = field.key as keyof typeof optionalFields;
    const result = plainFieldValue(key, field.value) ?? optionalFields[key].safeParse(field.value);
    if (result.success && key === "agent" && agentWithoutFork({ context: byKey.get("context")?.value, agent: field.value })) {
      defineOwn(extra, field.key, field.value);
      report(
        "field-invalid",
        field.keyAt,
        "`agent` only applies with `context: fork`; the value is kept under `extra` only",
        `Add \`context: fork\` to run the skill as that agent, or remove \`agent\` (or write the default, \`${FIELD_DEFAULTS.agent}\`).`,
      );
    } else if (result.success) {
      // A record's output leaves out a key `__proto__` (zod will not assign it); the valid input has every key.
      (fields as Record<string, unknown>)[key] = key === "metadata" ? field.value : result.data;
    } else {
      defineOwn(extra, field.key, field.value);
      const issue = result.error.issues[0];
      const inside = issue && issue.path.length > 0 ? [field.key, ...issue.path] : undefined;
      const at = (inside && options.locate?.(inside)) ?? field.valueAt;
      const message = inside
        ? `\`${pathText(inside)}\` ${describeInnerIssue(valueAt(field.value, issue!.path), issue!)}; the value of \`${field.key}\` is kept under \`extra\` only`
        : `\`${field.key}\` ${describeIssue(field.value, issue)}; the value is kept under \`extra\` only`;
      report("field-invalid", at, message, fieldHint(key, field.value));
    }
  }
  for (const [key, value] of Object.entries(FIELD_DEFAULTS)) (fields as Record<string, unknown>)[key] ??= value;
  return { fields, extra };
}

/** `field-lookalike` for a field that is a known one but for its case or spacing, else `field-unknown` (off by default). */
function reportUnknownField(field: FrontmatterField, byKey: ReadonlyMap<string, FrontmatterField>, report: Report): void {
  const known = KNOWN_FIELD_NAMES.find((candidate) => candidate.toLowerCase() === field.key.trim().toLowerCase());
  // A missing `name` or `description` is reported with its lookalike already; any other lookalike is a field
  // its author meant to set and skillbake would otherwise silently ignore.
  if (known && (byKey.has(known) || (known !== "name" && known !== "description"))) {
    report(
      "field-lookalike",
      field.keyAt,
      `\`${field.key}\` is not \`${known}\` (keys are case-sensitive); it is ignored and kept under \`extra\``,
      byKey.has(known) ? `Remove it: \`${known}\` is set too.` : `Rename it to \`${known}\`.`,
    );
  } else {
    report("field-unknown", field.keyAt, `\`${field.key}\` is not a known frontmatter field; it is kept under \`extra\``, known ? `Did you mean \`${known}\`? Keys are case-sensitive.` : undefined);
  }
}

function describeHidden(char: string): string {
  const code = char.codePointAt(0)!;
  const kind = code >= 0xe0000 ? "an invisible tag character" : code <= 0x9f ? "a control character" : "a bidi control character";
  return `${kind} (U+${code.toString(16).toUpperCase().padStart(4, "0")})`;
}

/**
 * The body's first `</skill>`, or `<skill` tag that opens an element (`<skill>`, `<skill name=`, or `name=` after
 * other attributes, as in `<skill location="/etc" name="admin">`), any case, any spacing, with its SKILL.md line
 * and column: inlined into a `<skill>` element, it would end the element early or forge another (`body-closes-tag`).
 */
export function findSkillTag(body: string, bodyLine: number): { text: string; line: number; column: number; endLine: number; endColumn: number } | undefined {
  const match = /<\/\s*skill\s*>|<skill\s*>|<skill\s(?:[^<>]*?\s)?name\s*=/i.exec(body);
  if (!match) return undefined;
  const position = (offset: number) => {
    const before = body.slice(0, offset);
    return { line: bodyLine + (before.match(/\n/g)?.length ?? 0), column: offset - (before.lastIndexOf("\n") + 1) + 1 };
  };
  // The tag may span lines (`<skill\n  name=`): the end is its last character's position.
  const start = position(match.index);
  const end = position(match.index + match[0].length - 1);
  return { text: match[0], ...start, endLine: end.line, endColumn: end.column };
}

/** The body's first paragraph, headings skipped, its lines joined by spaces: "" when there is none. */
function firstParagraph(body: string): string {
  const lines: string[] = [];
  for (const line of body.split("\n")) {
    const text = line.trim();
    const heading = /^#{1,6}(\s|$)/.test(text);
    if (lines.length > 0 && (text === "" || heading)) break;
    if (text !== "" && !heading) lines.push(text);
  }
  return lines.join(" ");
}

/** With the `u` flag a pair is one code point, so this matches only a surrogate without its other half. */
const LONE_SURROGATE = /[\ud800-\udfff]/u;

function hasLoneSurrogate(value: unknown): boolean {
  if (typeof value === "string") return LONE_SURROGATE.test(value);
  if (Array.isArray(value)) return value.some(hasLoneSurrogate);
  if (typeof value === "object" && value !== null) return Object.entries(value).some(([key, item]) => hasLoneSurrogate(key) || hasLoneSurrogate(item));
  return false;
}

function checkName(file: string, name: string, folderName: string, at: Position): Finding[] {
  const findings: Finding[] = [];
  const where = { file, line: at.line, column: at.column };
  // A folder name is often NFD (macOS) where the frontmatter is NFC: the same name.
  if (name.normalize("NFC") !== folderName.normalize("NFC")) {
    findings.push({
      code: "name-mismatch",
      ...where,
      message: `name "${name}" does not match its folder "${folderName}"`,
      // Only a valid name is worth a folder of its own: an invalid one is the thing to change.
      hint: NAME_PATTERN.test(name)
        ? `Rename the folder to "${name}" or set \`name: ${folderName}\`.`
        : NAME_PATTERN.test(folderName)
          ? `Set \`name: ${folderName}\`, the folder's name.`
          : `Rename the folder and set \`name\` to one valid name, such as "${suggestName(name)}".`,
    });
  }
  if (!NAME_PATTERN.test(name)) {
    const invisible = [...name].find((char) => /[\p{Cf}\p{Cc}\p{Zs}]/u.test(char) && char !== " ");
    findings.push({
      code: "name-invalid",
      ...where,
      message: `name "${name}" is not lowercase letters, digits and single hyphens`,
      hint: invisible
        ? `It contains the invisible character U+${invisible.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}; retype the name.`
        : name.includes("/")
          ? `A namespaced name is kept as it is (patterns treat "/" as the separator: "${name.slice(0, name.lastIndexOf("/"))}/*"), but the Agent Skills format does not allow it: use a name like "${suggestName(name)}" where the skill must load elsewhere.`
          : `Use a name like "${suggestName(name)}".`,
    });
  }
  if (name.length > MAX_NAME_LENGTH) {
    findings.push({ code: "name-too-long", ...where, message: `name is ${name.length} characters, over ${MAX_NAME_LENGTH}`, hint: "Shorten the name." });
  }
  return findings;
}

/** A valid skill name close to `name`: what a hint proposes, and the folder `stage` gives a skill with an invalid name. */
export function suggestName(name: string): string {
  const suggestion = name
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, MAX_NAME_LENGTH);
  return suggestion || "my-skill";
}

function typeName(value: unknown): string {
  if (Array.isArray(value)) return "list";
  if (value === null) return "null";
  if (value instanceof Date) return "date";
  return typeof value === "object" ? "mapping" : typeof value;
}

/** `metadata.author`, `tags[2]`. */
function pathText(path: readonly PropertyKey[]): string {
  return path.map((segment, index) => (typeof segment === "number" ? `[${segment}]` : index === 0 ? String(segment) : `.${String(segment)}`)).join("");
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  return path.reduce<unknown>((inner, segment) => (inner !== null && typeof inner === "object" ? (inner as Record<PropertyKey, unknown>)[segment] : undefined), value);
}

/** An entry inside a field's value (a `metadata` value, a `tags` item) that fails: what it is, and what it should be. */
function describeInnerIssue(value: unknown, issue: { code: string; message: string; expected?: unknown }): string {
  if (issue.code === "invalid_type" && typeof issue.expected === "string") return `is a ${typeName(value)}, not a ${issue.expected === "array" ? "list" : issue.expected}`;
  return describeIssue(value, issue);
}

function describeIssue(value: unknown, issue: { code: string; message: string } | undefined): string {
  if (issue?.code === "too_big") return `is too long (${String(value).length} characters; ${issue.message.replace(/^Too big: expected string to have /, "")})`;
  return `has the wrong type (${typeName(value)}): ${issue?.message ?? "invalid"}`;
}

function fieldHint(key: keyof typeof optionalFields, value: unknown): string {
  switch (key) {
    case "disable-model-invocation":
    case "user-invocable":
      return `Write \`${key}: true\` or \`${key}: false\` without quotes.`;
    case "context":
      return "Use `context: inline` or `context: fork`.";
    case "metadata":
      return "Use a mapping of strings, e.g. `metadata:` then `  author: me` on the next line; quote numbers.";
    case "allowed-tools":
    case "tags":
      return `Use a list, e.g. \`${key}: [a, b]\`${key === "allowed-tools" ? ", or a space-separated string" : ""}.`;
    case "compatibility":
      return `Keep \`compatibility\` to ${MAX_COMPATIBILITY_LENGTH} characters.`;
    default:
      return typeof value === "number" || typeof value === "boolean" ? `Quote it: ${key}: "${String(value)}"` : `Write \`${key}\` as text.`;
  }
}

/**
 * Sets an own property even for the key `__proto__`, which plain assignment would turn into the prototype. Other
 * keys are assigned: an object given properties by `defineProperty` is ~4x slower to make and to stringify.
 */
export function defineOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}
