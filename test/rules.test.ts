/**
 * `skills rules`: every diagnostic code, each with its own docs, and the same table as docs/diagnostics.md.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { docsAddress } from "../src/compile/links.js";
import { RULE_CODES, SKIP_WORDS } from "../src/compile/rules.js";
import { REPO, runCli, tempDir } from "./helpers.js";

const diagnosticsPage = await readFile(join(REPO, "docs/diagnostics.md"), "utf8");

interface Entry {
  code: string;
  severity: string;
  skip: keyof typeof SKIP_WORDS;
  fixable: boolean;
  url: string;
  description: string;
}

async function rules(): Promise<Entry[]> {
  const run = await runCli(["rules", "--format", "json"], { cwd: await tempDir() });
  expect(run).toMatchObject({ code: 0, stderr: "" });
  return JSON.parse(run.stdout);
}

/** The rows of the page's table: code, default, skip, fix, when. */
function tableRows(): string[][] {
  const table = /<!-- diagnostics:start -->\n([\s\S]*?)<!-- diagnostics:end -->/.exec(diagnosticsPage)![1]!;
  return table
    .split("\n")
    .filter((line) => line.startsWith("|"))
    .slice(2)
    .map((row) => row.slice(1, -1).split(/(?<!\\)\|/).map((cell) => cell.trim().replace(/\\\|/g, "|")));
}

describe("skills rules", () => {
  it("lists every code as JSON, each with its default, skip effect, fix and its own docs address", async () => {
    const entries = await rules();
    expect(entries.map((entry) => entry.code)).toEqual(RULE_CODES);
    expect(Object.keys(entries[0]!).sort()).toEqual(["code", "description", "fixable", "severity", "skip", "url"]);
    expect(new Set(entries.map((entry) => entry.url)).size).toBe(entries.length);
    for (const entry of entries) expect(entry.url).toBe(docsAddress(`diagnostics.md#${entry.code}`));
    expect(entries.filter((entry) => entry.fixable).map((entry) => entry.code)).toEqual(["yaml-invalid", "yaml-recovered", "name-missing"]);
  });

  it("gives the same table as docs/diagnostics.md, row for row", async () => {
    const expected = (await rules()).map((entry) => [`[\`${entry.code}\`](#${entry.code})`, entry.severity, SKIP_WORDS[entry.skip], entry.fixable ? "yes" : "", entry.description]);
    expect(tableRows()).toEqual(expected);
  });

  it("has each code's docs where its address points: a section with a bad and a good example", async () => {
    for (const { code } of await rules()) {
      const start = diagnosticsPage.indexOf(`\n### ${code}\n`);
      expect(start, `docs/diagnostics.md has a section for ${code}`).toBeGreaterThan(0);
      const end = diagnosticsPage.indexOf("\n### ", start + 1);
      const section = diagnosticsPage.slice(start, end < 0 ? undefined : end);
      expect(section, code).toMatch(/\nBad:\n\n```[a-z]*\n[\s\S]+?\n```\n\nGood:\n\n```[a-z]*\n[\s\S]+?\n```\n/);
    }
  });

  it("prints a table for people, and refuses another format (exit 2)", async () => {
    const dir = await tempDir();
    const pretty = await runCli(["rules"], { cwd: dir });
    expect(pretty.code).toBe(0);
    for (const code of RULE_CODES) expect(pretty.stdout).toMatch(new RegExp(`^${code} +(error|warn|off) `, "m"));
    expect(pretty.stdout).toMatch(/^yaml-invalid +error +yes +yes +YAML does not parse$/m);
    expect((await runCli(["rules", "--format", "sarif"], { cwd: dir })).code).toBe(2);
  });
});
