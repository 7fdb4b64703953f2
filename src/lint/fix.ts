import { isDeepStrictEqual } from "node:util";
import { stringify } from "yaml";
import type { RuleCode } from "../compile/rules.js";
import { isFence, parseSkillFile, type FrontmatterField } from "../compile/parse.js";
import { doubleQuoted, unquotedValue } from "../compile/quote.js";

/** A fix `fixSkillFile` made, where it made it (SKILL.md line and column) and what it did. */
export interface AppliedFix {
  code: RuleCode;
  /** The frontmatter field the fix set. */
  field: string;
  line: number;
  column: number;
  /** "quoted the value of `description` (it contains ": ")". */
  message: string;
}

/** Fields whose value is text, or may be: quoting a misread value keeps the text the author wrote. */
const TEXT_FIELDS: ReadonlySet<string> = new Set(["name", "description", "license", "compatibility", "argument-hint", "agent", "model", "version", "allowed-tools"]);

/** One line of the file with the line break that ends it ("" for the last), so CRLF and CR files keep theirs. */
interface Line {
  text: string;
  end: string;
}

interface Candidate {
  code: RuleCode;
  /** Index of the line the edit replaces, or before which it inserts one. */
  index: number;
  insert: boolean;
  text: string;
  column: number;
  message: string;
  /** The field the edit sets, and the value it must read as afterwards. */
  key: string;
  value: string;
}

const UTF8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The fixes to a SKILL.md that cannot change what it means, applied: a text value YAML misreads (an unquoted `: `,
 * a leading `[`) is quoted, and a missing `name` is set to the folder's name, which the skill already goes by.
 * Each fix replaces or inserts one frontmatter line; everything else (comments, key order, the body, the BOM, each
 * line's CRLF or LF) stays byte for byte. A fix is kept only when the file, parsed again, gives every field the
 * value it had (as `yaml: "recover"` reads a file YAML fails on) and the fixed field the value intended.
 */
export function fixSkillFile(bytes: Uint8Array, folderName: string, { recover = false } = {}): { bytes: Uint8Array; fixes: AppliedFix[] } {
  const unchanged = { bytes, fixes: [] };
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return unchanged;
  }
  const bom = text.startsWith("\ufeff") ? "\ufeff" : "";
  const lines = splitLines(text.slice(bom.length));
  const close = lines.findIndex((line, index) => index > 0 && isFence(line.text));
  if (!isFence(lines[0]?.text ?? "") || close < 0) return unchanged;
  const before = parseSkillFile("SKILL.md", bytes, true);
  if (!before.fields) return unchanged;

  const fixes: AppliedFix[] = [];
  let current = { lines, close, bytes, fields: before.fields };
  const yamlFails = parseSkillFile("SKILL.md", bytes, false).fields === undefined;
  for (const candidate of candidates(lines, close, before.fields, folderName, yamlFails ? (recover ? "yaml-recovered" : "yaml-invalid") : undefined)) {
    // Earlier fixes that inserted a line moved the ones below.
    const shift = current.lines.length - lines.length;
    const edited = applyCandidate(current.lines, { ...candidate, index: candidate.index + shift });
    const editedBytes = new TextEncoder().encode(bom + edited.map((line) => line.text + line.end).join(""));
    const fields = parseSkillFile("SKILL.md", editedBytes, true).fields;
    if (!fields || !keepsMeaning(current.fields, fields, candidate)) continue;
    current = { lines: edited, close: current.close + (candidate.insert ? 1 : 0), bytes: editedBytes, fields };
    fixes.push({ code: candidate.code, field: candidate.key, line: candidate.index + shift + 1, column: candidate.column, message: candidate.message });
  }
  return fixes.length > 0 ? { bytes: current.bytes, fixes } : unchanged;
}

/** The fixes to try, in line order; `yamlCode`: the code the file's YAML failure is reported under, if it fails. */
function candidates(lines: readonly Line[], close: number, fields: readonly FrontmatterField[], folderName: string, yamlCode: RuleCode | undefined): Candidate[] {
  const found: Candidate[] = [];
  if (yamlCode) {
    for (let index = 1; index < close; index++) {
      const unquoted = unquotedValue(lines[index]!.text);
      if (!unquoted || !TEXT_FIELDS.has(unquoted.key)) continue;
      // A value on one line only: the next is another key, a blank line or the closing fence.
      const next = lines[index + 1]!.text;
      if (index + 1 < close && /^[ \t]+\S/.test(next)) continue;
      const { key, value, column, problem } = unquoted;
      // `allowed-tools: [Read, Edit` is a list left open, not text; and a value YAML reads (a list, an alias) is not misread.
      if (("indicator" in problem && key === "allowed-tools") || fields.find((field) => field.key === key)?.value !== value) continue;
      const why = "colon" in problem ? (problem.colon - column === value.length - 1 ? 'it ends in ":"' : 'it contains ": "') : `it starts with "${problem.indicator}"`;
      const text = `${lines[index]!.text.slice(0, column - 1)}${doubleQuoted(value)}`;
      found.push({ code: yamlCode, index, insert: false, text, column, message: `quoted the value of \`${key}\` (${why})`, key, value });
    }
  }
  const name = fields.find((field) => field.key === "name");
  const lookalike = fields.some((field) => field.key !== "name" && field.key.trim().toLowerCase() === "name");
  const scalar = stringify(folderName, { lineWidth: 0 }).replace(/\n$/, "");
  if (!lookalike && !scalar.includes("\n") && (name === undefined || name.value === null || name.value === "")) {
    const message = (verb: string) => `${verb} \`name: ${scalar}\`, the folder's name, which the skill already goes by`;
    if (!name) found.push({ code: "name-missing", index: 1, insert: true, text: `name: ${scalar}`, column: 1, message: message("added"), key: "name", value: folderName });
    else {
      const index = name.keyAt.line - 1;
      const comment = emptyNameComment(lines[index]!.text);
      if (comment !== undefined) found.push({ code: "name-missing", index, insert: false, text: `name: ${scalar}${comment}`, column: 1, message: message("set"), key: "name", value: folderName });
    }
  }
  return found.sort((a, b) => a.index - b.index);
}

/**
 * `name:` with no value or an empty one (`""`, `''`, `~`, `null`), perhaps with a comment. Each run of blanks is taken
 * whole (a lookahead's capture, matched again, cannot be backtracked into), so a long one costs one pass.
 */
const EMPTY_NAME = /^name:(?=([ \t]*))\1(?:(?:""|''|~|null|Null|NULL)(?=([ \t]*))\2)?((?<=[ \t])#.*)?$/;

/**
 * What a name set on such a line keeps of it: the comment, after the blanks that follow an empty value, or after one
 * blank where there is no value (`name:   # c` becomes `name: x # c`); "" without one; undefined for another line.
 */
function emptyNameComment(line: string): string | undefined {
  const match = EMPTY_NAME.exec(line);
  if (!match) return undefined;
  const [, beforeValue, afterValue, comment] = match as unknown as [string, string, string | undefined, string | undefined];
  return comment === undefined ? "" : `${afterValue ?? beforeValue.slice(-1)}${comment}`;
}

function applyCandidate(lines: readonly Line[], candidate: Candidate): Line[] {
  const edited = [...lines];
  if (candidate.insert) edited.splice(candidate.index, 0, { text: candidate.text, end: lines[candidate.index - 1]!.end });
  else edited[candidate.index] = { text: candidate.text, end: lines[candidate.index]!.end };
  return edited;
}

/** The fixed field reads as intended and every other field as before; no field appears or goes. */
function keepsMeaning(before: readonly FrontmatterField[], after: readonly FrontmatterField[], candidate: Candidate): boolean {
  const values = (fields: readonly FrontmatterField[]) => new Map(fields.filter((field) => field.key !== candidate.key).map((field) => [field.key, field.value]));
  const fixed = after.filter((field) => field.key === candidate.key);
  return fixed.length === 1 && fixed[0]!.value === candidate.value && isDeepStrictEqual(values(before), values(after));
}

function splitLines(text: string): Line[] {
  const lines: Line[] = [];
  const breaks = /\r\n|\r|\n/g;
  let start = 0;
  for (let match = breaks.exec(text); match; match = breaks.exec(text)) {
    lines.push({ text: text.slice(start, match.index), end: match[0] });
    start = match.index + match[0].length;
  }
  lines.push({ text: text.slice(start), end: "" });
  return lines;
}
