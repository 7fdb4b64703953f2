import ignore, { type Ignore } from "ignore";

/**
 * The .gitignore files that apply in a folder, as one matcher over paths relative to the root (`undefined`
 * when there are none). One matcher, not one per file, because that is how git decides: every pattern of
 * every file on the way down is tried, a deeper file's after a shallower one's, and the last that matches
 * wins, so `!tool-wip` in `sub/.gitignore` re-includes what `*-wip` at the root excluded. Nothing below an
 * excluded folder can be re-included. Names are compared case-sensitively, as git does by default, so the
 * same catalogue gives the same skills on every file system, and byte by byte, as git does: `?` matches one
 * byte of a UTF-8 name, not one character. To that end patterns and paths reach the matcher as Latin-1
 * strings of their UTF-8 bytes, one character per byte.
 */
export type GitignoreRules = Ignore | undefined;

/**
 * The most patterns the .gitignore files that apply in a folder may hold together. A path is tried against each
 * pattern, one after another (as git does), so a walk costs its paths times its patterns: a pull request's
 * .gitignore of 20,000 wildcards over 500 skills (1,500 paths) took 32 s. The public catalogues' largest holds 74 lines.
 */
export const MAX_GITIGNORE_PATTERNS = 1_000;
/**
 * The most tests a root's .gitignore files may cost a walk before any path below them is tried: a folder's
 * .gitignore makes a matcher that tries each folder above it against each pattern in scope once, so a .gitignore in
 * each of 200 folders 200 deep, under 900 patterns, cost 2.3 s. 10,000 skill folders, each with a .gitignore of 10
 * patterns two folders down under 50 more, would cost 1,800,000.
 */
export const MAX_GITIGNORE_TESTS = 10_000_000;
/** The largest .gitignore read (SKILL.md's limit): past it, not read at all. */
export const MAX_GITIGNORE_BYTES = 1024 * 1024;

/** Rules that leave out every path: those of a folder whose .gitignore files could not be honoured. */
export const EVERYTHING_IGNORED: Ignore = ignore().add("*");

/** Why a .gitignore is not honoured: its patterns with those above it, past the limit; or the line of a pattern too costly to try. */
export type UnhonouredGitignore = { patterns: number } | { costlyLine: number };

/**
 * `outer` with the rules of the .gitignore in `relDir` (relative to the root, `/`-separated, "" for the root) added;
 * or why they are not.
 */
export function withGitignore(outer: GitignoreRules, relDir: string, file: Uint8Array): Ignore | UnhonouredGitignore {
  let text = Buffer.from(file.buffer, file.byteOffset, file.byteLength).toString("latin1");
  if (text.startsWith(BOM)) text = text.slice(BOM.length);
  const costlyLine = costlyPatternLine(text);
  if (costlyLine !== undefined) return { costlyLine };
  const added = relDir ? rebase(text, bytesOf(relDir)) : text;
  const patterns = (outer ? (patternsOf.get(outer) ?? 0) : 0) + patternCount(added);
  if (patterns > MAX_GITIGNORE_PATTERNS) return { patterns };
  const rules = ignore({ ignorecase: false });
  if (outer) rules.add(outer);
  const matcher = rules.add(added);
  patternsOf.set(matcher, patterns);
  // Plain names here and in every file above: their names decide (no negation can re-include).
  const outerScopes = outer === undefined ? [] : scopesOf.get(outer);
  const names = outerScopes && plainNames(text, relDir, outerScopes.at(-1));
  if (outerScopes && names) scopesOf.set(matcher, names === outerScopes.at(-1) ? outerScopes : [...outerScopes, names]);
  return matcher;
}

const patternsOf = new WeakMap<Ignore, number>();

/** The patterns `rules` hold, those of the .gitignore files above included. */
export function patternsIn(rules: Ignore): number {
  return patternsOf.get(rules) ?? 0;
}

/** The lines of a .gitignore's text that are patterns: neither blank (trailing spaces aside) nor comments. */
function patternCount(text: string): number {
  let count = 0;
  for (const line of text.split("\n")) if (!line.startsWith("#") && trimPattern(line) !== "") count++;
  return count;
}

// The first line holding a pattern with `**` as a name more than once before its last name (`**/a/**/b`,
// `a/**/b/**/c`). The matcher tries each such `**` at every depth of a path in turn, so a path's test takes time
// that grows with its depth to the power of their number: one line of six took 69 s on a chain of 100 folders.
// One (`**/b`, `a/**/b`, `data/**/*`, `**/b/**`) is linear: every such pattern of the public catalogues has one.
export function costlyPatternLine(text: string): number | undefined {
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!;
    if (line.startsWith("#") || !line.includes("**")) continue;
    const names = trimPattern(line).replace(/^!/, "").replace(/^\//, "").split("/");
    let deep = 0;
    for (let name = 0; name < names.length - 1; name++) if (names[name] === "**") deep++;
    if (deep > 1) return index + 1;
  }
  return undefined;
}

/**
 * Whether git would leave out `rel` (relative to the root, `/`-separated), a folder when `isDir`: a path below the
 * folder `rules` were made for, as a walk asks of the paths it finds there.
 */
export function isIgnored(rules: GitignoreRules, rel: string, isDir: boolean): boolean {
  if (rules === undefined) return false;
  // Told apart before the matcher is asked, which would keep every path it is asked about, in every walk.
  if (rules === EVERYTHING_IGNORED) return true;
  const scopes = scopesOf.get(rules);
  return scopes ? ignoredByName(scopes, rel, isDir) : rules.ignores(bytesOf(isDir ? `${rel}/` : rel));
}

/**
 * A .gitignore that holds nothing but plain names (`drafts/`, `node_modules`, `notes.txt`: no wildcard, escape,
 * negation, anchor or space), as most do: a path below its folder is left out when one of its names below that
 * folder is one of them (a folder name, or its own name; a name with a trailing slash only when a folder). The
 * matcher's way to the same verdict tests each folder above a path and caches every path it was asked about: ~120
 * ms of a walk of 10,000 skills.
 */
interface PlainNames {
  /** How many names deep the .gitignore's folder is (0 for the root): its names reach the names below that depth. */
  depth: number;
  /** Names that match files and folders: this file's and those of the files above it. */
  any: Set<string>;
  /** Names that match folders only: this file's and those of the files above it. */
  folders: Set<string>;
}

/**
 * The rules of .gitignore files of plain names only: each file's names with those above it, shallowest file first
 * (a file without a name adds none). A path's names are each looked up once, in the names that reach their depth.
 */
const scopesOf = new WeakMap<Ignore, readonly PlainNames[]>();

/** A line of a plain name, as git reads it (not one of dots only); a CR before the line's end is not part of it. */
const PLAIN_NAME_LINE = /^(?!\.+\/?\r?$)([A-Za-z0-9._-]+)(\/?)\r?$/;

/**
 * The most names a .gitignore below another may hold with those above it and still be read as plain names: each
 * such file holds a copy of them. Past it, the matcher decides (the public catalogues' files hold up to 8).
 */
const MAX_NESTED_PLAIN_NAMES = 64;

function plainNames(text: string, relDir: string, above: PlainNames | undefined): PlainNames | undefined {
  const names: PlainNames = { depth: relDir === "" ? 0 : relDir.split("/").length, any: new Set(above?.any), folders: new Set(above?.folders) };
  const inherited = names.any.size + names.folders.size;
  for (const line of text.split("\n")) {
    if (line === "" || line === "\r" || line.startsWith("#")) continue;
    const match = PLAIN_NAME_LINE.exec(line);
    if (!match) return undefined;
    (match[2] ? names.folders : names.any).add(match[1]!);
    if (above && names.any.size + names.folders.size > MAX_NESTED_PLAIN_NAMES) return undefined;
  }
  // A file that adds no name leaves the names as they were above it: those reach its folder's names already.
  return above && names.any.size + names.folders.size === inherited ? above : names;
}

function ignoredByName(scopes: readonly PlainNames[], rel: string, isDir: boolean): boolean {
  // `rel` is below every scope's folder (see `isIgnored`): the names at depth d are looked up in the last scope
  // shallower than d, which holds the names of all the files above it too.
  let scope = -1;
  for (let depth = 1, start = 0; ; depth++) {
    while (scope + 1 < scopes.length && scopes[scope + 1]!.depth < depth) scope++;
    const slash = rel.indexOf("/", start);
    const name = slash === -1 ? rel.slice(start) : rel.slice(start, slash);
    const names = scopes[scope];
    if (slash === -1) return names !== undefined && (names.any.has(name) || (isDir && names.folders.has(name)));
    if (names !== undefined && (names.any.has(name) || names.folders.has(name))) return true;
    start = slash + 1;
  }
}

/** UTF-8's byte order mark, as Latin-1: git skips it at the start of a .gitignore. */
const BOM = "\xEF\xBB\xBF";
const NON_ASCII = /[^\x00-\x7F]/;

/** `text`'s UTF-8 bytes as a Latin-1 string (ASCII, most names, is its own). */
function bytesOf(text: string): string {
  return NON_ASCII.test(text) ? Buffer.from(text).toString("latin1") : text;
}

/**
 * A .gitignore's text with each pattern made relative to the root instead of `relDir`: a pattern with a slash
 * other than a trailing one is anchored to its file's folder (`/build`, `docs/*.md`), and one without matches
 * a name at any depth below it (`*.log`). Comments and blank lines are dropped, since prefixing would make
 * them patterns; each line's own ending is kept, so the matcher trims it exactly as it trims the root's file.
 */
function rebase(text: string, relDir: string): string {
  const prefix = escapeGlob(relDir);
  const lines = text.split("\n");
  const rebased: string[] = [];
  for (const line of lines) {
    if (line.startsWith("#")) continue;
    const negative = line.startsWith("!");
    const pattern = negative ? line.slice(1) : line;
    const body = trimPattern(pattern);
    const stem = body.endsWith("/") ? body.slice(0, -1) : body; // a trailing slash: folders only
    if (stem === "") continue;
    const anchored = stem.includes("/");
    rebased.push(`${negative ? "!" : ""}${prefix}/${anchored ? pattern.replace(/^\//, "") : `**/${pattern}`}`);
  }
  return rebased.join("\n");
}

/**
 * As much of a pattern as decides how to rebase it: without the CR before the line's end and the trailing spaces,
 * as git reads it. (git keeps a trailing space escaped by a backslash; the backslash left here says just as well
 * that the pattern is not empty and does not end in a slash.)
 */
function trimPattern(pattern: string): string {
  let end = pattern.endsWith("\r") ? pattern.length - 1 : pattern.length;
  while (pattern.charCodeAt(end - 1) === SPACE) end--; // at 0, charCodeAt(-1) is NaN
  return pattern.slice(0, end);
}
const SPACE = 0x20;

/** A folder path as a pattern that matches only itself: wildcards and a leading `!` or `#` escaped. */
function escapeGlob(path: string): string {
  return path.replace(/[\\*?[\]]|^[!#]/g, "\\$&");
}
