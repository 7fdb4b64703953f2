import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { discoverRoot } from "../src/compile/discover.js";
import { costlyPatternLine, isIgnored, withGitignore, type GitignoreRules } from "../src/compile/gitignore.js";
import { tempDir } from "./helpers.js";

/*
 * git itself is the oracle: random trees with random .gitignore files, each path's verdict from
 * `git check-ignore` and the files git keeps from `git ls-files --others --exclude-standard`, one call each
 * per tree. Names and patterns are drawn from small sets so that patterns often hit names: wildcards,
 * brackets, escapes, `**`, anchors, folder-only patterns, negations, comments, trailing spaces, CRLF.
 */

/** File and folder names; none starts with a dot (discovery skips those, git does not). */
const NAMES = ["a", "b", "ab", "A", "x-wip", "a b", "b ", "a*", "!a", "#a", "[a]", "a\\b", "c.log", "ä"] as const;
/** Folders mostly from a few names, so that trees share folders and patterns at one depth meet paths at others. */
const folderName = fc.oneof({ weight: 3, arbitrary: fc.constantFrom("a", "b", "x-wip") }, { weight: 1, arbitrary: fc.constantFrom(...NAMES) });
const fileName = fc.oneof({ weight: 1, arbitrary: fc.constant("SKILL.md") }, { weight: 3, arbitrary: fc.constantFrom(...NAMES) });

const pieces = fc.constantFrom(
  "a", "b", "ab", "A", "x-wip", "ä", "c.log", "SKILL.md", "a b",
  "*", "?", "**", "a*", "*-wip", "*.log", "*.LOG", "[ab]", "[!a]", "[a-b]", "[]a]", "a?",
  "\\*", "a\\*", "\\[a]", "[a]", "\\!a", "\\#a", "!a", "#a", "a\\\\b", "a\\b",
);
const patternLine = fc.oneof(
  {
    weight: 8,
    arbitrary: fc
      .record({
        negate: fc.boolean(),
        lead: fc.constantFrom("", "", "/", "**/"),
        segments: fc.array(pieces, { minLength: 1, maxLength: 3 }),
        trail: fc.constantFrom("", "", "", "/", "/**", "/**/", " ", "  ", "\\ ", "b\\ "),
      })
      .map(({ negate, lead, segments, trail }) => `${negate ? "!" : ""}${lead}${segments.join("/")}${trail}`),
  },
  { weight: 1, arbitrary: fc.constantFrom("", " ", "# a", "#a", "!", "/", "\\", "a\\", "**", "!**", "*", "!*/", "\\ ", "\t") },
);
const gitignoreText = fc
  .record({ bom: fc.nat(3).map((n) => n === 0), lines: fc.array(fc.tuple(patternLine, fc.constantFrom("\n", "\n", "\r\n")), { minLength: 1, maxLength: 5 }) })
  .map(({ bom, lines }) => (bom ? "\uFEFF" : "") + lines.map(([line, end]) => line + end).join(""))
  // A line of more than one `**` before its last name is not honoured (test/discover-hostile.test.ts): git's verdicts hold for the rest.
  .filter((text) => costlyPatternLine(text.replace(/^\uFEFF/, "")) === undefined);

interface Tree {
  /** Files relative to the root, `/`-separated; no file is also a folder. */
  files: string[];
  /** Every folder holding a file, the root ("") excluded. */
  dirs: string[];
  /** .gitignore text by folder ("" for the root). */
  gitignores: Map<string, string>;
}

const tree: fc.Arbitrary<Tree> = fc
  .record({
    paths: fc.array(fc.tuple(fc.array(folderName, { maxLength: 3 }), fileName), { minLength: 1, maxLength: 16 }),
    ignores: fc.array(fc.tuple(fc.nat(), gitignoreText), { minLength: 1, maxLength: 4 }),
  })
  .map(({ paths, ignores }) => {
    const files: string[] = [];
    const dirs = new Set<string>();
    for (const [folders, name] of paths) {
      const file = [...folders, name].join("/");
      const parents = folders.map((_, i) => folders.slice(0, i + 1).join("/"));
      if (files.includes(file) || dirs.has(file) || parents.some((parent) => files.includes(parent))) continue;
      files.push(file);
      for (const parent of parents) dirs.add(parent);
    }
    const folders = ["", ...dirs];
    const gitignores = new Map<string, string>();
    for (const [pick, text] of ignores) gitignores.set(folders[pick % folders.length]!, text);
    return { files, dirs: [...dirs], gitignores };
  });

/** Trees whose .gitignore files hold plain names only (a name, a folder name, comments, blank lines, CRLF): no matcher needed. */
const plainName = fc.tuple(fc.constantFrom("a", "b", "ab", "A", "x-wip", "c.log", "SKILL.md"), fc.constantFrom("", "/"), fc.constantFrom("\n", "\r\n"));
const plainText = fc.array(fc.oneof({ weight: 6, arbitrary: plainName.map(([name, slash, end]) => `${name}${slash}${end}`) }, { weight: 1, arbitrary: fc.constantFrom("\n", "# a\n") }), { minLength: 1, maxLength: 4 }).map((lines) => lines.join(""));
const plainTree: fc.Arbitrary<Tree> = fc
  .record({ base: tree, texts: fc.array(plainText, { minLength: 4, maxLength: 4 }) })
  .map(({ base, texts }) => ({ ...base, gitignores: new Map([...base.gitignores.keys()].map((dir, index) => [dir, texts[index % texts.length]!])) }));

/** More runs for a deeper search: `ORACLE_RUNS=5000 npx vitest run test/gitignore-oracle.test.ts`. */
const RUNS = Number(process.env.ORACLE_RUNS ?? 120);
const TIMEOUT = Math.max(60_000, RUNS * 200);

let gitDir: string;
const git = (root: string, args: string[], input: string): string =>
  execFileSync("git", ["--git-dir", gitDir, "--work-tree", root, "-c", "core.ignorecase=false", "-c", "core.excludesFile=", ...args], {
    cwd: root,
    input,
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
  });

/** git's verdict on each path (files and folders), in one call. */
function gitVerdicts(root: string, paths: string[]): Map<string, boolean> {
  let out: string;
  try {
    out = git(root, ["check-ignore", "--stdin", "-z", "-v", "-n"], paths.map((path) => `${path}\0`).join(""));
  } catch (error) {
    // Exit 1 means "nothing ignored"; with -n every path is still listed.
    out = (error as { status?: number; stdout?: string }).status === 1 ? (error as { stdout: string }).stdout : (() => { throw error; })();
  }
  const fields = out.split("\0");
  const verdicts = new Map<string, boolean>();
  for (let i = 0; i + 3 < fields.length; i += 4) {
    const [source, , pattern, path] = fields.slice(i, i + 4) as [string, string, string, string];
    verdicts.set(path, source !== "" && !pattern.startsWith("!"));
  }
  return verdicts;
}

let scratch: string;
let runs = 0;
function materialise({ files, gitignores }: Tree): string {
  const root = join(scratch, String(runs++));
  for (const file of files) {
    mkdirSync(join(root, file, ".."), { recursive: true });
    writeFileSync(join(root, file), file === "SKILL.md" || file.endsWith("/SKILL.md") ? "---\nname: x\ndescription: y\n---\n" : "x");
  }
  for (const [dir, text] of gitignores) {
    mkdirSync(join(root, dir), { recursive: true });
    writeFileSync(join(root, dir, ".gitignore"), text);
  }
  return root;
}

const parentOf = (path: string) => path.slice(0, Math.max(0, path.lastIndexOf("/")));
const isUnder = (path: string, dir: string) => dir === "" || path.startsWith(`${dir}/`);

beforeAll(async () => {
  scratch = await tempDir("skillbake-gitignore-");
  gitDir = join(scratch, "oracle.git");
  execFileSync("git", ["init", "-q", "--bare", gitDir]);
  rmSync(join(gitDir, "info"), { recursive: true, force: true }); // no info/exclude: only the tree's .gitignore files
});

/** Each path's verdict (files and folders) from the rules the walk holds in its parent folder, against `git check-ignore`. */
function expectVerdictsOfGit(generated: Tree): void {
  const root = materialise(generated);
  const rulesOf = new Map<string, GitignoreRules>();
  const rulesFor = (dir: string): GitignoreRules => {
    if (rulesOf.has(dir)) return rulesOf.get(dir);
    const outer = dir === "" ? undefined : rulesFor(parentOf(dir));
    const text = generated.gitignores.get(dir);
    const rules = text === undefined ? outer : withGitignore(outer, dir, Buffer.from(text));
    if (rules && ("patterns" in rules || "costlyLine" in rules)) throw new Error(`not honoured: ${JSON.stringify(rules)}`);
    rulesOf.set(dir, rules);
    return rules;
  };
  const paths = [...generated.dirs, ...generated.files];
  const dirs = new Set(generated.dirs);
  const actual = new Map(paths.map((path) => [path, isIgnored(rulesFor(parentOf(path)), path, dirs.has(path))]));
  expect(actual).toEqual(gitVerdicts(root, paths));
}

/** The skills discovery finds and their files, against the files `git ls-files --others --exclude-standard` keeps. */
function expectDiscoveryOfGit(generated: Tree): void {
  const root = materialise(generated);
  const kept = git(root, ["ls-files", "--others", "--exclude-standard", "-z"], "")
    .split("\0")
    .filter((path) => path !== "" && !path.split("/").some((name) => name.startsWith(".")));
  // A skill is the shallowest folder whose SKILL.md git keeps; its files are the kept ones below it.
  const skillDirs = kept.filter((path) => path === "SKILL.md" || path.endsWith("/SKILL.md")).map(parentOf);
  const outermost = skillDirs.filter((dir) => !skillDirs.some((other) => other !== dir && isUnder(dir, other)));
  const byDir = (a: [string, string[]], b: [string, string[]]) => (a[0] < b[0] ? -1 : 1);
  const expected = outermost.map((dir): [string, string[]] => [dir, kept.filter((path) => isUnder(path, dir)).map((path) => (dir ? path.slice(dir.length + 1) : path)).sort()]).sort(byDir);
  const listing = discoverRoot(root, (path) => path);
  expect(listing.skills.map((skill): [string, string[]] => [skill.dir, [...skill.files].sort()]).sort(byDir)).toEqual(expected);
}

/** A tree from files and .gitignore texts by folder. */
function treeOf(files: string[], gitignores: Record<string, string>): Tree {
  const dirs = new Set(files.flatMap((file) => file.split("/").slice(0, -1).map((_, i, names) => names.slice(0, i + 1).join("/"))));
  return { files, dirs: [...dirs], gitignores: new Map(Object.entries(gitignores)) };
}

/** Cases a random search meets rarely; git still decides what is right. */
const EXAMPLES: Record<string, Tree> = {
  "a deeper file re-includes a name a shallower one excluded": treeOf(["sub/tool-wip/SKILL.md", "sub/tool-wip/notes"], { "": "*-wip\n", sub: "!tool-wip\n" }),
  "nothing below an excluded folder comes back": treeOf(["drafts/idea/SKILL.md"], { "": "drafts/\n", drafts: "!idea\n!idea/SKILL.md\n" }),
  "a folder's own .gitignore applies to its SKILL.md": treeOf(["pdf/SKILL.md", "pdf/guide.md", "docs/SKILL.md"], { pdf: "SKILL.md\n" }),
  "a comment in a deeper file is not a pattern": treeOf(["sub/#a", "sub/b/#a", "sub/SKILL.md"], { sub: "#a\n# a\n" }),
  "escaped leading ! and # in a deeper file": treeOf(["sub/!a", "sub/#a", "sub/a", "sub/SKILL.md"], { sub: "\\!a\n\\#a\n" }),
  "a name-only pattern in a deeper file matches at every depth below it": treeOf(["sub/a/b/c.log", "sub/c.log", "c.log", "SKILL.md"], { sub: "*.log\n" }),
  "a folder-only name pattern in a deeper file matches folders at every depth below it": treeOf(["sub/a/b/x", "sub/b/x", "sub/a/b ", "SKILL.md"], { sub: "b/\nb\\ /\n" }),
  "an anchored pattern in a deeper file matches only below it": treeOf(["sub/a/b", "sub/x/a/b", "a/b", "SKILL.md"], { sub: "/a/b\n" }),
  "folder names with wildcards in them hold patterns of their own": treeOf(["[a]/x", "a/x", "*/x", "b/x", "?/x", "SKILL.md"], { "[a]": "x\n", "*": "x\n", "?": "/x\n" }),
  "folders named with a leading ! or #": treeOf(["!a/x", "#a/x", "a/x", "SKILL.md"], { "!a": "x\n", "#a": "/x\n" }),
  "? matches one byte of a UTF-8 name, not one character": treeOf(["ä", "é/x", "a", "SKILL.md"], { "": "?\n", "é": "?\n" }),
  "names are compared case-sensitively": treeOf(["c.log", "C.LOG", "sub/c.log", "SKILL.md"], { "": "*.LOG\n", sub: "*.LOG\n" }),
  "a byte order mark before the first pattern": treeOf(["a", "sub/a", "SKILL.md"], { "": "\uFEFFa\n", sub: "\uFEFFa\n" }),
  "trailing spaces, escaped and not, and CRLF": treeOf(["a", "b ", "sub/a", "sub/b ", "SKILL.md"], { "": "a  \r\n", sub: "b\\ \r\na \n" }),
  "a folder-only name pattern with CRLF in a deeper file matches folders at every depth below it": treeOf(["sub/a/b/x", "sub/b/x", "SKILL.md"], { sub: "b/\r\n" }),
  "lines that are empty once read: blank, a lone !, a lone /, with LF or CRLF": treeOf(["a", "sub/a", "sub/b/c", "SKILL.md"], { sub: "\n!\n/\n \n\r\n!\r\n/\r\n \r\n! \r\n" }),
  "a root .gitignore of plain names, at every depth and below a folder they name": treeOf(
    ["drafts/x", "a/drafts/y", "b/drafts", "c.log", "a/c.log/z", "x-wip/SKILL.md", "ab/x-wip", "A/a", "SKILL.md"],
    { "": "drafts/\nc.log\r\n# a comment\n\nx-wip\n" },
  ),
  "a root .gitignore of plain names but one (a wildcard), and plain names in a deeper file": treeOf(["a/b", "b/a", "sub/a", "sub/b/c", "c.log", "SKILL.md"], { "": "a\nb/\n*.log\n", sub: "b\n" }),
  "plain names in files at several depths: each reaches only the names below its folder": treeOf(
    ["a/b/x", "a/b/c/x", "a/c/x", "b/x", "a/b/a/x", "c/a/b", "a/x-wip/y", "x-wip", "SKILL.md"],
    { "": "x-wip\n", a: "c/\n", "a/b": "a\nx\n", c: "b\r\n" },
  ),
  "plain names in a deeper file below a wildcard, and a wildcard below plain names": treeOf(["a/b/x", "a/b/c.log", "a/c.log", "b/a/c.log", "b/a/x", "SKILL.md"], { "": "*.log\n", a: "x\n", b: "a/\n", "b/a": "*.log\n" }),
  "more plain names in nested files than they may hold together (the matcher decides)": treeOf(
    ["a/b/x", "a/n3/x", "a/c/n70", "b/x", "n70", "SKILL.md"],
    { "": Array.from({ length: 60 }, (_, i) => `n${i}\n`).join(""), a: Array.from({ length: 10 }, (_, i) => `n${60 + i}\nb/\n`).join("") },
  ),
  "plain names that are only dots, or hold a space": treeOf([".../x", "a b/x", "a/x", "SKILL.md"], { "": "...\na b\n..\n" }),
  "** at the start, in the middle and at the end of a deeper file's pattern": treeOf(["sub/a/x/b", "sub/a/b", "sub/b", "sub/q/a", "sub/a/q", "SKILL.md"], { sub: "**/b\na/**/b\na/**\n!a/q\n" }),
};

describe(".gitignore verdicts, against git", () => {
  for (const [name, example] of Object.entries(EXAMPLES)) {
    it(name, () => {
      expectVerdictsOfGit(example);
      expectDiscoveryOfGit(example);
    });
  }

  it("each path's verdict is git check-ignore's on random trees: nested files, negations, anchors, folder patterns, escapes", () => {
    fc.assert(fc.property(tree, expectVerdictsOfGit), { numRuns: RUNS });
  }, TIMEOUT);

  it("each path's verdict is git check-ignore's on random trees whose .gitignore files hold plain names only", () => {
    fc.assert(fc.property(plainTree, expectVerdictsOfGit), { numRuns: RUNS });
  }, TIMEOUT);

  it("discovery keeps the skills and files git keeps, on random trees", () => {
    fc.assert(fc.property(tree, expectDiscoveryOfGit), { numRuns: RUNS });
  }, TIMEOUT);
});

describe(".gitignore files of plain names in many nested folders", () => {
  it("a path's verdict costs a lookup per name of the path, not one per name and file above it", () => {
    // 256 folders deep (the deepest a walk goes), a .gitignore with a name of its own in every fourth: 64 names in
    // all, as many as nested files of plain names may hold together; the tests a walk counts for them (see
    // MAX_GITIGNORE_TESTS) stay under its limit, so a pull request can make this tree.
    const depth = 256;
    let rules: GitignoreRules;
    for (let level = 0; level < depth; level += 4) {
      const made = withGitignore(rules, Array.from({ length: level }, () => "d").join("/"), Buffer.from(`n${level}\n`));
      if ("patterns" in made || "costlyLine" in made) throw new Error("not honoured");
      rules = made;
    }
    const folder = Array.from({ length: depth }, () => "d").join("/");
    const started = performance.now();
    let ignored = 0;
    for (let file = 0; file < 20_000; file++) if (isIgnored(rules, `${folder}/f${file}`, false)) ignored++;
    const took = performance.now() - started;
    expect(ignored).toBe(0);
    expect(isIgnored(rules, `${folder}/n0`, false)).toBe(true);
    expect(isIgnored(rules, `${folder}/n252`, false)).toBe(true);
    expect(took).toBeLessThan(2_000); // ~5 million lookups; one per name and file above it would be ~160 million
  });
});
