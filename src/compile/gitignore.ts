import ignore, { type Ignore } from "ignore";

/**
 * The .gitignore files that apply in a folder, as one matcher over paths relative to the root (`undefined`
 * when there are none). One matcher, not one per file, because that is how git decides: every pattern of
 * every file on the way down is tried, a deeper file's after a shallower one's, and the last that matches
 * wins, so `!tool-wip` in `sub/.gitignore` re-includes what `*-wip` at the root excluded. Nothing below an
 * excluded folder can be re-included. Names are compared case-sensitively, as git does by default, so the
 * same catalogue gives the same skills on every file system.
 */
export type GitignoreRules = Ignore | undefined;

/** `outer` with the rules of the .gitignore in `relDir` (relative to the root, `/`-separated, "" for the root) added. */
export function withGitignore(outer: GitignoreRules, relDir: string, text: string): Ignore {
  const rules = ignore({ ignorecase: false });
  if (outer) rules.add(outer);
  return rules.add(relDir ? rebase(text, relDir) : text);
}

/** Whether git would leave out `rel` (relative to the root, `/`-separated), a folder when `isDir`. */
export function isIgnored(rules: GitignoreRules, rel: string, isDir: boolean): boolean {
  return rules !== undefined && rules.ignores(isDir ? `${rel}/` : rel);
}

const BOM = "\uFEFF";

/**
 * A .gitignore's text with each pattern made relative to the root instead of `relDir`: a pattern with a slash
 * other than a trailing one is anchored to its file's folder (`/build`, `docs/*.md`), and one without matches
 * a name at any depth below it (`*.log`). Comments and blank lines are dropped, since prefixing would make
 * them patterns; each line's own ending is kept, so the matcher trims it exactly as it trims the root's file.
 */
function rebase(text: string, relDir: string): string {
  const prefix = escapeGlob(relDir);
  const lines = (text.startsWith(BOM) ? text.slice(1) : text).split("\n");
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

/** A pattern as git reads it: one CR before the line's end dropped, then trailing spaces unless escaped by a backslash. */
function trimPattern(pattern: string): string {
  let end = pattern.endsWith("\r") ? pattern.length - 1 : pattern.length;
  const lineEnd = end;
  while (end > 0 && pattern.charCodeAt(end - 1) === SPACE) end--;
  if (end === lineEnd) return pattern.slice(0, end);
  let backslashes = 0;
  while (end - backslashes > 0 && pattern.charCodeAt(end - backslashes - 1) === BACKSLASH) backslashes++;
  return backslashes % 2 === 1 ? `${pattern.slice(0, end - 1)} ` : pattern.slice(0, end);
}
const SPACE = 0x20;
const BACKSLASH = 0x5c;

/** A folder path as a pattern that matches only itself: wildcards and a leading `!` or `#` escaped. */
function escapeGlob(path: string): string {
  return path.replace(/[\\*?[\]]|^[!#]/g, "\\$&");
}
