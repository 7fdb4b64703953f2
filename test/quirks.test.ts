import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { build, check, type CheckResult } from "../src/index.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

type Tree = Parameters<typeof writeTree>[1];

async function checkTree(tree: Tree, config: object = { agents: { main: { skills: [{ root: "skills" }] } } }): Promise<CheckResult> {
  const dir = await tempDir();
  await writeTree(dir, { "skills.config.json": JSON.stringify(config), ...tree });
  return check({ cwd: dir });
}

const codes = (result: CheckResult) => result.diagnostics.map((d) => d.code);
const names = (result: CheckResult) => result.agents[0]!.skills.map((skill) => skill.name);
const only = (result: CheckResult, code: string) => {
  const hits = result.diagnostics.filter((d) => d.code === code);
  expect(hits).toHaveLength(1);
  return hits[0]!;
};

// Quirks seen across thousands of public SKILL.md files.
describe("real-world quirks", () => {
  it("frontmatter below line 1: missing, and the hint says where it is", async () => {
    const result = await checkTree({ "skills/late/SKILL.md": "\n# Late\n---\nname: late\ndescription: Late.\n---\n" });
    expect(only(result, "frontmatter-missing").hint).toContain("line 3");
    expect(names(result)).toEqual([]);
  });

  it("an opening fence closed only by a Markdown rule far below: the hint says to close it", async () => {
    const text = "---\nname: rule\ndescription: Closed by a rule.\n\n# Rule\n\nSome text.\n\n---\n\nMore text.\n";
    const diagnostic = only(await checkTree({ "skills/rule/SKILL.md": text }), "yaml-invalid");
    expect(diagnostic.line).toBe(7);
    expect(diagnostic.hint).toContain("Add a line `---` after the last field");
  });

  it("an unquoted ': ' in a description: the hint quotes the value", async () => {
    const diagnostic = only(await checkTree({ "skills/colon/SKILL.md": "---\nname: colon\ndescription: Review code. Triggers: review, PR\n---\n" }), "yaml-invalid");
    expect(diagnostic.hint).toBe('The value of `description` contains ": ", which YAML reads as a new mapping. Quote the value: description: "Review code. Triggers: review, PR"');
  });

  it("git conflict markers in the frontmatter", async () => {
    const text = "---\nname: merged\n<<<<<<< HEAD\ndescription: Ours.\n=======\ndescription: Theirs.\n>>>>>>> branch\n---\n";
    const diagnostic = only(await checkTree({ "skills/merged/SKILL.md": text }), "yaml-invalid");
    expect(diagnostic).toMatchObject({ line: 3, message: "the frontmatter contains git merge conflict markers" });
  });

  it("`[a] [b]` argument hints: quote it", async () => {
    const diagnostic = only(await checkTree({ "skills/args/SKILL.md": "---\nname: args\ndescription: Args.\nargument-hint: [file] [mode]\n---\n" }), "yaml-invalid");
    expect(diagnostic.line).toBe(4);
    expect(diagnostic.hint).toContain('Quote the value: argument-hint: "[file] [mode]"');
  });

  it("a YAML list used as a mapping key is reported and ignored; the skill stays", async () => {
    const result = await checkTree({ "skills/keyed/SKILL.md": "---\nname: keyed\ndescription: Keyed.\n[a, b]: value\n---\n" });
    expect(only(result, "field-invalid")).toMatchObject({ line: 4, column: 1 });
    expect(names(result)).toEqual(["keyed"]);
  });

  it("`Name:` instead of `name:`: the folder name is used and the hint names the key", async () => {
    const result = await checkTree({ "skills/cased/SKILL.md": "---\nName: cased\ndescription: Cased.\n---\n" });
    expect(only(result, "name-missing").hint).toBe("Keys are case-sensitive: rename `Name:` on line 2 to `name:`.");
    expect(names(result)).toEqual(["cased"]);
  });

  it("`Name:` beside `name:`, or `Allowed-Tools:` for `allowed-tools:`: field-lookalike, not a silent extra field", async () => {
    const result = await checkTree({
      "skills/twice/SKILL.md": "---\nname: twice\nName: Twice Over\ndescription: Twice.\n---\n",
      "skills/tools/SKILL.md": "---\nname: tools\ndescription: Tools.\nAllowed-Tools: Read Grep\n---\n",
    });
    expect(result.diagnostics.map(({ code, file, line, message, hint }) => ({ code, file, line, message, hint }))).toEqual([
      { code: "field-lookalike", file: "skills/tools/SKILL.md", line: 4, message: "`Allowed-Tools` is not `allowed-tools` (keys are case-sensitive); it is ignored and kept under `extra`", hint: "Rename it to `allowed-tools`." },
      { code: "field-lookalike", file: "skills/twice/SKILL.md", line: 3, message: "`Name` is not `name` (keys are case-sensitive); it is ignored and kept under `extra`", hint: "Remove it: `name` is set too." },
    ]);
    expect(result.agents[0]!.skills.find((skill) => skill.name === "twice")!.extra).toEqual({ Name: "Twice Over" });
  });

  it.each([
    ["My Skill", "my-skill"],
    ["my_skill", "my-skill"],
    ["-leading", "leading"],
    ["PDF", "pdf"],
  ])("name %j is name-invalid, with a suggestion", async (name, suggestion) => {
    const result = await checkTree({ "skills/folder/SKILL.md": `---\nname: "${name}"\ndescription: Odd name.\n---\n` });
    expect(only(result, "name-invalid").hint).toBe(`Use a name like "${suggestion}".`);
    expect(names(result)).toEqual([name]);
  });

  it.each([
    ["NBSP", "\u00a0", "U+00A0"],
    ["zero-width space", "\u200b", "U+200B"],
    ["bidi override", "\u202e", "U+202E"],
  ])("an invisible %s in a name is pointed out", async (_label, char, code) => {
    const result = await checkTree({ "skills/pdf/SKILL.md": `---\nname: pdf${char}\ndescription: Invisible.\n---\n` });
    expect(only(result, "name-invalid").hint).toContain(code);
  });

  it("numbers and booleans where strings belong", async () => {
    const result = await checkTree({
      "skills/numbers/SKILL.md": "---\nname: numbers\ndescription: true\n---\n",
      "skills/version/SKILL.md": "---\nname: version\ndescription: Versioned.\nversion: 1.0\n---\n",
    });
    expect(only(result, "description-type").message).toBe("`description` is a boolean, not a string");
    expect(only(result, "field-invalid").hint).toBe('Quote it: version: "1"');
    expect(names(result)).toEqual(["version"]);
  });

  it("`metadata: null` means not set", async () => {
    const result = await checkTree({ "skills/empty/SKILL.md": "---\nname: empty\ndescription: Empty metadata.\nmetadata:\n---\n" });
    expect(result.diagnostics).toEqual([]);
    expect(result.agents[0]!.skills[0]!.fields).not.toHaveProperty("metadata");
  });

  it("a symlinked skill folder whose name only matches the link is not a mismatch", async () => {
    const result = await checkTree({
      "skills/vendor/pdf-tools-v2/SKILL.md": skillMd("pdf"),
      "skills/pdf": { link: "vendor/pdf-tools-v2" },
    });
    // The real folder is reached too, later in path order; the link's path comes first and wins.
    expect(result.agents[0]!.skills.map((skill) => skill.file)).toEqual(["skills/pdf/SKILL.md"]);
    expect(codes(result)).toEqual([]);
  });

  it("`.agents/skills -> ../skills` and a looping link do not show the catalogue twice", async () => {
    const result = await checkTree(
      {
        "skills/one/SKILL.md": skillMd("one"),
        ".agents/skills": { link: "../skills" },
        "skills/mirror": { link: "." },
      },
      { agents: { main: { skills: [{ root: "." }] } } },
    );
    expect(result.agents[0]!.skills.map((skill) => skill.file)).toEqual(["skills/one/SKILL.md"]);
  });

  it("`skill.md` in lower case is not a skill", async () => {
    const result = await checkTree({ "skills/lower/skill.md": skillMd("lower"), "skills/upper/SKILL.md": skillMd("upper") });
    expect(names(result)).toEqual(["upper"]);
  });

  it("an empty body is fine", async () => {
    const result = await checkTree({ "skills/bare/SKILL.md": "---\nname: bare\ndescription: Bare.\n---\n" });
    expect(result.diagnostics).toEqual([]);
    expect(result.agents[0]!.skills[0]!.body).toBe("");
  });
});

describe("bad input never crashes the compiler", () => {
  it("binary files, empty files, a BOM, CRLF, a 5 MiB SKILL.md and a symlink loop end in diagnostics", async () => {
    const result = await checkTree({
      "skills/binary/SKILL.md": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe]),
      "skills/binary/assets/logo.png": Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x00, 0xff]),
      "skills/empty/SKILL.md": "",
      "skills/bom/SKILL.md": `\ufeff${skillMd("bom")}`,
      "skills/crlf/SKILL.md": skillMd("crlf").replace(/\n/g, "\r\n"),
      "skills/huge/SKILL.md": skillMd("huge", "Huge.", "y".repeat(5 * 1024 * 1024)),
      "skills/loop/a": { link: "../loop" },
      "skills/loop/b": { link: "b" },
    });
    expect(codes(result).sort()).toEqual(["encoding-invalid", "file-too-large", "frontmatter-missing"]);
    expect(result.diagnostics.find((d) => d.code === "frontmatter-missing")!.file).toBe("skills/empty/SKILL.md");
    expect(result.diagnostics.find((d) => d.code === "file-too-large")!.message).toBe("SKILL.md is 5.0 MiB, over the 1 MiB limit");
    expect(names(result)).toEqual(["bom", "crlf"]);
    expect(result.agents[0]!.skills[1]!.body).toBe("# crlf\n\nSteps for crlf.");
  });
});

describe("frontmatter keys that are JavaScript's own names", () => {
  it("keeps `__proto__` and `constructor` as ordinary fields under extra, in the manifest too", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/odd/SKILL.md": "---\nname: odd\ndescription: Odd keys.\n__proto__: polluted\nconstructor: built\n---\n",
    });
    const result = await check({ cwd: dir });
    const extra = result.agents[0]!.skills[0]!.extra;
    expect(Object.getPrototypeOf(extra)).toBe(Object.prototype);
    expect(Object.entries(extra)).toEqual([["__proto__", "polluted"], ["constructor", "built"]]);
    const { stableJson } = await import("../src/bundle/parts.js");
    expect(JSON.parse(stableJson(extra))).toEqual(JSON.parse('{"__proto__":"polluted","constructor":"built"}'));
  });

  it("keeps them as own keys in the generated module's entry too (its records are object literals)", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/odd/SKILL.md": "---\nname: odd\ndescription: Odd keys.\n__proto__: polluted\nconstructor: built\n---\n",
    });
    expect((await build({ cwd: dir })).written).toBe(true);
    const bundle = await import(pathToFileURL(join(dir, "dist/skills/index.js")).href);
    const { extra } = bundle.getSkill("main", "odd");
    expect(Object.getPrototypeOf(extra)).toBe(Object.prototype);
    expect(Object.entries(extra)).toEqual([["__proto__", "polluted"], ["constructor", "built"]]);
  });

  it("keeps a `metadata` key `__proto__` in the typed field, in the manifest and in the module", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/odd/SKILL.md": "---\nname: odd\ndescription: Odd keys.\nmetadata:\n  __proto__: kept\n  author: me\n---\n",
    });
    expect((await build({ cwd: dir })).written).toBe(true);
    const manifest = JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8"));
    expect(Object.entries(manifest.skills[0].fields.metadata)).toEqual([["__proto__", "kept"], ["author", "me"]]);
    expect(manifest.skills[0].extra).toEqual({});
    const bundle = await import(pathToFileURL(join(dir, "dist/skills/index.js")).href);
    const { metadata } = bundle.getSkill("main", "odd").fields;
    expect(Object.getPrototypeOf(metadata)).toBe(Object.prototype);
    expect(Object.entries(metadata)).toEqual([["__proto__", "kept"], ["author", "me"]]);
  });
});

describe("a markdown agent's catalogue", () => {
  it("puts a description of 500,000 spaces between two words on one line in linear time (it took minutes)", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { format: "markdown", skills: [{ root: "skills" }] } } }),
      "skills/wide/SKILL.md": `---\nname: wide\ndescription: "Wide${" ".repeat(500_000)}words."\n---\nBody\n`,
    });
    const started = performance.now();
    expect((await build({ cwd: dir })).written).toBe(true);
    expect(performance.now() - started).toBeLessThan(5_000);
    const prompt = await readFile(join(dir, "dist/skills/prompts/main.txt"), "utf8");
    expect(prompt).toContain(`- wide: Wide${" ".repeat(500_000)}words.`);
  });
});
