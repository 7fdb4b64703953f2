import type { Diagnostic } from "./diagnostics.js";
import { countBySeverity } from "./diagnostics.js";

export type OutputFormat = "pretty" | "json" | "github";

export interface Style {
  red(text: string): string;
  yellow(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

/** Colour only on a TTY; NO_COLOR turns it off, FORCE_COLOR (other than 0) on. */
export function styleFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): Style {
  const force = env.FORCE_COLOR;
  const enabled = force !== undefined && force !== "" ? force !== "0" && force !== "false" : !env.NO_COLOR && stream.isTTY === true;
  const wrap = (open: number, close: number) => (text: string) => (enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text);
  return { red: wrap(31, 39), yellow: wrap(33, 39), dim: wrap(2, 22), bold: wrap(1, 22) };
}

function where(diagnostic: Diagnostic): string {
  if (!diagnostic.file) return "";
  return diagnostic.line ? `${diagnostic.file}:${diagnostic.line}:${diagnostic.column ?? 1}` : diagnostic.file;
}

/** One line per diagnostic, `file:line:col` first so terminals and editors can jump to it. */
export function formatPretty(diagnostics: readonly Diagnostic[], style: Style): string {
  const lines: string[] = [];
  for (const diagnostic of diagnostics) {
    const severity = diagnostic.severity === "error" ? style.red("error") : style.yellow("warning");
    const location = where(diagnostic);
    lines.push(`${location ? `${style.bold(location)}: ` : ""}${severity} ${diagnostic.message} ${style.dim(`[${diagnostic.code}]`)}`);
    if (diagnostic.hint) lines.push(`  ${style.dim("hint:")} ${diagnostic.hint}`);
  }
  return lines.join("\n");
}

export function formatSummary(diagnostics: readonly Diagnostic[], style: Style): string {
  const { errors, warnings } = countBySeverity(diagnostics);
  const text = `${errors} ${errors === 1 ? "error" : "errors"}, ${warnings} ${warnings === 1 ? "warning" : "warnings"}`;
  return errors > 0 ? style.red(text) : warnings > 0 ? style.yellow(text) : text;
}

/** GitHub Actions workflow commands: annotations on the pull request's files. */
export function formatGithub(diagnostics: readonly Diagnostic[]): string {
  return diagnostics
    .map((diagnostic) => {
      const properties = [
        diagnostic.file ? `file=${escapeProperty(diagnostic.file)}` : undefined,
        diagnostic.line ? `line=${diagnostic.line}` : undefined,
        diagnostic.column ? `col=${diagnostic.column}` : undefined,
        `title=${escapeProperty(diagnostic.code)}`,
      ].filter(Boolean);
      const message = diagnostic.hint ? `${diagnostic.message}\n${diagnostic.hint}` : diagnostic.message;
      return `::${diagnostic.severity === "error" ? "error" : "warning"} ${properties.join(",")}::${escapeData(message)}`;
    })
    .join("\n");
}

function escapeData(text: string): string {
  return text.replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

function escapeProperty(text: string): string {
  return escapeData(text).replace(/:/g, "%3A").replace(/,/g, "%2C");
}
