import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { ConfigError } from "../compile/config.js";
import { compareStrings, type Diagnostic, type Finding } from "../compile/diagnostics.js";

/** The suppressions file, beside the config. */
export const SUPPRESSIONS_FILE = "skills-suppressions.json";

/**
 * What `skills-suppressions.json` holds, ESLint's `eslint-suppressions.json` shape: `{ "<file>": { "<code>": { "count": n } } }`,
 * files relative to the config folder. Kept as maps: a key of the file (`__proto__`) is never a property name.
 */
export type Suppressions = Map<string, Map<string, number>>;

/** A suppressions file larger than this is refused: one entry per file and code, it stays far smaller. */
const MAX_SUPPRESSIONS_BYTES = 16 * 1024 * 1024;

const SHAPE = 'expected { "<file>": { "<code>": { "count": <n> } } }, as `skills check --suppress` writes it';

/**
 * The suppressions file at `path`, or nothing when there is none. It is reviewed in pull requests like any other
 * input: a file that is not a regular one (a link, say), too large, or not of the shape above stops the run
 * (exit 2) with one line naming it, and none of its text is printed.
 */
export function readSuppressions(path: string): { suppressions: Suppressions; text: string } | undefined {
  const stats = lstatSync(path, { throwIfNoEntry: false });
  if (!stats) return undefined;
  if (!stats.isFile()) throw new ConfigError(path, `${stats.isSymbolicLink() ? "a symbolic link" : "not a regular file"}; the suppressions file must be a file of its own (it is not followed)`);
  let text: string;
  let fd: number | undefined;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const { size } = fstatSync(fd);
    if (size > MAX_SUPPRESSIONS_BYTES) throw new ConfigError(path, `${size} bytes, over the ${MAX_SUPPRESSIONS_BYTES} a suppressions file may hold`);
    text = readFileSync(fd, "utf8").replace(/^\uFEFF/, "");
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    throw new ConfigError(path, `cannot read the suppressions file: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text: it is not echoed.
    throw new ConfigError(path, `not valid JSON; ${SHAPE}`);
  }
  return { suppressions: suppressionsOf(value, path), text };
}

function suppressionsOf(value: unknown, path: string): Suppressions {
  const isObject = (item: unknown): item is Record<string, unknown> => typeof item === "object" && item !== null && !Array.isArray(item);
  const fail = (where: string, what: string) => new ConfigError(path, `${where}: ${what}; ${SHAPE}`);
  if (!isObject(value)) throw fail("(file)", "not an object");
  const suppressions: Suppressions = new Map();
  for (const [file, codes] of Object.entries(value)) {
    if (!isObject(codes)) throw fail(JSON.stringify(file), "not an object of codes");
    const counts = new Map<string, number>();
    for (const [code, entry] of Object.entries(codes)) {
      const count = isObject(entry) && Object.keys(entry).length === 1 ? entry.count : undefined;
      if (typeof count !== "number" || !Number.isSafeInteger(count) || count < 1) throw fail(`${JSON.stringify(file)}.${JSON.stringify(code)}`, "not { \"count\": <a positive whole number> }");
      counts.set(code, count);
    }
    suppressions.set(file, counts);
  }
  return suppressions;
}

/** Writes `suppressions` sorted (files, then codes, bytewise), two-space JSON with a final newline, through a temporary file renamed into place. */
export function writeSuppressions(path: string, suppressions: Suppressions): string {
  const files = [...suppressions].filter(([, codes]) => codes.size > 0).sort(([a], [b]) => compareStrings(a, b));
  // Object.fromEntries makes own properties whatever the key, `__proto__` included.
  const json = Object.fromEntries(files.map(([file, codes]) => [file, Object.fromEntries([...codes].sort(([a], [b]) => compareStrings(a, b)).map(([code, count]) => [code, { count }]))]));
  const text = `${JSON.stringify(json, null, 2)}\n`;
  const temporary = join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);
  try {
    writeFileSync(temporary, text, { flag: "wx" });
    renameSync(temporary, path);
  } finally {
    rmSync(temporary, { force: true });
  }
  return text;
}

/**
 * Diagnostics counted per file and code, a finding that counts others (`count`) as that many; those about no file
 * cannot be suppressed.
 */
function countOf(diagnostics: readonly Diagnostic[]): Suppressions {
  const counts: Suppressions = new Map();
  for (const { file, code, count = 1 } of diagnostics) {
    if (file === undefined) continue;
    let codes = counts.get(file);
    if (!codes) counts.set(file, (codes = new Map()));
    codes.set(code, (codes.get(code) ?? 0) + count);
  }
  return counts;
}

/** `--suppress`: today's count of every file and code found, over what the file held (the entries of others kept, as ESLint does). */
export function suppressAll(suppressions: Suppressions, diagnostics: readonly Diagnostic[]): Suppressions {
  const next: Suppressions = new Map([...suppressions].map(([file, codes]) => [file, new Map(codes)]));
  for (const [file, codes] of countOf(diagnostics)) {
    const entry = next.get(file) ?? new Map<string, number>();
    for (const [code, count] of codes) entry.set(code, count);
    next.set(file, entry);
  }
  return next;
}

/** `--prune-suppressions`: each count lowered to today's, and entries with none left removed. */
export function pruneSuppressions(suppressions: Suppressions, diagnostics: readonly Diagnostic[]): Suppressions {
  const counts = countOf(diagnostics);
  const next: Suppressions = new Map();
  for (const [file, codes] of suppressions) {
    for (const [code, count] of codes) {
      const now = Math.min(count, counts.get(file)?.get(code) ?? 0);
      if (now > 0) next.set(file, (next.get(file) ?? new Map()).set(code, now));
    }
  }
  return next;
}

export interface Suppressed {
  /** The diagnostics still reported. */
  reported: Diagnostic[];
  /** Those a suppression covers. */
  suppressed: Diagnostic[];
  /** An entry for each file and code that suppresses more than remains: `suppression-stale`, not yet given a severity. */
  stale: Finding[];
}

/**
 * ESLint's bulk suppressions: the findings of one code in one file are suppressed while they number no more than
 * the file's count for them; past it, all of them are reported (which are new cannot be told). An entry whose
 * count is above today's is stale. `file` names the suppressions file as diagnostics name files; `text` is its
 * text, to point at each stale entry's line.
 */
export function applySuppressions(diagnostics: readonly Diagnostic[], suppressions: Suppressions, file: string, text: string): Suppressed {
  const counts = countOf(diagnostics);
  const allowed = ({ file: at, code }: Diagnostic) => at !== undefined && counts.get(at)!.get(code)! <= (suppressions.get(at)?.get(code) ?? 0);
  const reported: Diagnostic[] = [];
  const suppressed: Diagnostic[] = [];
  for (const diagnostic of diagnostics) (allowed(diagnostic) ? suppressed : reported).push(diagnostic);
  const stale: Finding[] = [];
  const positionOf = entryPositions(text);
  for (const [suppressedFile, codes] of suppressions) {
    for (const [code, count] of codes) {
      const now = counts.get(suppressedFile)?.get(code) ?? 0;
      if (now >= count) continue;
      stale.push({
        code: "suppression-stale",
        file,
        ...positionOf(suppressedFile, code),
        message: `${suppressedFile} may have ${count} \`${code}\` ${count === 1 ? "finding" : "findings"} and has ${now === 0 ? "none" : now} now: the suppression is stale`,
        hint: "Run `skills check --prune-suppressions` to lower it to what remains, so that a new finding there fails the run again.",
      });
    }
  }
  return { reported, suppressed, stale };
}

/**
 * Where each entry of the suppressions file is, as `writeSuppressions` lays it out (`  "<file>": {`, then
 * `    "<code>": {` lines): the file's lines are indexed once, so that naming every stale entry of a large file
 * stays linear. An entry not found there (another layout) has no position; a code not found, its file's line.
 */
function entryPositions(text: string): (file: string, code: string) => Pick<Finding, "line" | "column"> {
  const files = new Map<string, number>();
  const codes = new Map<string, number>();
  let current: string | undefined;
  text.split("\n").forEach((line, index) => {
    if (line.startsWith('  "') && line.endsWith(": {")) {
      current = line.slice(2, -3);
      if (!files.has(current)) files.set(current, index);
    } else if (line === "  }" || line === "  },") {
      current = undefined;
    } else if (current !== undefined && line.startsWith('    "') && line.endsWith(": {")) {
      const key = `${current}\n${line.slice(4, -3)}`;
      if (!codes.has(key)) codes.set(key, index);
    }
  });
  return (file, code) => {
    const fileKey = JSON.stringify(file);
    const fileLine = files.get(fileKey);
    if (fileLine === undefined) return {};
    const codeLine = codes.get(`${fileKey}\n${JSON.stringify(code)}`);
    return codeLine === undefined ? { line: fileLine + 1, column: 3 } : { line: codeLine + 1, column: 5 };
  };
}
