import { docsAddress } from "./links.js";

/**
 * Every diagnostic code, as data: its default severity, what it does to the skill it hits, whether `--fix` can
 * mend it, and one line on when it fires. `docs/diagnostics.md` lists them (a test keeps the two equal) and gives
 * each a section with a bad and a good example (`rulePage`), and `skills rules` prints them. A new code is an
 * entry here, a row of that table and a section.
 */

export type Severity = "error" | "warn";
export type RuleSetting = Severity | "off";

/** What a rule does to the skill it hits, besides reporting. */
export type SkipEffect = "skip" | "keep" | "loser" | "dropped" | "unserved" | "none";

/** Each skip effect as the docs table and `skills rules` say it. */
export const SKIP_WORDS: Readonly<Record<SkipEffect, string>> = { skip: "yes", keep: "no", loser: "the loser", dropped: "dropped", unserved: "not served", none: "—" };

/** A diagnostic code's defaults and documentation. */
export interface Rule {
  severity: RuleSetting;
  skip: SkipEffect;
  /** `--fix` rewrites the frontmatter to mend what the rule found, where that cannot change what the skill means. */
  fixable?: true;
  /** When the rule fires, in a line: the docs table's "when" column and `skills rules`' description. */
  description: string;
}

const RULE_DATA = {
  "frontmatter-missing": { severity: "error", skip: "skip", description: "no `---` on line 1" },
  "frontmatter-unclosed": { severity: "error", skip: "skip", description: "no closing `---`" },
  "yaml-invalid": { severity: "error", skip: "skip", fixable: true, description: "YAML does not parse" },
  "yaml-recovered": { severity: "warn", skip: "keep", fixable: true, description: "parsed by the `recover` fallback" },
  "frontmatter-not-mapping": { severity: "error", skip: "skip", description: "YAML is a list or a scalar" },
  "description-missing": { severity: "error", skip: "skip", description: "absent or blank" },
  "description-type": { severity: "error", skip: "skip", description: "not a string" },
  "description-too-long": { severity: "warn", skip: "keep", description: "over 1024 characters" },
  "description-invisible": { severity: "warn", skip: "keep", description: "contains control characters, bidi controls or invisible tag characters" },
  "description-fallback": { severity: "warn", skip: "keep", description: "`descriptionFallback` took the body's first paragraph" },
  "name-missing": { severity: "warn", skip: "keep", fixable: true, description: "fell back to the folder name" },
  "name-type": { severity: "error", skip: "skip", description: "not a string" },
  "name-mismatch": { severity: "warn", skip: "keep", description: "name ≠ parent folder name" },
  "name-invalid": { severity: "warn", skip: "keep", description: "not `^[a-z0-9]+(-[a-z0-9]+)*$`" },
  "name-too-long": { severity: "warn", skip: "keep", description: "over 64 characters" },
  "duplicate-name": { severity: "warn", skip: "loser", description: "same name twice in one root" },
  "duplicate-across-sources": { severity: "warn", skip: "keep", description: "same name selected from several sources" },
  "selection-overlap": { severity: "warn", skip: "keep", description: "matched by `available` and `inline`" },
  "pattern-unmatched": { severity: "warn", skip: "keep", description: "a pattern selected nothing" },
  "root-missing": { severity: "error", skip: "none", description: "a root does not exist or cannot be read (a source marked `optional: true` may be absent)" },
  "root-not-folder": { severity: "error", skip: "none", description: "a root is a file, not a folder" },
  "hidden-skill": { severity: "warn", skip: "skip", description: "a SKILL.md in a dot folder (`.curated/x/SKILL.md`) that no source's `include` names" },
  "nested-skill": { severity: "warn", skip: "skip", description: "a SKILL.md inside another skill's folder, read as that skill's file (a source builds it with `nested: true`)" },
  "agent-empty": { severity: "warn", skip: "none", description: "an agent's sources give it no skill" },
  "symlink-escape": { severity: "warn", skip: "skip", description: "a link resolves outside its root" },
  "path-unreadable": { severity: "warn", skip: "skip", description: "a folder or SKILL.md inside a root cannot be read" },
  "path-changed": { severity: "error", skip: "skip", description: "a file inside a root was replaced after discovery (by a link out of the root, say); it is not read" },
  "skill-folder-too-large": { severity: "error", skip: "keep", description: "a skill folder lists over 10,000 files and folders (counting each path links lead to)" },
  "skill-files-too-large": { severity: "error", skip: "keep", description: "a skill folder's files total over 64 MiB (counting each path links lead to)" },
  "folder-too-deep": { severity: "error", skip: "keep", description: "a folder lies more than 256 folders below its root; nothing in it is read" },
  "gitignore-too-large": { severity: "error", skip: "skip", description: "a .gitignore inside a root is over 1 MiB, holds with those above it over 1,000 patterns, has a pattern with `**` as a name twice before its last, or takes the root's .gitignore files past 10,000,000 tests of the folders above them; everything in its folder is left out" },
  "field-invalid": { severity: "warn", skip: "keep", description: "a known optional field has the wrong type or size" },
  "field-unknown": { severity: "off", skip: "keep", description: "a field outside the model" },
  "frontmatter-schema": { severity: "error", skip: "skip", description: "a custom field fails the config's `frontmatter` schema (wrong type, missing, or undeclared under a strict schema)" },
  "field-lookalike": { severity: "warn", skip: "keep", description: "a field named as a known one but for case or spaces (`Name:` beside `name:`)" },
  "budget-exceeded": { severity: "warn", skip: "dropped", description: "the catalogue passed the agent's `budget`" },
  "body-closes-tag": { severity: "warn", skip: "keep", description: "an inline body contains `</skill>` or a `<skill>` opening tag" },
  "link-broken": { severity: "warn", skip: "keep", description: "a relative link or image in the body names no file of the skill folder" },
  "body-too-long": { severity: "off", skip: "keep", description: "body of 500 lines or 5,000 tokens or more (the Agent Skills specification recommends less)" },
  "description-duplicate": { severity: "warn", skip: "keep", description: "two skills of one agent have the same description" },
  "prompt-too-long": { severity: "warn", skip: "none", description: "an agent's prompt is over 100,000 characters" },
  "agentskills-invalid": {
    severity: "off",
    skip: "keep",
    description: "the skill breaks the Agent Skills specification as its reference validator (skills-ref) checks it; an error under `preset: \"agentskills\"`",
  },
  "encoding-invalid": { severity: "error", skip: "skip", description: "not UTF-8" },
  "file-too-large": { severity: "error", skip: "skip", description: "over 1 MiB" },
  "suppression-stale": { severity: "warn", skip: "none", description: "an entry of skills-suppressions.json allows more findings than its file and code have now" },
  "serve-invalid": {
    severity: "error",
    skip: "unserved",
    description:
      "a skill an agent serves (`files: \"embed\"`, `publish`) would be refused by MCP hosts or discovery clients: a name that is not one lowercase segment (a namespaced one), no `name` or `description` written, YAML their readers read otherwise, or a second skill of the name",
  },
  "serve-too-large": { severity: "error", skip: "keep", description: "a skill an agent serves holds over 512 files or 16 MiB, which MCP hosts may decline" },
} as const satisfies Record<string, Rule>;

export type RuleCode = keyof typeof RULE_DATA;
export const RULES: Readonly<Record<RuleCode, Rule>> = RULE_DATA;
export const RULE_CODES = Object.keys(RULES) as RuleCode[];


/** The docs page of a code, relative to docs/: its section of the diagnostics page, with a bad and a good example. */
export function rulePage(code: RuleCode): string {
  return `diagnostics.md#${code}`;
}

/** Where a reader finds a code's docs (see `docsAddress`); one address per code. */
export function ruleUrl(code: RuleCode): string {
  return docsAddress(rulePage(code));
}

/** `preset`: severities for a purpose, under the config's own `rules`. */
export const PRESETS = {
  /** Exactly the Agent Skills specification's rules, as its reference validator checks them. */
  agentskills: { "agentskills-invalid": "error" },
} as const satisfies Record<string, Partial<Record<RuleCode, RuleSetting>>>;
