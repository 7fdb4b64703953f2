/**
 * Runs the examples of every docs page as a reader would: each page's marked steps (test/doc-steps.ts) in a
 * project of its own, with skillbake installed. And every fenced block of the README and the docs is accounted
 * for: a step, a block another test checks (the SDK snippets, the prompt formats, the tables checked against the
 * code), or a block marked as not run, saying why.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { glob } from "tinyglobby";
import { describe, expect, it } from "vitest";
import { commands, docSteps, fencedBlocks, outputPattern, Project, runStep, type Run } from "./doc-steps.js";
import { REPO } from "./helpers.js";

const pages = (await glob(["docs/**/*.md"], { cwd: REPO })).sort();
const texts = Object.fromEntries(await Promise.all(["README.md", ...pages].map(async (file) => [file, await readFile(join(REPO, file), "utf8")] as const)));

/** Markers of blocks that other tests check: test/sdk-types.test.ts, test/serve.test.ts, test/publish.test.ts and test/readme.test.ts. */
const CHECKED_ELSEWHERE = /^<!-- (sdk: [a-z]+|serve: server|publish: (config|run)|format-example: [a-z]+) -->$/;

describe("the marker vocabulary", () => {
  const fence = "```";
  it("reads each kind, with its argument and its block (indented blocks unindented)", () => {
    const page = [
      "<!-- tutorial: project -->",
      "<!-- tutorial: setup file skills/a/SKILL.md",
      "---",
      "name: a",
      "---",
      "-->",
      "<!-- tutorial: setup run skills build -->",
      "- item",
      "",
      "  <!-- tutorial: run, exit 1 -->",
      `  ${fence}sh`,
      "  npx skills check",
      `  ${fence}`,
      "<!-- tutorial: session, exit 2 -->",
      `${fence}text`,
      "$ skills nope",
      `${fence}`,
      "<!-- tutorial: not run: a fragment -->",
      `${fence}ts`,
      "x;",
      `${fence}`,
    ].join("\n");
    expect(docSteps(page).map(({ kind, argument, text }) => [kind, argument, text])).toEqual([
      ["project", undefined, ""],
      ["setup file", "skills/a/SKILL.md", "---\nname: a\n---\n"],
      ["setup run", "skills build", ""],
      ["run", "1", "npx skills check\n"],
      ["session", "2", "$ skills nope\n"],
      ["not run", "a fragment", "x;\n"],
    ]);
  });

  it("refuses a marker it does not know, and a block marker without its block", () => {
    expect(() => docSteps("<!-- tutorial: runs -->\n")).toThrow("line 1");
    expect(() => docSteps("text\n<!-- tutorial: output -->\ntext\n")).toThrow("line 2: `output` needs a fenced block");
    expect(() => docSteps("<!-- tutorial: setup file a.md\nno end\n")).toThrow("not closed");
  });

  it("lets `…` stand for text within a line, and a `…` line for any lines", () => {
    expect(outputPattern("Wrote … (1 agent)\n").test("Wrote dist/skills (1 agent)\n")).toBe(true);
    expect(outputPattern("Wrote … (1 agent)\n").test("Wrote a\nb (1 agent)\n")).toBe(false);
    expect(outputPattern("…\nerror\n…\n").test("vite v8\nbuilding\nerror\nat x\nat y\n")).toBe(true);
    expect(outputPattern("…\nerror\n…\n").test("vite v8\nwarning\n")).toBe(false);
  });

  it("counts a block without a marker as unaccounted", () => {
    const blocks = fencedBlocks(`<!-- tutorial: run -->\n${fence}sh\nls\n${fence}\n\n${fence}sh\nrm -rf /\n${fence}\n`);
    expect(blocks).toEqual([{ line: 2, marker: "<!-- tutorial: run -->", previous: "<!-- tutorial: run -->" }, { line: 6, previous: "```" }]);
  });
});

describe("every code block of the README and the docs", () => {
  it.each(["README.md", ...pages])("%s: is run, checked or marked as not run", (file) => {
    const steps = docSteps(texts[file]!);
    const stepLines = new Set(steps.map((step) => step.line));
    const unaccounted = fencedBlocks(texts[file]!)
      .filter((block) => !(block.marker && (CHECKED_ELSEWHERE.test(block.marker) || block.marker.startsWith("<!-- tutorial: "))))
      // Each code's bad and good example: fragments of frontmatter, folders or config (test/rules.test.ts finds them).
      .filter((block) => !(file === "docs/diagnostics.md" && /^(Bad|Good):$/.test(block.previous)))
      .map((block) => `${file}:${block.line}`);
    expect(stepLines.size).toBe(steps.length);
    expect(unaccounted, "mark each block: see \"Examples that run\" in docs/developing.md").toEqual([]);
  });
});

for (const file of pages) {
  const steps = docSteps(texts[file]!).filter((step) => step.kind !== "not run");
  if (steps.length === 0) continue;
  describe(file, () => {
    let project: Project | undefined;
    let last: Run | undefined;
    for (const step of steps) {
      const what = step.kind === "file" || step.kind === "setup file" || step.kind === "excerpt" ? step.argument : step.kind === "run" ? commands(step.text).join(" && ") : step.kind === "setup run" ? step.argument : "";
      it(`line ${step.line}: ${step.kind} ${what ?? ""}`.trimEnd(), async () => {
        if (step.kind === "project") project = undefined;
        project ??= await Project.installed();
        last = await runStep(step, project, last);
      });
    }
  });
}
