/**
 * `--fix`: the fixes that cannot change what a SKILL.md means, written byte for byte around them, never through a
 * link or over a file that changed since it was read.
 */
import { readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { lstat, readFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { check } from "../src/api.js";
import { parseSkillFile } from "../src/compile/parse.js";
import { fixFiles, fixTargets } from "../src/lint/files.js";
import { fixSkillFile } from "../src/lint/fix.js";
import { runCli, tempDir, writeTree } from "./helpers.js";

const encode = (text: string) => new TextEncoder().encode(text);
const decode = (bytes: Uint8Array) => new TextDecoder("utf-8", { ignoreBOM: true }).decode(bytes);
const fix = (text: string, folder = "my-skill") => {
  const fixed = fixSkillFile(encode(text), folder);
  return { text: decode(fixed.bytes), fixes: fixed.fixes.map(({ code, field, line, column, message }) => ({ code, field, line, column, message })) };
};

describe("fixSkillFile", () => {
  it("quotes a value that holds `: `, as the hint spells it, and says what it did", () => {
    const { text, fixes } = fix('---\nname: my-skill\ndescription: Drafts notes. Use when asked: "what changed?"\n---\n\n# Notes\n');
    expect(text).toBe('---\nname: my-skill\ndescription: "Drafts notes. Use when asked: \\"what changed?\\""\n---\n\n# Notes\n');
    expect(fixes).toEqual([{ code: "yaml-invalid", field: "description", line: 3, column: 14, message: 'quoted the value of `description` (it contains ": ")' }]);
  });

  it("quotes a value that starts with an indicator, leaving an open list of tools alone", () => {
    expect(fix("---\nname: my-skill\ndescription: [broken\nlicense: MIT\n---\nBody\n").text).toBe('---\nname: my-skill\ndescription: "[broken"\nlicense: MIT\n---\nBody\n');
    expect(fix("---\nname: my-skill\ndescription: *important* notes\n---\nBody\n").text).toContain('description: "*important* notes"');
    expect(fix("---\nname: my-skill\ndescription: Tools.\nallowed-tools: [Read, Edit\n---\nBody\n").fixes).toEqual([]);
  });

  it("adds a missing name, or sets an empty one, to the folder's name, quoted where YAML needs it", () => {
    expect(fix("---\ndescription: Does things.\n---\nBody\n").text).toBe("---\nname: my-skill\ndescription: Does things.\n---\nBody\n");
    expect(fix("---\nname:   # later\ndescription: Does things.\n---\nBody\n").text).toBe("---\nname: my-skill # later\ndescription: Does things.\n---\nBody\n");
    expect(fix('---\nname: ""\ndescription: Does things.\n---\nBody\n').fixes[0]?.message).toBe("set `name: my-skill`, the folder's name, which the skill already goes by");
    expect(fix("---\ndescription: Does things.\n---\nBody\n", "2024").text).toBe('---\nname: "2024"\ndescription: Does things.\n---\nBody\n');
  });

  it("keeps a comment after an empty name as the plain pattern did, and reads a line of many blanks in one pass", () => {
    // The plain pattern, /^name:[ \t]*(?:""|''|~|null|Null|NULL)?([ \t]+#.*)?[ \t]*$/, kept group 1 after the name.
    expect(fix("---\nname: ~   # later\ndescription: Does things.\n---\nBody\n").text).toContain("name: my-skill   # later\n");
    expect(fix("---\nname:\t\t#c\ndescription: Does things.\n---\nBody\n").text).toContain("name: my-skill\t#c\n");
    expect(fix("---\nname: null\ndescription: Does things.\n---\nBody\n").text).toContain("name: my-skill\n");
    // A null whose blanks the plain pattern tried every way of splitting between its three runs: minutes for a megabyte.
    const started = performance.now();
    const { text } = fix(`---\nname:${" ".repeat(500_000)}!!null\ndescription: Does things.\n---\nBody\n`);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(text).toBe(`---\nname:${" ".repeat(500_000)}!!null\ndescription: Does things.\n---\nBody\n`); // not an empty name the fix knows
    // Every line of a frontmatter YAML fails on is tried as a value to quote: that pattern took 3 s for 3,000 blanks.
    const misread = `---\nname: my-skill\ndescription: Does things.\nk:${" ".repeat(300_000)}x\u2028y: z\nbad: [\n---\nBody\n`;
    const again = performance.now();
    expect(fix(misread).text).toBe(misread);
    expect(performance.now() - again).toBeLessThan(2_000);
  });

  it("leaves a name alone that a lookalike key may hold, and a name that is set", () => {
    expect(fix("---\nName: other\ndescription: Does things.\n---\nBody\n").fixes).toEqual([]);
    expect(fix("---\nname: Odd Name!\ndescription: Does things.\n---\nBody\n").fixes).toEqual([]);
  });

  it("keeps a BOM, CRLF line ends, comments and the body's bytes", () => {
    const text = "\ufeff---\r\n# why: quoted later\r\ndescription: Use it: now\r\ntags: [a, b]\r\n---\r\nBody: with: colons\r\n\r\n";
    expect(fix(text).text).toBe("\ufeff---\r\nname: my-skill\r\n# why: quoted later\r\ndescription: \"Use it: now\"\r\ntags: [a, b]\r\n---\r\nBody: with: colons\r\n\r\n");
  });

  it("keeps no fix that would change another field: a name line above an indented mapping would swallow it", () => {
    expect(fix("---\n  description: Indented, as YAML allows.\n---\nBody\n").fixes).toEqual([]);
  });

  it("changes nothing in a file that has nothing to fix, or that is not UTF-8", () => {
    const valid = encode("---\nname: my-skill\ndescription: Fine.\n---\nBody\n");
    expect(fixSkillFile(valid, "my-skill").bytes).toBe(valid);
    const latin1 = Uint8Array.from([...encode("---\ndescription: caf"), 0xe9, ...encode("\n---\n")]);
    expect(fixSkillFile(latin1, "my-skill").fixes).toEqual([]);
  });
});

/** A top-level frontmatter entry: its lines, and whether it is text `--fix` should quote. */
const entry = fc.oneof(
  fc.record({ key: fc.constantFrom("description", "license", "compatibility", "model"), text: fc.constantFrom("Plain text.", "Use when: asked", "[draft", "*bold* claim", "ends in:", 'says "hi": twice', "back\\slash: here") }).map(({ key, text }) => [`${key}: ${text}`]),
  fc.constantFrom(["tags: [a, b]"], ["tags:", "  - one", "  - two"], ["metadata:", "  author: me", '  version: "1.0"'], ["x-note: 42"], ["# a comment: with colon"], [""], ['version: "2"'], ["user-invocable: false"]),
);

const skillFile = fc.record({
  name: fc.constantFrom<string[][]>([], [["name: my-skill"]], [["name:"]], [["name: Other Name"]]),
  entries: fc.array(entry, { maxLength: 6 }),
  eol: fc.constantFrom("\n", "\r\n"),
  bom: fc.boolean(),
  body: fc.string({ unit: "grapheme", maxLength: 60 }),
});

describe("--fix keeps the meaning", () => {
  it("never changes the parsed value of a field it does not fix, nor one byte of the body (property)", () => {
    fc.assert(
      fc.property(skillFile, ({ name, entries, eol, bom, body }) => {
        // Keys once each: a repeated key is its own failure.
        const seen = new Set<string>();
        const lines = [...name, ...entries].filter((lines) => {
          const key = /^([\w-]+):/.exec(lines[0]!)?.[1];
          if (key === undefined) return true;
          if (seen.has(key)) return false;
          seen.add(key);
          return true;
        });
        const frontmatter = `${bom ? "\ufeff" : ""}---${eol}${lines.flat().map((line) => line + eol).join("")}---${eol}`;
        const bytes = encode(frontmatter + body);
        const fixed = fixSkillFile(bytes, "my-skill");
        const after = decode(fixed.bytes);
        expect(after.endsWith(`---${eol}${body}`)).toBe(true);
        expect(fixed.bytes.subarray(fixed.bytes.length - encode(body).length)).toEqual(encode(body));
        const before = new Map(parseSkillFile("SKILL.md", bytes, true).fields?.map((field) => [field.key, field.value]));
        const now = new Map(parseSkillFile("SKILL.md", fixed.bytes, true).fields?.map((field) => [field.key, field.value]));
        const fixedFields = new Set(fixed.fixes.map((applied) => applied.field));
        for (const [key, value] of before) if (!fixedFields.has(key)) expect(now.get(key)).toEqual(value);
        for (const applied of fixed.fixes) {
          // A quoted value reads as the text it showed; a name as the folder's.
          expect(now.get(applied.field)).toEqual(applied.field === "name" ? "my-skill" : before.get(applied.field));
        }
        // What is fixed stays fixed: a second pass has nothing to do.
        expect(fixSkillFile(fixed.bytes, "my-skill").fixes).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });
});

/** A project with one agent over `skills/`. */
async function project(tree: Record<string, string | { link: string }>): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, { "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }), ...tree });
  return dir;
}

const BROKEN = '---\nname: notes\ndescription: Drafts notes. Use when asked: "what changed?"\n---\n\n# Notes\n';

describe("skills check --fix", () => {
  it("writes the fix, lists it, and the check passes", async () => {
    const dir = await project({ "skills/notes/SKILL.md": BROKEN });
    const run = await runCli(["check", "--fix"], { cwd: dir });
    expect(run.stderr).toBe('skills/notes/SKILL.md fixed\n  3:14  quoted the value of `description` (it contains ": ")  [yaml-invalid]\nChecked 1 agent, 1 skill; 0 errors, 0 warnings\n');
    expect(run.code).toBe(0);
    expect(await readFile(join(dir, "skills/notes/SKILL.md"), "utf8")).toContain('description: "Drafts notes. Use when asked: \\"what changed?\\""');
  });

  it("--fix-dry-run prints the diff on stdout and writes nothing", async () => {
    const dir = await project({ "skills/notes/SKILL.md": BROKEN });
    const run = await runCli(["check", "--fix-dry-run"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('--- a/skills/notes/SKILL.md\n+++ b/skills/notes/SKILL.md\n@@ -1,6 +1,6 @@\n ---\n name: notes\n-description: Drafts notes. Use when asked: "what changed?"\n+description: "Drafts notes. Use when asked: \\"what changed?\\""\n');
    expect(run.stderr).toMatch(/^skills\/notes\/SKILL.md would be fixed\n/);
    expect(await readFile(join(dir, "skills/notes/SKILL.md"), "utf8")).toBe(BROKEN);
  });

  it("refuses --fix with --fix-dry-run, --check or --watch (exit 2)", async () => {
    const dir = await project({ "skills/notes/SKILL.md": BROKEN });
    for (const args of [["check", "--fix", "--fix-dry-run"], ["build", "--fix", "--check"], ["build", "--fix", "--watch"]]) {
      const run = await runCli(args, { cwd: dir });
      expect(run.code, args.join(" ")).toBe(2);
    }
    expect(await readFile(join(dir, "skills/notes/SKILL.md"), "utf8")).toBe(BROKEN);
  });

  it("build --fix fixes, then builds", async () => {
    const dir = await project({ "skills/notes/SKILL.md": BROKEN });
    const run = await runCli(["build", "--fix"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(await readFile(join(dir, "dist/skills/prompts/main.txt"), "utf8")).toContain("<name>notes</name>");
  });

  it("does not write through a link, though the skill it leads to is checked", async () => {
    // The link leads to a folder inside the root that discovery does not enter itself (a dot folder).
    const dir = await project({ "skills/.store/notes/SKILL.md": BROKEN, "skills/notes": { link: ".store/notes" } });
    const run = await runCli(["check", "--fix"], { cwd: dir });
    expect(run.stderr).toContain("skills/notes/SKILL.md not fixed: it is reached through a symbolic link; skillbake does not write through links\n");
    expect(run.code).toBe(1);
    expect(await readFile(join(dir, "skills/.store/notes/SKILL.md"), "utf8")).toBe(BROKEN);
    expect((await lstat(join(dir, "skills/notes"))).isSymbolicLink()).toBe(true);
  });

  it("does not write over a file that changed after it was read, and leaves no temporary file", async () => {
    const dir = await project({ "skills/notes/SKILL.md": BROKEN });
    const result = await check({ cwd: dir });
    const edited = `${BROKEN}\nAn edit made meanwhile.\n`;
    const [outcome] = fixFiles(fixTargets(result), { write: true, recover: false, beforeSwap: () => writeFileSync(join(dir, "skills/notes/SKILL.md"), edited) });
    expect(outcome).toMatchObject({ file: "skills/notes/SKILL.md", written: false, notWritten: "it changed after it was read" });
    expect(await readFile(join(dir, "skills/notes/SKILL.md"), "utf8")).toBe(edited);
    expect(readdirSync(join(dir, "skills/notes"))).toEqual(["SKILL.md"]);
  });

  it("does not write a file replaced after discovery, by another file or by a link", async () => {
    for (const replace of ["file", "link"]) {
      const dir = await project({ "skills/notes/SKILL.md": BROKEN, "elsewhere/SKILL.md": BROKEN });
      const result = await check({ cwd: dir });
      const path = join(dir, "skills/notes/SKILL.md");
      if (replace === "file") renameSync(join(dir, "elsewhere/SKILL.md"), path);
      else {
        rmSync(path);
        symlinkSync(join(dir, "elsewhere/SKILL.md"), path);
      }
      const [outcome] = fixFiles(fixTargets(result), { write: true, recover: false });
      expect(outcome, replace).toMatchObject({ written: false, notWritten: replace === "file" ? "it was replaced after it was found" : expect.stringContaining("symbolic link") });
      expect(await readFile(path, "utf8")).toBe(BROKEN);
    }
  });
});
