/** Diagnostics are data: every stage returns them, only the CLI prints them. */

export type Severity = "error" | "warn";
export type RuleSetting = Severity | "off";

/** What a rule does to the skill it hits, besides reporting. */
type SkipEffect = "skip" | "keep" | "loser" | "dropped" | "none";

export const RULES = {
  "frontmatter-missing": { severity: "error", skip: "skip", when: "no `---` on line 1" },
  "frontmatter-unclosed": { severity: "error", skip: "skip", when: "no closing `---`" },
  "yaml-invalid": { severity: "error", skip: "skip", when: "YAML does not parse" },
  "yaml-recovered": { severity: "warn", skip: "keep", when: "parsed by the `recover` fallback" },
  "frontmatter-not-mapping": { severity: "error", skip: "skip", when: "YAML is a list or a scalar" },
  "description-missing": { severity: "error", skip: "skip", when: "absent or blank" },
  "description-type": { severity: "error", skip: "skip", when: "not a string" },
  "description-too-long": { severity: "warn", skip: "keep", when: "over 1024 characters" },
  "description-invisible": { severity: "warn", skip: "keep", when: "contains control characters, bidi controls or invisible tag characters" },
  "description-fallback": { severity: "warn", skip: "keep", when: "`descriptionFallback` took the body's first paragraph" },
  "name-missing": { severity: "warn", skip: "keep", when: "fell back to the folder name" },
  "name-type": { severity: "error", skip: "skip", when: "not a string" },
  "name-mismatch": { severity: "warn", skip: "keep", when: "name ≠ parent folder name" },
  "name-invalid": { severity: "warn", skip: "keep", when: "not `^[a-z0-9]+(-[a-z0-9]+)*$`" },
  "name-too-long": { severity: "warn", skip: "keep", when: "over 64 characters" },
  "duplicate-name": { severity: "warn", skip: "loser", when: "same name twice in one root" },
  "duplicate-across-sources": { severity: "warn", skip: "keep", when: "same name selected from several sources" },
  "selection-overlap": { severity: "warn", skip: "keep", when: "matched by `available` and `inline`" },
  "pattern-unmatched": { severity: "warn", skip: "keep", when: "a pattern selected nothing" },
  "root-missing": { severity: "warn", skip: "none", when: "a root does not exist or cannot be read" },
  "root-not-folder": { severity: "error", skip: "none", when: "a root is a file, not a folder" },
  "symlink-escape": { severity: "warn", skip: "skip", when: "a link resolves outside its root" },
  "path-unreadable": { severity: "warn", skip: "skip", when: "a folder or SKILL.md inside a root cannot be read" },
  "path-changed": { severity: "error", skip: "skip", when: "a file inside a root was replaced after discovery (by a link out of the root, say); it is not read" },
  "skill-folder-too-large": { severity: "error", skip: "keep", when: "a skill folder lists over 10,000 files and folders (counting each path links lead to)" },
  "field-invalid": { severity: "warn", skip: "keep", when: "a known optional field has the wrong type or size" },
  "field-unknown": { severity: "off", skip: "keep", when: "a field outside the model" },
  "frontmatter-schema": { severity: "error", skip: "skip", when: "a custom field fails the config's `frontmatter` schema (wrong type, missing, or undeclared under a strict schema)" },
  "field-lookalike": { severity: "warn", skip: "keep", when: "a field named as a known one but for case or spaces (`Name:` beside `name:`)" },
  "budget-exceeded": { severity: "warn", skip: "dropped", when: "the catalogue passed the agent's `budget`" },
  "body-closes-tag": { severity: "warn", skip: "keep", when: "an inline body contains `</skill>` or a `<skill>` opening tag" },
  "body-too-long": { severity: "off", skip: "keep", when: "body over 500 lines" },
  "encoding-invalid": { severity: "error", skip: "skip", when: "not UTF-8" },
  "file-too-large": { severity: "error", skip: "skip", when: "over 1 MiB" },
} as const satisfies Record<string, { severity: RuleSetting; skip: SkipEffect; when: string }>;

export type RuleCode = keyof typeof RULES;
export const RULE_CODES = Object.keys(RULES) as RuleCode[];

export interface Diagnostic {
  code: RuleCode;
  severity: Severity;
  message: string;
  /** Relative to the config folder, `/`-separated; absent for diagnostics about the config as a whole. */
  file?: string;
  line?: number;
  column?: number;
  /** Where the span ends (its last character), when a diagnostic knows more than a point. */
  endLine?: number;
  endColumn?: number;
  hint?: string;
}

/** A diagnostic before the config's `rules` have decided its severity. */
export type Finding = Omit<Diagnostic, "severity">;

export type RuleOverrides = Partial<Record<RuleCode, RuleSetting>>;

/**
 * Applies severities (defaults, then `rules`), drops what is "off", removes exact repeats (a root
 * shared by two agents reports once) and orders by file, position and code so output never
 * depends on the order in which I/O finished.
 */
export function resolveFindings(findings: readonly Finding[], overrides: RuleOverrides = {}): Diagnostic[] {
  const seen = new Set<string>();
  const diagnostics: Diagnostic[] = [];
  for (const finding of findings) {
    const setting: RuleSetting = overrides[finding.code] ?? RULES[finding.code].severity;
    if (setting === "off") continue;
    const message = clipText(finding.message);
    const key = JSON.stringify([finding.code, finding.file, finding.line, finding.column, message]);
    if (seen.has(key)) continue;
    seen.add(key);
    diagnostics.push({ ...finding, message, ...(finding.hint === undefined ? {} : { hint: clipText(finding.hint) }), severity: setting });
  }
  return diagnostics.sort(compareDiagnostics);
}

/** Characters of a message or hint kept: enough for any sentence skillbake writes around a value or two. */
const MAX_MESSAGE_CHARACTERS = 600;

/**
 * Messages quote skill text (a name, a key), which may be any size: an 800 KB name made megabytes of
 * diagnostics. A long message keeps its start and end, which say what and why, and loses the middle.
 */
function clipText(text: string): string {
  if (text.length <= MAX_MESSAGE_CHARACTERS) return text;
  // Cut between code points, never inside a surrogate pair.
  const boundary = (at: number) => (/[\udc00-\udfff]/.test(text[at] ?? "") ? at - 1 : at);
  const head = boundary(400);
  const tail = boundary(text.length - 150);
  return `${text.slice(0, head)}… (${tail - head} characters left out) …${text.slice(tail)}`;
}

function compareDiagnostics(a: Diagnostic, b: Diagnostic): number {
  return (
    compareStrings(a.file ?? "", b.file ?? "") ||
    (a.line ?? 0) - (b.line ?? 0) ||
    (a.column ?? 0) - (b.column ?? 0) ||
    compareStrings(a.code, b.code) ||
    compareStrings(a.message, b.message)
  );
}

/** Bytewise (code point) order, independent of locale. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.codePointAt(i)!;
    const y = b.codePointAt(i)!;
    if (x !== y) return x - y;
    if (x > 0xffff) i++;
  }
  return a.length - b.length;
}

export function countBySeverity(diagnostics: readonly Diagnostic[]): { errors: number; warnings: number } {
  let errors = 0;
  for (const d of diagnostics) if (d.severity === "error") errors++;
  return { errors, warnings: diagnostics.length - errors };
}
