/**
 * The relative links of a skill's Markdown body (`[text](references/api.md)`, `![alt](assets/flow.png)`,
 * `[ref]: scripts/run.sh`): what `link-broken` checks against the files of the skill folder. Web addresses,
 * `mailto:` and other schemes, absolute paths, `#anchors` and templates (`{name}`) are not file links; code
 * blocks and code spans are not links at all. `{baseDir}/`, Claude Code's name for the skill folder, is. Linear in the body's length: each line is scanned a fixed number of times.
 */

import type { Finding } from "./diagnostics.js";

export interface BodyLink {
  /** The path the link names, relative to the skill folder: fragment and query removed, `%20` decoded, `./` resolved. */
  path: string;
  /** The target as written. */
  target: string;
  /** SKILL.md line and column of the target. */
  line: number;
  column: number;
}

/** `](target` of an inline link or image; the target ends at `)` or white space, or is `<…>`. */
const INLINE_TARGET = /\]\([ \t]*(<[^<>\n]*>|[^()\s<>]+)/g;
/** A link reference definition: `[label]: target`, at most three spaces in (a footnote, `[^1]: text`, is not one). */
const REFERENCE_DEFINITION = /^ {0,3}\[(?!\^)[^\]\n]{1,999}\]:[ \t]*(<[^<>\n]*>|\S+)/;
/** A fence line opens or closes a code block: three or more backticks or tildes, at most three spaces in. */
const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/** What makes a line worth reading: a fence's backticks or tildes, or a link's `](` or `]:`. */
const NOTABLE = /```|~~~|\]\(|\]:/g;

export function bodyLinks(body: string, bodyLine: number): BodyLink[] {
  const links: BodyLink[] = [];
  if (!body.includes("](") && !body.includes("]:")) return links;
  let fence: string | undefined;
  // Only the lines that hold a fence or a link are read (found by one search, not a test of every line); the
  // line breaks before a link are counted from the last link's line, when one is found.
  let index = 0;
  let counted = 0;
  const notable = new RegExp(NOTABLE);
  for (let match = notable.exec(body); match; match = notable.exec(body)) {
    const start = body.lastIndexOf("\n", match.index) + 1;
    const next = body.indexOf("\n", match.index);
    const end = next < 0 ? body.length : next;
    notable.lastIndex = end + 1;
    const rawLine = body.slice(start, end);
    const fenceMatch = rawLine.includes("```") || rawLine.includes("~~~") ? FENCE.exec(rawLine) : null;
    if (fence !== undefined) {
      if (fenceMatch && fenceMatch[1]![0] === fence[0] && fenceMatch[1]!.length >= fence.length && rawLine.trim() === fenceMatch[1]) fence = undefined;
      continue;
    }
    if (fenceMatch) {
      fence = fenceMatch[1]!;
      continue;
    }
    if (!rawLine.includes("](") && !rawLine.includes("]:")) continue;
    const line = withoutCodeSpans(rawLine);
    const found = (target: string, at: number) => {
      const path = linkPath(target);
      if (path === undefined) return;
      for (let newline = body.indexOf("\n", counted); newline !== -1 && newline < start; newline = body.indexOf("\n", newline + 1)) index++;
      counted = start;
      links.push({ path, target, line: bodyLine + index, column: at + 1 });
    };
    const definition = REFERENCE_DEFINITION.exec(line);
    if (definition) found(definition[1]!, definition.index + definition[0].length - definition[1]!.length);
    for (const inline of line.matchAll(INLINE_TARGET)) found(inline[1]!, inline.index + inline[0].length - inline[1]!.length);
  }
  return links;
}

/** The line with its code spans' text blanked out (columns kept): a span is a run of backticks closed by a run as long. */
function withoutCodeSpans(line: string): string {
  if (!line.includes("`")) return line;
  const runs = [...line.matchAll(/`+/g)].map((match) => ({ start: match.index, length: match[0].length }));
  // For each run, the index of the next run of the same length: one pass from the right.
  const next = new Array<number>(runs.length).fill(-1);
  const lastOfLength = new Map<number, number>();
  for (let i = runs.length - 1; i >= 0; i--) {
    next[i] = lastOfLength.get(runs[i]!.length) ?? -1;
    lastOfLength.set(runs[i]!.length, i);
  }
  let blanked = "";
  let kept = 0;
  for (let i = 0; i < runs.length; i++) {
    const closing = next[i]!;
    if (closing < 0) continue;
    const spanEnd = runs[closing]!.start + runs[closing]!.length;
    blanked += line.slice(kept, runs[i]!.start) + " ".repeat(spanEnd - runs[i]!.start);
    kept = spanEnd;
    i = closing;
  }
  return blanked + line.slice(kept);
}

/** The path a target names inside the skill folder, or undefined when it is no relative file link. */
function linkPath(written: string): string | undefined {
  const target = written.startsWith("<") ? written.slice(1, -1).trim() : written;
  if (target === "" || target.startsWith("#") || target.startsWith("/") || target.startsWith("\\") || /^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined;
  // `{baseDir}` is the skill folder in Claude Code; another placeholder (`{name}`, `${VAR}`) is a template, not a path.
  let path = target.replace(/^\{baseDir\}\//, "");
  // Up to a query or fragment (a search, not `/[?#].*$/`, which retries from every `?` of a long run before a U+2028).
  const query = path.search(/[?#]/);
  if (query >= 0) path = path.slice(0, query);
  if (/[{}$]/.test(path)) return undefined;
  try {
    path = decodeURIComponent(path);
  } catch {
    // Not percent-encoded after all: the path as written.
  }
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (parts.length === 0) return path; // outside the skill folder: kept as written, `..` and all
      parts.pop();
    } else parts.push(part);
  }
  return parts.length > 0 ? parts.join("/") : undefined;
}

/**
 * Broken links of one SKILL.md that `link-broken` names one by one; one more finding counts the rest. A megabyte of
 * body can hold 250,000 of them, each a finding in every report and in the manifest (100 MB of it).
 */
export const MAX_BROKEN_LINKS_NAMED = 100;

/**
 * `link-broken`: the links that name no file of the skill folder (`files`, relative to it, as discovery listed
 * them; a folder counts when it holds a file), in the order they come: the first `MAX_BROKEN_LINKS_NAMED`, then one
 * finding, at the next, that counts those left.
 */
export function brokenLinks(displayFile: string, links: readonly BodyLink[], files: readonly string[]): Finding[] {
  if (links.length === 0) return [];
  const present = new Set(files);
  const folders = foldersOf(files);
  const broken = links.filter((link) => !present.has(link.path) && !folders.has(link.path.replace(/\/$/, "")));
  const findings: Finding[] = broken.slice(0, MAX_BROKEN_LINKS_NAMED).map((link) => {
    const outside = link.path.startsWith("..");
    return {
      code: "link-broken",
      file: displayFile,
      line: link.line,
      column: link.column,
      message: outside ? `the link "${link.target}" leads out of the skill folder: a copy of the skill elsewhere will not have it` : `the link "${link.target}" names no file in the skill folder`,
      hint: outside
        ? "Copy what it links to into the skill folder (references/, say), or link to it by a web address."
        : "Add the file, or correct the path: links are relative to the skill folder, where SKILL.md is.",
    };
  });
  const next = broken[MAX_BROKEN_LINKS_NAMED];
  if (next) {
    const left = broken.length - MAX_BROKEN_LINKS_NAMED;
    findings.push({
      code: "link-broken",
      file: displayFile,
      line: next.line,
      column: next.column,
      message: `${left.toLocaleString("en-US")} more ${left === 1 ? "link names" : "links name"} no file in the skill folder, from "${next.target}" on (the first ${MAX_BROKEN_LINKS_NAMED} are named above)`,
      hint: "Fix or remove the links named above; each check names the next ones.",
      count: left,
    });
  }
  return findings;
}

/**
 * The folders holding `files`, each once: a file's are walked up only to the first already found. Files deep in a
 * folder tree share their folders, and naming every folder of every file took time of its depth squared a file (a
 * skill of 3,000 files 800 folders deep: 13 s).
 */
function foldersOf(files: readonly string[]): Set<string> {
  const folders = new Set<string>();
  for (const file of files) {
    for (let slash = file.lastIndexOf("/"); slash > 0; slash = file.lastIndexOf("/", slash - 1)) {
      const folder = file.slice(0, slash);
      if (folders.has(folder)) break;
      folders.add(folder);
    }
  }
  return folders;
}
