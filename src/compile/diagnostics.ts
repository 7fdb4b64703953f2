/** Diagnostics are data: every stage returns them, only the CLI prints them. */
import { RULES, type RuleCode, type RuleSetting, type Severity } from "./rules.js";

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
  /**
   * How many findings of its code this one stands for, itself included, when it counts others a rule does not name
   * one by one (`link-broken` past a file's first 100): what suppressions count.
   */
  count?: number;
}

/** A diagnostic before the config's `rules` have decided its severity. */
export type Finding = Omit<Diagnostic, "severity">;

export type RuleOverrides = Partial<Record<RuleCode, RuleSetting>>;

/**
 * Applies severities (`severityOf`: the defaults, or the config's `rules` and `overrides`), drops what is "off", removes exact repeats (a root
 * shared by two agents reports once) and orders by file, position and code so output never
 * depends on the order in which I/O finished.
 */
export function resolveFindings(findings: readonly Finding[], severityOf: (finding: Finding) => RuleSetting = (finding) => RULES[finding.code].severity): Diagnostic[] {
  const seen = new Set<string>();
  const diagnostics: Diagnostic[] = [];
  for (const finding of findings) {
    const setting = severityOf(finding);
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
export const MAX_MESSAGE_CHARACTERS = 600;

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

/** The lines a failure's message keeps (each a problem); the rest are counted. */
const MAX_MESSAGE_LINES = 20;

/**
 * A failure's message (a config, suppressions file or manifest that cannot be read), clipped line by line as a
 * diagnostic's message is, with at most `MAX_MESSAGE_LINES` lines: it may quote the keys of a file a pull request
 * wrote, of any size and number.
 */
export function clipLines(text: string): string {
  const lines = text.split("\n");
  const shown = lines.slice(0, MAX_MESSAGE_LINES).map(clipText);
  if (lines.length > MAX_MESSAGE_LINES) shown.push(`… and ${lines.length - MAX_MESSAGE_LINES} more`);
  return shown.join("\n");
}

/** The order diagnostics are reported in: by file, position, code and message. */
export function compareDiagnostics(a: Diagnostic, b: Diagnostic): number {
  return (
    compareStrings(a.file ?? "", b.file ?? "") ||
    (a.line ?? 0) - (b.line ?? 0) ||
    (a.column ?? 0) - (b.column ?? 0) ||
    compareStrings(a.code, b.code) ||
    compareStrings(a.message, b.message)
  );
}

/** A UTF-16 code unit from the first surrogate up. */
const SURROGATE_OR_ABOVE = /[\ud800-\uffff]/;

/** Bytewise (code point) order, independent of locale. */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  // The engine's `<` compares UTF-16 code units: code point order, unless a surrogate meets a character from U+E000
  // up at the first difference, which needs both strings to hold such a unit. Sorts 10,000 paths 3x as fast.
  if (!SURROGATE_OR_ABOVE.test(a) || !SURROGATE_OR_ABOVE.test(b)) return a < b ? -1 : 1;
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

/**
 * A whole number with commas between its thousands (`1,234,567`), as messages write counts: what
 * `toLocaleString("en-US")` gives, without the locale data its first call loads (~13 ms of a build that reported
 * a long prompt).
 */
export function withThousands(count: number): string {
  return String(count).replace(/\B(?=(\d{3})+$)/g, ",");
}

/** Agents a finding several agents share names before it counts the rest. */
const AGENTS_NAMED = 3;

/** `agent "a"`, `agents "a" and "b"`, `agents "a", "b", "c" and 4 more`: the agents a shared finding is about. */
export function agentsNamed(ids: readonly string[]): string {
  const quoted = ids.slice(0, AGENTS_NAMED).map((id) => `"${id}"`);
  if (ids.length === 1) return `agent ${quoted[0]}`;
  const rest = ids.length - AGENTS_NAMED;
  return rest > 0 ? `agents ${quoted.join(", ")} and ${withThousands(rest)} more` : `agents ${quoted.slice(0, -1).join(", ")} and ${quoted.at(-1)}`;
}
