/**
 * The most common SKILL.md failure, as data: a one-line plain YAML value that YAML cannot read as the text it
 * shows, because it holds `: ` or ends in `:` (read as a nested mapping) or starts with an indicator character (`[`, `{`, `*`,
 * `&`, `!`, `@`, `` ` ``, `%`, read as syntax). The hint spells out the quoted line; `--fix` writes it.
 */
import { trimEnd } from "./trim.js";

/** A top-level `key: value` line whose value is such text. */
export interface UnquotedValue {
  key: string;
  /** The value as written, without the spaces around it. */
  value: string;
  /** Column (1-based) where the value starts. */
  column: number;
  /** Why YAML cannot read it: the column of the inner `: `, or the indicator it starts with. */
  problem: { colon: number } | { indicator: string };
}

/** Spaces after the colon taken whole (`(?![ \t])`), the rest to the line's end: one pass, however many spaces. */
const KEY_AND_VALUE = /^([A-Za-z0-9_-]+):([ \t]+)(?![ \t])(.*)$/;
const INDICATOR = /^[[{*&!@`%]/;

/** The line's value when it is plain text YAML misreads; undefined for any other line. */
export function unquotedValue(line: string): UnquotedValue | undefined {
  const match = KEY_AND_VALUE.exec(line);
  if (!match) return undefined;
  const [, key, spaces, rest] = match as unknown as [string, string, string, string];
  const value = trimEnd(rest, " \t");
  // Quoted or block values, and values with a comment (` #`: what the author meant is unclear), are not this case.
  if (value === "" || /^["'|>]/.test(value) || value.includes(" #")) return undefined;
  const column = key.length + 1 + spaces.length + 1;
  const colon = /:(?:\s|$)/.exec(value);
  if (colon) return { key, value, column, problem: { colon: column + colon.index } };
  if (INDICATOR.test(value)) return { key, value, column, problem: { indicator: value[0]! } };
  return undefined;
}

/** A YAML double-quoted scalar that reads back as exactly `text` (one line of text: no line breaks). */
export function doubleQuoted(text: string): string {
  return `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}
