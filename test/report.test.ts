import { statSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { main } from "../src/cli/main.js";
import type { Diagnostic } from "../src/compile/diagnostics.js";
import { formatPretty, readSourceLines, SHOWN_PER_FILE_AND_CODE } from "../src/cli/report.js";
import { styleFor } from "../src/compile/terminal.js";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const plain = styleFor({ isTTY: false }, {});

/** The mistakes of a first hour: each diagnostic must say where, what, and how to fix it. */
async function brokenProject(): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, {
    "skills.config.json": JSON.stringify({ agents: { assistant: { skills: [{ root: "skills", available: ["*", "release-*"] }] } } }),
    "skills/good/SKILL.md": skillMd("good"),
    // An unquoted ": " inside the description.
    "skills/changelog/SKILL.md": '---\nname: changelog\ndescription: Draft release notes. Use when asked: "what changed?"\n---\n\nBody.\n',
    // No description, a name that differs from the folder, and Windows line ends.
    "skills/pdf/SKILL.md": "---\r\nname: PDF Tools\r\nlicense: MIT\r\n---\r\n\r\nBody.\r\n",
    // A name that is a number, and a field of the wrong type.
    "skills/numbers/SKILL.md": "---\nname: 42\ndescription: Numbers.\n---\nBody.\n",
    "skills/tagged/SKILL.md": "---\nname: tagged\ndescription: Tags.\ntags: 7\n---\nBody.\n",
    // No frontmatter at all.
    "skills/notes/SKILL.md": "# Notes\n\nJust text.\n",
  });
  return dir;
}

describe("pretty diagnostics", () => {
  it("group per file, quote the line with a caret at the column, keep the hint, and end with counts (colour off)", async () => {
    const dir = await brokenProject();
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe("");
    await expect(run.stderr).toMatchFileSnapshot("__snapshots__/check-errors.txt");
  });

  it("frame a line with tabs and a long line so the caret stays under the column", () => {
    const diagnostics: Diagnostic[] = [
      { code: "yaml-invalid", severity: "error", message: "tab", file: "a/SKILL.md", line: 1, column: 3 },
      { code: "description-too-long", severity: "warn", message: "long", file: "b/SKILL.md", line: 2, column: 200 },
    ];
    const long = `description: ${"x".repeat(186)}Y${"z".repeat(200)}`;
    const text = formatPretty(diagnostics, plain, new Map([["a/SKILL.md", ["\t\tkey: value"]], ["b/SKILL.md", ["---", long]]]));
    const lines = text.split("\n");
    // Tabs are copied into the caret line, so the caret lands under the third character however tabs expand.
    expect(lines[2]).toBe("    1 | \t\tkey: value");
    expect(lines[3]).toBe("      | \t\t^");
    // A long line is cut around the column, marked with "…" on both sides, the caret under the character.
    const frame = lines.find((line) => line.startsWith("    2 | "))!;
    const caret = lines[lines.indexOf(frame) + 1]!;
    expect(frame.startsWith("    2 | …")).toBe(true);
    expect(frame.endsWith("…")).toBe(true);
    expect(frame.length).toBeLessThan(140);
    expect(frame[caret.indexOf("^")]).toBe("Y");
  });

  it("print 200,000 findings of one file (a suppressions file a pull request filled) without exceeding the call stack: the first 100 of a code, then their count", () => {
    const count = 200_000;
    const diagnostics: Diagnostic[] = Array.from({ length: count }, (_, index) => ({ code: "suppression-stale", severity: "warn", file: "skills-suppressions.json", line: 3 * index + 2, column: 5, message: `stale ${index}` }));
    diagnostics.push({ code: "yaml-invalid", severity: "error", file: "skills-suppressions.json", line: 1, column: 1, message: "other" });
    const lines = formatPretty(diagnostics, plain).split("\n");
    expect(lines[0]).toBe("skills-suppressions.json");
    expect(lines).toContain(`  2:5    warning  stale 0  [suppression-stale]`);
    expect(lines).toContain(`  299:5  warning  stale 99  [suppression-stale]`);
    expect(lines).toContain(`  1:1    error    other  [yaml-invalid]`);
    expect(lines.filter((line) => line.includes("[suppression-stale]"))).toHaveLength(SHOWN_PER_FILE_AND_CODE);
    expect(lines.at(-1)).toBe("  … 199,900 more suppression-stale warnings in this file (`--format json` lists every one)");
  });

  it("quote files as the parser read them: BOM removed, CR and CRLF as line breaks; nothing for unreadable or non-UTF-8 files", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "bom/SKILL.md": "\ufeff---\rname: x\r\n---\n",
      "latin1/SKILL.md": new Uint8Array([0x2d, 0x2d, 0x2d, 0x0a, 0xe9, 0x0a]),
    });
    const at = (file: string): Diagnostic => ({ code: "yaml-invalid", severity: "error", message: "m", file, line: 2, column: 1 });
    const verified = new Map(["bom/SKILL.md", "latin1/SKILL.md"].map((file) => [join(dir, file), statSync(join(dir, file), { bigint: true })]));
    const sources = readSourceLines([at("bom/SKILL.md"), at("latin1/SKILL.md"), at("missing/SKILL.md")], dir, verified);
    expect(sources.get("bom/SKILL.md")).toEqual(["---", "name: x", "---", ""]);
    expect([...sources.keys()]).toEqual(["bom/SKILL.md"]);
  });
});

describe("file and folder names with control and bidi characters", () => {
  /**
   * A skill folder whose name would erase a line (ESC [2K), start a forged one and reverse what follows (U+202E);
   * its "%", "," and ":" are for GitHub's escapes.
   */
  const folder = "new\nline\u001b[2K%,:café\u202e日本";
  const shown = "new\\nline\\x1b[2K%,:café\\u202e日本";
  async function hostileProject(): Promise<string> {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      [`skills/${folder}/SKILL.md`]: "---\nname: forged\n---\nBody\n",
    });
    return dir;
  }

  it("pretty: the header, messages and hints show them escaped, other Unicode as it is", async () => {
    const run = await runCli(["check"], { cwd: await hostileProject() });
    expect(run.code).toBe(1);
    expect(run.stderr.split("\n")).toEqual([
      `skills/${shown}/SKILL.md`,
      "  1:1  error    no `description` in the frontmatter  [description-missing]",
      "    1 | ---",
      "      | ^",
      "    hint: Add `description:` saying what the skill does and when to use it; agents choose skills by it.",
      `  2:7  warning  name "forged" does not match its folder "${shown}"  [name-mismatch]`,
      "    2 | name: forged",
      "      |       ^",
      `    hint: Rename the folder to "forged" or set \`name: ${shown}\`.`,
      "",
      "1 error, 1 warning; check failed (1 agent, 1 skill)",
      "",
    ]);
  });

  it("github: the file property and the message show them escaped, then GitHub's own escapes", async () => {
    const run = await runCli(["check", "--format", "github"], { cwd: await hostileProject() });
    const file = "skills/new\\nline\\x1b[2K%25%2C%3Acafé\\u202e日本/SKILL.md";
    const inMessage = "new\\nline\\x1b[2K%25,:café\\u202e日本";
    expect(run.stderr.split("\n")).toEqual([
      `::error file=${file},line=1,col=1,title=description-missing::no \`description\` in the frontmatter%0AAdd \`description:\` saying what the skill does and when to use it; agents choose skills by it.`,
      `::warning file=${file},line=2,col=7,title=name-mismatch::name "forged" does not match its folder "${inMessage}"%0ARename the folder to "forged" or set \`name: ${inMessage}\`.`,
      "",
    ]);
  });
});

describe("source lines with control and bidi characters", () => {
  it("a code frame shows them escaped, tabs as they are, and the caret under the same character", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills", inline: ["*"] }] } } }),
      // ESC [2K would erase the frame's line, U+202E reverse it; `</skill>` sits after both, past a tab.
      "skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Ships\u001b[2K to prod\u202e safely\n---\nIntro.\n\t\u001b[31m\u202e </skill> here\n",
    });
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stderr.split("\n")).toEqual([
      "skills/deploy/SKILL.md",
      "  3:14  warning  `description` contains a control character (U+001B): text a reader does not see, or sees reordered, reaches the model as it is  [description-invisible]",
      "    3 | description: Ships\\x1b[2K to prod\\u202e safely",
      "      |              ^",
      "    hint: Retype the description as plain text; line breaks and tabs are fine.",
      '  6:9   warning  agent "main" inlines "deploy", whose body contains `</skill>`: it ends the skill\'s element early, and what follows reads as outside the skill  [body-closes-tag]',
      "    6 | \t\\x1b[31m\\u202e </skill> here",
      "      | \t               ^",
      '    hint: Reword it (write "&lt;/skill&gt;" or describe the tag in words), or make the skill available rather than inline. `rules: { "body-closes-tag": "error" }` makes builds refuse such skills.',
      "",
      "Checked 1 agent, 1 skill; 0 errors, 2 warnings",
      "",
    ]);
  });
});

describe("--max-warnings", () => {
  it("exits 1 only when the warnings exceed N, and says so; build then writes nothing", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/one/SKILL.md": skillMd("other-one"),
      "skills/two/SKILL.md": skillMd("other-two"),
    });
    expect((await runCli(["check", "--max-warnings", "2"], { cwd: dir })).code).toBe(0);
    const over = await runCli(["check", "--max-warnings", "1"], { cwd: dir });
    expect(over.code).toBe(1);
    expect(over.stderr).toContain("0 errors, 2 warnings (--max-warnings allows 1); check failed (1 agent, 2 skills)");
    const build = await runCli(["build", "--max-warnings", "0"], { cwd: dir });
    expect(build.code).toBe(1);
    expect(build.stderr).toContain("nothing written");
    const bad = await runCli(["check", "--max-warnings", "two"], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--max-warnings takes a whole number");
  });
});

describe("progress", () => {
  /** A stream that records what is written, claiming to be a terminal or not. */
  function stream(isTTY: boolean) {
    const chunks: string[] = [];
    const writable = new Writable({
      write(chunk, _encoding, callback) {
        chunks.push(String(chunk));
        callback();
      },
    });
    return Object.assign(writable, { isTTY, text: () => chunks.join("") });
  }

  it("is shown on a terminal for runs over 1,000 skills, cleared before the report, and never in a pipe", async () => {
    const dir = await tempDir();
    // A catalogue of 1,001 skills makes a prompt over prompt-too-long's 100,000 characters: its warning is not what this shows.
    const tree: Record<string, string> = { "skills.config.json": JSON.stringify({ rules: { "prompt-too-long": "off" }, agents: { main: { skills: [{ root: "skills" }] } } }) };
    for (let i = 0; i < 1001; i++) tree[`skills/s${i}/SKILL.md`] = skillMd(`s${i}`);
    await writeTree(dir, tree);

    const terminal = stream(true);
    expect(await main(["check"], { stdout: stream(true), stderr: terminal, env: { NO_COLOR: "1" }, cwd: dir })).toBe(0);
    expect(terminal.text()).toContain("\r\u001b[Kchecking skills: 1001/1001 (100%)");
    expect(terminal.text()).toMatch(/\r\u001b\[KChecked 1 agent, 1001 skills; 0 errors, 0 warnings\n$/);

    const pipe = stream(false);
    await main(["check"], { stdout: stream(false), stderr: pipe, env: {}, cwd: dir });
    expect(pipe.text()).toBe("Checked 1 agent, 1001 skills; 0 errors, 0 warnings\n");

    const small = await tempDir();
    await writeTree(small, { "skills.config.json": tree["skills.config.json"]!, "skills/one/SKILL.md": skillMd("one") });
    const quiet = stream(true);
    await main(["check"], { stdout: stream(true), stderr: quiet, env: { NO_COLOR: "1" }, cwd: small });
    expect(quiet.text()).toBe("Checked 1 agent, 1 skill; 0 errors, 0 warnings\n");
  });
});

describe("pretty diagnostics, in process", () => {
  const diagnostics: Diagnostic[] = [
    { code: "name-invalid", severity: "error", message: "bad\nname", file: "a/SKILL.md", line: 2, column: 7, hint: "use\u001b lower" },
    { code: "name-mismatch", severity: "warn", message: "mismatch", file: "a/SKILL.md", line: 2, column: 7 },
    { code: "name-too-long", severity: "warn", message: "long", file: "a/SKILL.md", line: 2, column: 1 },
    { code: "field-unknown", severity: "warn", message: "x", file: "a/SKILL.md", line: 10 },
    { code: "root-missing", severity: "warn", message: "no root", file: "b\u202e/x" },
    { code: "pattern-unmatched", severity: "warn", message: "nothing" },
  ];
  const sources = new Map([["a/SKILL.md", ["---", "name: Bad_Name", "---"]]]);

  it("groups per file with aligned positions, one frame per spot, hints, and names, messages and hints escaped", () => {
    expect(formatPretty(diagnostics, plain, sources)).toBe(
      [
        "a/SKILL.md",
        "  2:7   error    bad\\nname  [name-invalid]",
        "    2 | name: Bad_Name",
        "      |       ^",
        "    hint: use\\x1b lower",
        "  2:7   warning  mismatch  [name-mismatch]",
        "  2:1   warning  long  [name-too-long]",
        "    2 | name: Bad_Name",
        "      | ^",
        "  10:1  warning  x  [field-unknown]",
        "",
        "b\\u202e/x",
        "  warning  no root  [root-missing]",
        "",
        "  warning  nothing  [pattern-unmatched]",
      ].join("\n"),
    );
  });

  it("a frame for each line, though the column is the same; none for a file not read; every finding without a file kept", () => {
    const more: Diagnostic[] = [
      { code: "name-invalid", severity: "error", message: "one", file: "a/SKILL.md", line: 1, column: 2 },
      { code: "name-invalid", severity: "error", message: "two", file: "a/SKILL.md", line: 2, column: 2 },
      { code: "name-invalid", severity: "error", message: "unread", file: "c/SKILL.md", line: 1, column: 1 },
      { code: "pattern-unmatched", severity: "warn", message: "first" },
      { code: "pattern-unmatched", severity: "warn", message: "second" },
    ];
    expect(formatPretty(more, plain, sources).split("\n")).toEqual([
      "a/SKILL.md",
      "  1:2  error    one  [name-invalid]",
      "    1 | ---",
      "      |  ^",
      "  2:2  error    two  [name-invalid]",
      "    2 | name: Bad_Name",
      "      |  ^",
      "",
      "c/SKILL.md",
      "  1:1  error    unread  [name-invalid]",
      "",
      "  warning  first  [pattern-unmatched]",
      "  warning  second  [pattern-unmatched]",
    ]);
  });

  it("colours severities, positions, codes and the file on a terminal", () => {
    const text = formatPretty(diagnostics.slice(0, 2), styleFor({ isTTY: true }, {}), sources).split("\n");
    expect(text[0]).toBe("\u001b[1ma/SKILL.md\u001b[22m");
    expect(text[1]).toBe("  \u001b[2m2:7\u001b[22m  \u001b[31merror  \u001b[39m  bad\\nname  \u001b[2m[name-invalid]\u001b[22m");
    expect(text.at(-1)).toContain("\u001b[33mwarning\u001b[39m");
  });

  it("cuts a frame only past 120 characters, keeping the line's start unless the column is past the 100th", () => {
    const line = Array.from({ length: 121 }, (_, i) => String.fromCharCode(48 + (i % 43))).join("");
    const frame = (source: string, column: number) => formatPretty([{ code: "yaml-invalid", severity: "error", message: "m", file: "f", line: 1, column }], plain, new Map([["f", [source]]])).split("\n").slice(2);
    expect(frame(line.slice(0, 120), 120)).toEqual([`    1 | ${line.slice(0, 120)}`, `      | ${" ".repeat(119)}^`]);
    expect(frame(line, 101)).toEqual([`    1 | ${line.slice(0, 120)}…`, `      | ${" ".repeat(100)}^`]);
    expect(frame(line, 102)).toEqual([`    1 | …${line.slice(1)}`, `      | ${" ".repeat(101)}^`]);
    expect(frame(line.slice(0, 110), 105)).toEqual([`    1 | ${line.slice(0, 110)}`, `      | ${" ".repeat(104)}^`]);
  });
});
