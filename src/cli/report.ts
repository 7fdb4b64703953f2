import { constants } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import { countBySeverity, type Diagnostic } from "../compile/diagnostics.js";
import { escapeInvisible, escapeWorkflowCommands, type Style } from "../compile/terminal.js";
import { MAX_SKILL_FILE_BYTES } from "../compile/parse.js";
import { isSameFile, type FileIdentity } from "../compile/resources.js";

export type OutputFormat = "pretty" | "json" | "github";

/** The lines of the files that diagnostics point into, keyed by `Diagnostic.file`: what code frames quote. */
export type SourceLines = ReadonlyMap<string, readonly string[]>;

/**
 * Diagnostics grouped per file (in their sorted order), each with its position, severity, message and code,
 * then a code frame when the file's lines are known (the line, a caret under the column), then its hint.
 */
export function formatPretty(diagnostics: readonly Diagnostic[], style: Style, sources: SourceLines = new Map()): string {
  const groups = new Map<string, Diagnostic[]>();
  for (const diagnostic of diagnostics) {
    const group = groups.get(diagnostic.file ?? "");
    if (group) group.push(diagnostic);
    else groups.set(diagnostic.file ?? "", [diagnostic]);
  }
  const blocks: string[] = [];
  for (const [file, group] of groups) {
    const positions = group.map((diagnostic) => (diagnostic.line ? `${diagnostic.line}:${diagnostic.column ?? 1}` : ""));
    const width = Math.max(...positions.map((position) => position.length));
    const lines = file ? [style.bold(escapeInvisible(file))] : [];
    group.forEach((diagnostic, index) => {
      const severity = diagnostic.severity === "error" ? style.red("error  ") : style.yellow("warning");
      const position = width > 0 ? `${style.dim(positions[index]!.padEnd(width))}  ` : "";
      lines.push(`  ${position}${severity}  ${escapeInvisible(diagnostic.message)}  ${style.dim(`[${diagnostic.code}]`)}`);
      // Several findings at one spot (name-invalid and name-mismatch, say) share the first one's frame.
      const previous = group[index - 1];
      const sameSpot = previous !== undefined && previous.line === diagnostic.line && previous.column === diagnostic.column;
      const sourceLine = diagnostic.line && !sameSpot ? sources.get(file)?.[diagnostic.line - 1] : undefined;
      if (sourceLine !== undefined) lines.push(...codeFrame(sourceLine, diagnostic.line!, diagnostic.column ?? 1, style));
      if (diagnostic.hint) lines.push(`    ${style.dim("hint:")} ${escapeInvisible(diagnostic.hint)}`);
    });
    blocks.push(lines.join("\n"));
  }
  return blocks.join("\n\n");
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
export async function readSourceLines(diagnostics: readonly Diagnostic[], dir: string, verified: ReadonlyMap<string, FileIdentity>): Promise<SourceLines> {
  const files = new Set(diagnostics.filter((diagnostic) => diagnostic.file && diagnostic.line).map((diagnostic) => diagnostic.file!));
  const sources = new Map<string, string[]>();
  const readVerified = async (path: string): Promise<Buffer | undefined> => {
    const identity = verified.get(path);
    const file = identity && (await open(path, constants.O_RDONLY | constants.O_NONBLOCK).catch(() => undefined));
    if (!file) return undefined;
    try {
      const stats = await file.stat({ bigint: true });
      return stats.isFile() && isSameFile(stats, identity) && stats.size <= MAX_SKILL_FILE_BYTES ? await file.readFile() : undefined;
    } catch {
      return undefined;
    } finally {
      await file.close();
    }
  };
  await Promise.all(
    [...files].map(async (file) => {
      const bytes = await readVerified(join(dir, file));
      if (!bytes || bytes.byteLength > MAX_SKILL_FILE_BYTES) return;
      let text: string;
      try {
        text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
      } catch {
        return;
      }
      sources.set(file, text.split(/\r\n|\r|\n/));
    }),
  );
  return sources;
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
        // Escaped as in the pretty report before GitHub's own escapes (which the runner undoes): a name with such
        // characters loses its inline annotation, but neither the log nor the annotation shows them raw.
        diagnostic.file ? `file=${escapeProperty(escapeWorkflowCommands(escapeInvisible(diagnostic.file)))}` : undefined,
        diagnostic.line ? `line=${diagnostic.line}` : undefined,
        diagnostic.column ? `col=${diagnostic.column}` : undefined,
        `title=${escapeProperty(diagnostic.code)}`,
      ].filter(Boolean);
      // Names in the message too; its one real line break, before the hint, is GitHub's %0A. A `##[` in a name
      // would be read as a command of its own.
      const message = escapeWorkflowCommands(escapeInvisible(diagnostic.message) + (diagnostic.hint ? `\n${escapeInvisible(diagnostic.hint)}` : ""));
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
