import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { compareStrings, type Diagnostic } from "../compile/diagnostics.js";
import { RULE_CODES, RULES, rulePage } from "../compile/rules.js";
import { PACKAGE_VERSION } from "../compile/version.js";
import { docsLink, REPOSITORY_URL } from "../compile/links.js";
import { escapeInvisible, escapeMarkdown, escapeWorkflowCommands, type Style } from "../compile/terminal.js";
import { MAX_SKILL_FILE_BYTES } from "../compile/parse.js";
import { type FileIdentity } from "../compile/resources.js";
import { readSkillBytes } from "../compile/discover.js";

export type OutputFormat = "pretty" | "json" | "github" | "sarif";

/** The lines of the files that diagnostics point into, keyed by `Diagnostic.file`: what code frames quote. */
export type SourceLines = ReadonlyMap<string, readonly string[]>;

/**
 * Diagnostics grouped per file (in their sorted order), each with its position, severity, message and code,
 * then a code frame when the file's lines are known (the line, a caret under the column), then its hint.
 */
export function formatPretty(diagnostics: readonly Diagnostic[], style: Style, sources: SourceLines = new Map()): string {
  const blocks: string[] = [];
  for (const [file, group] of groupedBy(diagnostics, (diagnostic) => diagnostic.file ?? "")) {
    const { shown, left } = firstOfEachCode(group, (diagnostic) => diagnostic.code);
    const positions = shown.map((diagnostic) => (diagnostic.line ? `${diagnostic.line}:${diagnostic.column ?? 1}` : ""));
    // A reduce, not Math.max(...): a file may carry more findings than a call takes arguments.
    const width = positions.reduce((widest, position) => Math.max(widest, position.length), 0);
    const lines = file ? [style.bold(escapeInvisible(file))] : [];
    shown.forEach((diagnostic, index) => {
      const severity = diagnostic.severity === "error" ? style.red("error  ") : style.yellow("warning");
      const position = width > 0 ? `${style.dim(positions[index]!.padEnd(width))}  ` : "";
      lines.push(`  ${position}${severity}  ${escapeInvisible(diagnostic.message)}  ${style.dim(`[${diagnostic.code}]`)}`);
      // Several findings at one spot (name-invalid and name-mismatch, say) share the first one's frame.
      const previous = shown[index - 1];
      const sameSpot = previous !== undefined && previous.line === diagnostic.line && previous.column === diagnostic.column;
      const sourceLine = diagnostic.line && !sameSpot ? sources.get(file)?.[diagnostic.line - 1] : undefined;
      if (sourceLine !== undefined) lines.push(...codeFrame(sourceLine, diagnostic.line!, diagnostic.column ?? 1, style));
      if (diagnostic.hint) lines.push(`    ${style.dim("hint:")} ${escapeInvisible(diagnostic.hint)}`);
    });
    for (const { first, count } of left) lines.push(`  ${style.dim(`… ${moreOf(count, first.code, first.severity === "error" ? "error" : "warning")} in this file (\`--format json\` lists every one)`)}`);
    blocks.push(lines.join("\n"));
  }
  return blocks.join("\n\n");
}

/**
 * Findings of one code a report shows for one file; one line counts the rest. A megabyte of SKILL.md can hold a
 * finding every few bytes (250,000 broken links made 98 MB of report), and none past the first hundred tells more.
 */
export const SHOWN_PER_FILE_AND_CODE = 100;

/** The first `SHOWN_PER_FILE_AND_CODE` of each code (by `codeOf`) of one file's findings, and how many of each are left. */
function firstOfEachCode<T>(findings: readonly T[], codeOf: (finding: T) => string): { shown: T[]; left: { first: T; count: number }[] } {
  const seen = new Map<string, { first: T; count: number }>();
  const shown: T[] = [];
  for (const finding of findings) {
    const code = codeOf(finding);
    const tally = seen.get(code) ?? { first: finding, count: 0 };
    seen.set(code, tally);
    if (++tally.count <= SHOWN_PER_FILE_AND_CODE) shown.push(finding);
  }
  const left = [...seen.values()].flatMap(({ first, count }) => (count > SHOWN_PER_FILE_AND_CODE ? [{ first, count: count - SHOWN_PER_FILE_AND_CODE }] : []));
  return { shown, left };
}

/** `items` by `keyOf`, each group in the order its first item comes. */
function groupedBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(keyOf(item));
    if (group) group.push(item);
    else groups.set(keyOf(item), [item]);
  }
  return groups;
}

/** "249,900 more link-broken warnings". */
function moreOf(count: number, code: string, severity: "error" | "warning"): string {
  return `${count.toLocaleString("en-US")} more ${code} ${severity}${count === 1 ? "" : "s"}`;
}

/** Characters of a source line a frame shows; a longer line is cut with "…", keeping the column in view. */
const FRAME_WIDTH = 120;

function codeFrame(sourceLine: string, line: number, column: number, style: Style): string[] {
  const at = Math.min(Math.max(column - 1, 0), sourceLine.length);
  let start = 0;
  let end = sourceLine.length;
  if (sourceLine.length > FRAME_WIDTH) {
    // The line's start (usually the key) stays in view unless the column is near or past the cut.
    if (at > FRAME_WIDTH - 20) start = Math.min(at - FRAME_WIDTH / 2, sourceLine.length - FRAME_WIDTH);
    end = start + FRAME_WIDTH;
  }
  const prefix = start > 0 ? "…" : "";
  // Cut first, then escape, so an escape is never cut in half; the caret counts the escaped text before it.
  const escapedSlice = (from: number, to: number) => escapeInvisible(sourceLine.slice(from, to), { keepTabs: true });
  const shown = `${prefix}${escapedSlice(start, end)}${end < sourceLine.length ? "…" : ""}`;
  // Tabs before the column stay tabs so the caret lines up however the terminal expands them.
  const pad = `${prefix}${escapedSlice(start, at)}`.replace(/[^\t]/g, " ");
  const gutter = String(line);
  return [`    ${style.dim(`${gutter} |`)} ${shown}`, `    ${style.dim(`${" ".repeat(gutter.length)} |`)} ${pad}${style.red("^")}`];
}

/**
 * Reads the files that diagnostics point at a line of (`file` is relative to `dir`, the config folder) the way
 * the parser read them: BOM stripped, CRLF and CR as line breaks. Only a file that is still the one discovery
 * verified inside its root (`verified`, by absolute path) is read: one swapped since for a link out of the root
 * gets no code frame, nor does one that is unreadable, over the size limit or not UTF-8.
 */
export function readSourceLines(diagnostics: readonly Diagnostic[], dir: string, verified: ReadonlyMap<string, FileIdentity>): SourceLines {
  const files = new Set(diagnostics.filter((diagnostic) => diagnostic.file && diagnostic.line).map((diagnostic) => diagnostic.file!));
  const sources = new Map<string, string[]>();
  // One after another, synchronously, as discovery reads: a promise round trip through the thread pool for each
  // open, stat, read and close cost more than the reads (7 ms of CPU against 2 for the 73 files that a report on
  // the real catalogues of the bench shows lines of).
  for (const file of files) {
    const path = join(dir, file);
    const identity = verified.get(path);
    const read = identity && readSkillBytes(path, identity);
    if (!read || !("bytes" in read) || read.bytes.byteLength > MAX_SKILL_FILE_BYTES) continue;
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(read.bytes);
    } catch {
      continue;
    }
    sources.set(file, text.split(/\r\n|\r|\n/));
  }
  return sources;
}

/** "1 error, 2 warnings", and how many findings suppressions covered, if any. */
export function formatSummary({ errors, warnings, suppressed = 0 }: { errors: number; warnings: number; suppressed?: number }, style: Style): string {
  const text = `${errors} ${errors === 1 ? "error" : "errors"}, ${warnings} ${warnings === 1 ? "warning" : "warnings"}`;
  const shown = errors > 0 ? style.red(text) : warnings > 0 ? style.yellow(text) : text;
  return suppressed > 0 ? `${shown} (${suppressed} suppressed)` : shown;
}

/** Findings past which the pretty report ends with a count per code: what a large catalogue's first run needs. */
export const COUNTS_PER_CODE_AFTER = 20;

/** A line per code, the most frequent first: how many errors and warnings it gave, the numbers aligned. */
export function formatCodeCounts(diagnostics: readonly Diagnostic[], style: Style): string {
  const counts = new Map<string, { errors: number; warnings: number }>();
  for (const { code, severity } of diagnostics) {
    const count = counts.get(code) ?? { errors: 0, warnings: 0 };
    count[severity === "error" ? "errors" : "warnings"]++;
    counts.set(code, count);
  }
  const rows = [...counts].sort(([a, x], [b, y]) => y.errors + y.warnings - (x.errors + x.warnings) || compareStrings(a, b));
  const codeWidth = Math.max(...rows.map(([code]) => code.length));
  const numberWidth = Math.max(...rows.map(([, { errors, warnings }]) => String(Math.max(errors, warnings)).length));
  const lines = rows.map(([code, { errors, warnings }]) => {
    const part = (count: number, noun: string, colour: (text: string) => string) => (count > 0 ? colour(`${String(count).padStart(numberWidth)} ${noun}${count === 1 ? "" : "s"}`) : "");
    return `  ${code.padEnd(codeWidth)}  ${[part(errors, "error", style.red), part(warnings, "warning", style.yellow)].filter(Boolean).join(", ")}`;
  });
  return [style.bold("Findings per code:"), ...lines].join("\n");
}

/** Errors and warnings among annotations: what the job summary's heading counts, so that it agrees with its rows. */
export function countAnnotations(annotations: readonly Annotation[]): { errors: number; warnings: number } {
  const errors = annotations.filter((annotation) => annotation.severity === "error").length;
  return { errors, warnings: annotations.length - errors };
}

/**
 * A finding as CI shows it: a diagnostic, a config error or a stale bundle file. `file` is relative to the working
 * folder (the repository root in CI), `/`-separated, so annotations land on the pull request's files wherever the
 * config lives. `endColumn` is the span's last column.
 */
export interface Annotation {
  severity: "error" | "warning";
  /** A diagnostic code, or `config-error` / `stale-bundle`. */
  rule: string;
  message: string;
  hint?: string;
  file?: string;
  line?: number;
  column?: number;
  endLine?: number;
  endColumn?: number;
}

/** A path of the config's run as CI shows it: relative to the working folder, `/`-separated. */
export function ciPath(path: string, cwd: string): string {
  return relative(cwd, resolve(cwd, path)).split(sep).join("/");
}

/** Diagnostics as annotations; their files are relative to `configDir`. */
export function diagnosticAnnotations(diagnostics: readonly Diagnostic[], configDir: string, cwd: string): Annotation[] {
  return diagnostics.map((diagnostic) => ({
    severity: diagnostic.severity === "error" ? "error" : "warning",
    rule: diagnostic.code,
    message: diagnostic.message,
    ...(diagnostic.hint ? { hint: diagnostic.hint } : {}),
    ...(diagnostic.file ? { file: ciPath(join(configDir, diagnostic.file), cwd) } : {}),
    ...pick(diagnostic, ["line", "column", "endLine", "endColumn"]),
  }));
}

function pick<T extends object, K extends keyof T>(value: T, keys: readonly K[]): Partial<Pick<T, K>> {
  return Object.fromEntries(keys.filter((key) => value[key] !== undefined).map((key) => [key, value[key]])) as Partial<Pick<T, K>>;
}

/** A config error as an annotation: `where` is the config file, with `:line:column` when the error has a position. */
export function configErrorAnnotation(where: string, detail: string, cwd: string): Annotation {
  const at = /^(.*):(\d+):(\d+)$/.exec(where);
  return { severity: "error", rule: "config-error", message: detail, file: ciPath(at ? at[1]! : where, cwd), ...(at ? { line: Number(at[2]), column: Number(at[3]) } : {}) };
}

/** Annotations of one kind (error, warning) GitHub shows for a step; the rest are only in its log. */
const ANNOTATIONS_SHOWN_PER_KIND = 10;

/**
 * GitHub Actions workflow commands: annotations on the pull request's files. Past what GitHub shows of a kind, a
 * last notice says how many there are, so that a pull request's page does not look like it holds all of them.
 */
export function formatGithub(annotations: readonly Annotation[]): string {
  const commands: string[] = [];
  let cut = false;
  for (const [file, group] of groupedBy(annotations, (annotation) => annotation.file ?? "")) {
    const { shown, left } = firstOfEachCode(group, (annotation) => annotation.rule);
    for (const annotation of shown) commands.push(workflowCommand(annotation));
    cut ||= left.length > 0;
    // A plain line of the log, not an annotation: the count, where, and where to see them all.
    for (const { first, count } of left) commands.push(escapeWorkflowCommands(escapeInvisible(`skillbake: ${moreOf(count, first.rule, first.severity)} in ${file || "the run"} ${count === 1 ? "is" : "are"} not shown; \`--format json\` lists every one.`)));
  }
  const { errors, warnings } = countAnnotations(annotations);
  if (errors > ANNOTATIONS_SHOWN_PER_KIND || warnings > ANNOTATIONS_SHOWN_PER_KIND) {
    const counted = [counting(errors, "error"), counting(warnings, "warning")].filter(Boolean).join(" and ");
    const log = cut ? `this step's log lists them, up to ${SHOWN_PER_FILE_AND_CODE} of a code in a file` : "this step's log lists every one";
    commands.push(`::notice title=skillbake::${counted}: GitHub shows the first ${ANNOTATIONS_SHOWN_PER_KIND} of each kind on the pull request; ${log}.`);
  }
  return commands.join("\n");
}

/** "3 warnings", "1 error"; nothing for none. */
function counting(count: number, noun: string): string {
  return count === 0 ? "" : `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function workflowCommand(annotation: Annotation): string {
  const properties = [
    // Escaped as in the pretty report before GitHub's own escapes (which the runner undoes): a name with such
    // characters loses its inline annotation, but neither the log nor the annotation shows them raw.
    annotation.file ? `file=${escapeProperty(escapeWorkflowCommands(escapeInvisible(annotation.file)))}` : undefined,
    annotation.line ? `line=${annotation.line}` : undefined,
    annotation.endLine ? `endLine=${annotation.endLine}` : undefined,
    annotation.column ? `col=${annotation.column}` : undefined,
    annotation.endColumn ? `endColumn=${annotation.endColumn}` : undefined,
    `title=${escapeProperty(annotation.rule)}`,
  ].filter(Boolean);
  // Names in the message too; its one real line break, before the hint, is GitHub's %0A. A `##[` in a name
  // would be read as a command of its own.
  const message = escapeWorkflowCommands(shownMessage(annotation));
  return `::${annotation.severity} ${properties.join(",")}::${escapeData(message)}`;
}

/** The message, then the hint on a line of its own, each with control and bidi characters escaped. */
function shownMessage(annotation: Annotation): string {
  return escapeInvisible(annotation.message) + (annotation.hint ? `\n${escapeInvisible(annotation.hint)}` : "");
}

function escapeData(text: string): string {
  return text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

function escapeProperty(text: string): string {
  return escapeData(text).replace(/:/g, "%3A").replace(/,/g, "%2C");
}

/** Rows of the job summary's table; the job log has the rest. */
const SUMMARY_ROWS = 50;

/**
 * The Markdown that `$GITHUB_STEP_SUMMARY` gets: a heading, then a table of the annotations. Every cell's text is
 * escaped, so a skill's name or message cannot add markup, links, HTML, mentions or issue references to the page.
 */
export function formatStepSummary(heading: string, annotations: readonly Annotation[]): string {
  const lines = [`### ${escapeMarkdown(heading)}`];
  if (annotations.length > 0) {
    lines.push("", "| severity | where | code | message |", "| --- | --- | --- | --- |");
    for (const annotation of annotations.slice(0, SUMMARY_ROWS)) {
      const where = [annotation.file, annotation.line, annotation.line ? annotation.column : undefined].filter((part) => part !== undefined && part !== "").join(":");
      lines.push(`| ${annotation.severity} | ${escapeMarkdown(where)} | ${escapeMarkdown(annotation.rule)} | ${escapeMarkdown(annotation.message)} |`);
    }
    if (annotations.length > SUMMARY_ROWS) lines.push("", `… and ${annotations.length - SUMMARY_ROWS} more in the job log.`);
  }
  return lines.join("\n");
}

/** The rules a SARIF log declares: every diagnostic code, then the CLI's own two, each with its docs page. */
const SARIF_RULES = [
  ...RULE_CODES.map((code) => ({ id: code, text: RULES[code].description, page: rulePage(code), level: RULES[code].severity })),
  { id: "config-error", text: "the config cannot be loaded or is invalid", page: "configuration.md", level: "error" },
  { id: "stale-bundle", text: "`build --check`: a bundle file differs from a fresh build", page: "review.md", level: "error" },
] as const;

/** `{ [key]: value }`, or nothing when there is no value: SARIF's URIs are left out rather than dead. */
function optional<Key extends string>(key: Key, value: string | undefined): { [K in Key]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [K in Key]?: string };
}

/** A SARIF 2.1.0 log (GitHub code scanning and other viewers): one run, every rule, a result per annotation. */
export function formatSarif(annotations: readonly Annotation[]): string {
  const ruleIndex = new Map<string, number>(SARIF_RULES.map((rule, index) => [rule.id, index]));
  const log = {
    $schema: "https://json.schemastore.org/sarif-2.1.0.json",
    version: "2.1.0",
    runs: [
      {
        tool: {
          driver: {
            name: "skillbake",
            version: PACKAGE_VERSION,
            ...optional("informationUri", REPOSITORY_URL),
            rules: SARIF_RULES.map(({ id, text, page, level }) => ({
              id,
              shortDescription: { text },
              ...optional("helpUri", docsLink(page)),
              defaultConfiguration: { level: level === "warn" ? "warning" : level === "off" ? "none" : "error" },
            })),
          },
        },
        results: annotations.map((annotation) => ({
          ruleId: annotation.rule,
          ruleIndex: ruleIndex.get(annotation.rule),
          level: annotation.severity,
          // `##[` escaped as in the log: a viewer may print the text where a runner reads it.
          message: { text: escapeWorkflowCommands(shownMessage(annotation)) },
          ...sarifLocations(annotation),
        })),
      },
    ],
  };
  return JSON.stringify(log, null, 2);
}

/**
 * What SARIF locations are relative to: the working folder, the repository's root in CI, which is what GitHub code
 * scanning takes `%SRCROOT%` to be. Left undefined in the log (`originalUriBaseIds`), so it holds no absolute path.
 */
const SARIF_BASE = "%SRCROOT%";

/**
 * The location of an annotation's file under `SARIF_BASE`: its path percent-encoded a segment at a time, so that a
 * file or folder named `javascript:alert(1)` or `https:` is no scheme and `#` or `?` in a name no fragment or query
 * of the URI. A file outside the working folder gets no location: it is not in the repository a viewer shows.
 */
function sarifLocations(annotation: Annotation): { locations?: object[] } {
  const segments = annotation.file?.split("/") ?? [];
  if (segments.length === 0 || isAbsolute(annotation.file!) || segments.some((segment) => segment === "" || segment === "." || segment === "..")) return {};
  const uri = segments.map(encodeURIComponent).join("/");
  return { locations: [{ physicalLocation: { artifactLocation: { uri, uriBaseId: SARIF_BASE }, ...sarifRegion(annotation) } }] };
}

/** SARIF's region: 1-based, `endColumn` just past the span (ours is its last column). */
function sarifRegion(annotation: Annotation): { region?: Record<string, number> } {
  if (!annotation.line) return {};
  return {
    region: {
      startLine: annotation.line,
      ...(annotation.column ? { startColumn: annotation.column } : {}),
      ...(annotation.endLine ? { endLine: annotation.endLine } : {}),
      ...(annotation.endColumn ? { endColumn: annotation.endColumn + 1 } : {}),
    },
  };
}
