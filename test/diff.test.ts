import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { countTokens } from "gpt-tokenizer/encoding/o200k_base";
import { describe, expect, it } from "vitest";
import { BODY_DIFF_LINES, cutLine, diffBundles, diffLines, estimateTokens, LINE_MAX, textChange, unifiedDiff, type AgentDiff } from "../src/review/diff.js";
import { COMMENT_LIMIT, formatDiffJson, formatDiffMarkdown, formatDiffPretty } from "../src/review/diff-format.js";
import { EMPTY_MANIFEST, parseManifest, type ReviewAgent, type ReviewContent, type ReviewManifest, type ReviewSkill } from "../src/review/manifest.js";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const plain = { red: (t: string) => t, yellow: (t: string) => t, dim: (t: string) => t, bold: (t: string) => t };

/** Length of a longest common subsequence, by the textbook recurrence: the oracle for diffLines. */
function lcsLength(a: readonly string[], b: readonly string[]): number {
  const row = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = 0;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = a[i - 1] === b[j - 1] ? diagonal + 1 : Math.max(row[j]!, row[j - 1]!);
      diagonal = above;
    }
  }
  return row[b.length]!;
}

describe("diffLines", () => {
  const lines = fc.array(fc.constantFrom("a", "b", "c", "d", ""), { maxLength: 12 });

  it("rebuilds both sides and keeps a longest common subsequence", () => {
    fc.assert(
      fc.property(lines, lines, (before, after) => {
        const edits = diffLines(before, after);
        expect(edits.filter((edit) => edit.op !== "insert").map((edit) => edit.line)).toEqual(before);
        expect(edits.filter((edit) => edit.op !== "delete").map((edit) => edit.line)).toEqual(after);
        expect(edits.filter((edit) => edit.op === "equal").length).toBe(lcsLength(before, after));
      }),
    );
  });

  it("aligns long texts that differ in a few places exactly: a line inserted near the start of 3,000 and one removed near the end", () => {
    const before = Array.from({ length: 3000 }, (_, i) => `Line ${i} of the instructions.`);
    const after = [...before.slice(0, 5), "An inserted line.", ...before.slice(5, 2994), ...before.slice(2995)];
    const edits = diffLines(before, after);
    expect(edits.filter((edit) => edit.op === "insert").map((edit) => edit.line)).toEqual(["An inserted line."]);
    expect(edits.filter((edit) => edit.op === "delete").map((edit) => edit.line)).toEqual([before[2994]]);
  });

  it("past the work allowed, pairs equal-length sides line by line, and otherwise replaces the changed middle whole", () => {
    const before = Array.from({ length: 3000 }, (_, i) => `line ${i}`);
    const inPlace = before.map((line, i) => (i % 2 === 0 ? `${line} changed` : line));
    const longer = [...inPlace.slice(0, 1500), "inserted", ...inPlace.slice(1500)];
    for (const after of [inPlace, longer]) {
      const edits = diffLines(before, after);
      expect(edits.filter((edit) => edit.op !== "insert").map((edit) => edit.line)).toEqual(before);
      expect(edits.filter((edit) => edit.op !== "delete").map((edit) => edit.line)).toEqual(after);
    }
    expect(diffLines(before, inPlace).filter((edit) => edit.op === "equal")).toHaveLength(1500);
    expect(diffLines(before, longer).filter((edit) => edit.op === "equal")).toHaveLength(1); // the common last line
  });

  it("takes time in proportion to the texts' size when they differ throughout in short lines", () => {
    // 2,000 one-character lines on each side, alike nowhere in order: aligning each pair whole took ~40 ms, and a
    // pull request's manifest may hold thousands of such bodies.
    const body = (step: number, shift: number) => Array.from({ length: 2000 }, (_, i) => String((i * step + shift) % 7)).join("\n");
    const started = performance.now();
    for (let pair = 0; pair < 200; pair++) {
      const { linesAdded, linesRemoved } = textChange(body(1, pair), body(3, pair), "x");
      expect(linesAdded).toBe(linesRemoved);
    }
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it("counts lines added and removed", () => {
    const counts = (before: string, after: string) => {
      const { linesAdded, linesRemoved, diff } = textChange(before, after, "x");
      expect(diff).toBe(unifiedDiff(before, after, { beforeLabel: "x (before)", afterLabel: "x (after)", maxLines: BODY_DIFF_LINES, lineMax: LINE_MAX }));
      return { added: linesAdded, removed: linesRemoved };
    };
    expect(counts("a\nb\nc", "a\nB\nc\nd")).toEqual({ added: 2, removed: 1 });
    expect(counts("", "one")).toEqual({ added: 1, removed: 0 });
    expect(counts("same", "same")).toEqual({ added: 0, removed: 0 });
  });
});

describe("unifiedDiff", () => {
  const before = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "11", "12"].join("\n");

  it("prints hunks with three lines of context, as diff -u does", () => {
    const after = before.replace("2\n", "two\n").replace("11\n", "");
    expect(unifiedDiff(before, after, { beforeLabel: "a.txt", afterLabel: "b.txt" })).toBe(
      ["--- a.txt", "+++ b.txt", "@@ -1,5 +1,5 @@", " 1", "-2", "+two", " 3", " 4", " 5", "@@ -8,5 +8,4 @@", " 8", " 9", " 10", "-11", " 12"].join("\n"),
    );
  });

  it("merges changes whose context overlaps, numbers an empty side from the line before it, and is empty for equal texts", () => {
    expect(unifiedDiff("a\nb", "a\nb", { beforeLabel: "x", afterLabel: "y" })).toBe("");
    expect(unifiedDiff("", "new", { beforeLabel: "x", afterLabel: "y", context: 0 })).toBe("--- x\n+++ y\n@@ -0,0 +1 @@\n+new");
    const after = before.replace("4\n", "four\n").replace("8\n", "eight\n");
    expect(unifiedDiff(before, after, { beforeLabel: "x", afterLabel: "y" }).split("\n").filter((line) => line.startsWith("@@"))).toEqual(["@@ -1,11 +1,11 @@"]);
  });

  it("cuts a long diff after maxLines and says how much it left out", () => {
    const after = before.split("\n").map((line) => `${line}!`).join("\n");
    const text = unifiedDiff(before, after, { beforeLabel: "x", afterLabel: "y", maxLines: 5 }).split("\n");
    expect(text).toEqual(["--- x", "+++ y", "@@ -1,12 +1,12 @@", "-1", "-2", "… 22 more lines of diff"]);
  });
});

/** A manifest's JSON as bundle.ts writes it, built from a compact description of each agent. */
function rawManifest(agents: Record<string, { skills: [name: string, mode: "available" | "inline", description?: string][]; budget?: number; catalogue?: number; prompt?: number }>) {
  const hash = (text: string) => createHash("sha256").update(text).digest("hex");
  const skills = new Map<string, { body: string } & Record<string, unknown>>();
  const entries: Record<string, object> = {};
  for (const [id, agent] of Object.entries(agents)) {
    entries[id] = {
      format: "pi",
      prompt: `prompts/${id}.txt`,
      characters: { prompt: agent.prompt ?? 1000, catalogue: agent.catalogue ?? 800 },
      ...(agent.budget === undefined ? {} : { budget: agent.budget }),
      skills: agent.skills.map(([name, mode]) => ({ name, mode, source: 0, file: `skills/${name}/SKILL.md`, listed: mode === "available" })),
    };
    for (const [name, , description = `Does ${name}.`] of agent.skills) {
      const file = `skills/${name}/SKILL.md`;
      const fields = { name, description, context: "inline", agent: "general-purpose", "user-invocable": true, "disable-model-invocation": false };
      const structure = { files: 1, bytes: 10, folders: {} };
      skills.set(file, { name, description, file, location: file, baseDir: `skills/${name}`, hash: hash(file), fields, extra: {}, body: `# ${name}`, files: [{ path: "SKILL.md", sha256: hash(file), size: 10 }], structure });
    }
  }
  const outputs = Object.fromEntries(Object.entries(agents).map(([id, agent]) => [`prompts/${id}.txt`, hash(String(agent.prompt ?? 1000))]));
  return { $schema: "x", schemaVersion: 1, generator: "skillbake", agents: entries, skills: [...skills.values()], diagnostics: [], hashes: { inputs: hash("inputs"), outputs } };
}

function manifest(agents: Parameters<typeof rawManifest>[0], edit: (raw: ReturnType<typeof rawManifest>) => void = () => {}): ReviewManifest {
  const raw = rawManifest(agents);
  edit(raw);
  return parseManifest(raw, "test");
}

describe("diffBundles", () => {
  it("shows no budget line where neither side sets one", () => {
    const diff = diffBundles(EMPTY_MANIFEST, manifest({ chat: { skills: [["a", "inline"]] } }));
    expect(formatDiffPretty(diff, { before: "a", after: "b" }, plain)).not.toContain("budget");
    expect(diff.agents[0]).toMatchObject({ id: "chat", status: "added", added: [{ name: "a", placement: "inline", file: "skills/a/SKILL.md" }] });
  });

  it("pairs a name selected from two sources in order, and reports a prompt change nothing else explains", () => {
    const before = manifest({ coding: { skills: [["a", "available"]], prompt: 100 } });
    const after = manifest({ coding: { skills: [["a", "available"]], prompt: 101 } });
    const diff = diffBundles(before, after);
    expect(diff.changed).toBe(true);
    expect(formatDiffPretty(diff, { before: "a", after: "b" }, plain).split("\n")).toContain("  ~ Changed the prompt text");
  });

  it("estimates tokens as characters ÷ 4, rounded up", () => {
    expect([0, 1, 4, 5, 1001].map(estimateTokens)).toEqual([0, 1, 1, 2, 251]);
  });

  it("collapses a long description change in <details> and fences text holding backticks", () => {
    const long = "x".repeat(500);
    const before = manifest({ coding: { skills: [["a", "available", "Uses ``` fences."], ["b", "available", "short"]] } });
    const after = manifest({ coding: { skills: [["a", "available", "Uses ```` fences."], ["b", "available", long]] } });
    const markdown = formatDiffMarkdown(diffBundles(before, after), { limit: COMMENT_LIMIT });
    // Every change named first, then the details.
    expect(markdown).toContain("- Changed the description of `a`\n- Changed the description of `b`\n\n#### Details\n");
    expect(markdown).toContain("`coding`: description of `a`\n\n<details><summary>old → new</summary>\n\n`````diff\n- Uses ``` fences.\n+ Uses ```` fences.\n`````\n\n</details>");
    expect(markdown).toContain(`\`coding\`: description of \`b\`\n\n<details><summary>old → new</summary>\n\n\`\`\`diff\n- short\n+ ${long}\n\`\`\`\n\n</details>`);
  });

  it("cuts a long line before escaping it: no escape cut in two, no half of a surrogate pair, and how much was left out", () => {
    const added = (description: string) => {
      const before = manifest({ coding: { skills: [["a", "available", "short"]] } });
      const markdown = formatDiffMarkdown(diffBundles(before, manifest({ coding: { skills: [["a", "available", description]] } })), { limit: COMMENT_LIMIT });
      return markdown.split("\n").find((line) => line.startsWith("+ "));
    };
    // Each BEL shows as four characters: 250 of them would overflow the line, 248 fit beside "ab".
    expect(added(`ab${"\u0007".repeat(2000)}`)).toBe(`+ ab${"\\x07".repeat(248)}… (1,752 more characters)`);
    // The 1,000th code unit is the first half of a pair: the cut goes before the whole pair.
    expect(added(`a${"\u{1F600}".repeat(1000)}`)).toBe(`+ a${"\u{1F600}".repeat(499)}… (1,002 more characters)`);
    expect(added("x".repeat(LINE_MAX))).toBe(`+ ${"x".repeat(LINE_MAX)}`);
    // What fits is measured from the first LINE_MAX characters, not from the whole line's escapes; it fits exactly.
    expect(added(`${"x".repeat(LINE_MAX)}${"\u0007".repeat(1000)}`)).toBe(`+ ${"x".repeat(LINE_MAX)}… (1,000 more characters)`);
    // A pair just past the cut moves nothing.
    expect(added(`${"x".repeat(LINE_MAX + 1)}${"\u{1F600}".repeat(10)}`)).toBe(`+ ${"x".repeat(LINE_MAX)}… (21 more characters)`);
  });

  it("cuts a long body's diff after BODY_DIFF_LINES lines, saying how many more there were", () => {
    const before = manifest({ coding: { skills: [["a", "inline"]] } });
    const lines = Array.from({ length: 100 }, (_, index) => `Step ${index + 1}.`);
    const after = manifest({ coding: { skills: [["a", "inline"]] } }, (raw) => (raw.skills[0]!.body = lines.join("\n")));
    const markdown = formatDiffMarkdown(diffBundles(before, after), { limit: COMMENT_LIMIT });
    const shown = markdown.slice(markdown.indexOf("```diff\n") + 8, markdown.lastIndexOf("\n```")).split("\n");
    expect(shown).toHaveLength(BODY_DIFF_LINES + 1);
    expect(shown.at(-1)).toBe(`… ${100 + 4 - BODY_DIFF_LINES} more lines of diff`);
  });

  it("rejects a manifest it cannot read, naming the field", () => {
    const { hashes: _, ...noHashes } = rawManifest({});
    expect(() => parseManifest(noHashes, "old/manifest.json")).toThrow("old/manifest.json: hashes: expected object, received undefined");
    expect(() => parseManifest({ ...noHashes, schemaVersion: 0 }, "m.json")).toThrow("m.json: schemaVersion 0; this skillbake reads schemaVersion 1: rebuild both bundles with the same skillbake (`skills build --out DIR`) and compare those");
  });
});

describe("skills diff", () => {
  const config = (inline: string[]) => ({
    location: "relative",
    agents: {
      coding: { skills: [{ root: "skills", available: ["*"], inline }] },
      chat: { skills: [{ root: "skills", available: ["gamma"] }] },
    },
  });

  /**
   * Builds a catalogue into `before`, then edits one description, one body, moves one skill inline, adds one, and
   * adds, edits and removes files beside one, into `after`.
   */
  async function beforeAndAfter(): Promise<string> {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify(config([])),
      "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports. Use when asked for an alpha report."),
      "skills/alpha/references/template.md": "# Alpha report\n",
      "skills/alpha/references/old.md": "# Old\n",
      "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks.", "# Beta\n\n1. Check one.\n2. Check two.\n3. Check three."),
      "skills/gamma/SKILL.md": skillMd("gamma", "Explains gamma."),
    });
    expect((await runCli(["build", "--out", "before"], { cwd: dir })).code).toBe(0);
    await writeTree(dir, {
      "skills.config.json": JSON.stringify(config(["beta"])),
      "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha and omega reports. Use when asked for a report."),
      "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks.", "# Beta\n\n1. Check one.\n2. Check 2 twice.\n3. Check three.\n4. Report."),
      "skills/alpha/references/template.md": "# Alpha report, second edition\n",
      "skills/alpha/scripts/check.sh": "#!/bin/sh\n",
      "skills/delta/SKILL.md": skillMd("delta", "Handles delta & <tags>."),
    });
    await rm(join(dir, "skills/alpha/references/old.md"));
    expect((await runCli(["build", "--out", "after"], { cwd: dir })).code).toBe(0);
    return dir;
  }

  it("reports every change per agent in pretty, markdown and json", async () => {
    const dir = await beforeAndAfter();
    const pretty = await runCli(["diff", "before", "after"], { cwd: dir });
    const markdown = await runCli(["diff", "before", "after", "--format", "markdown"], { cwd: dir });
    const json = await runCli(["diff", "before/manifest.json", "after", "--format", "json"], { cwd: dir });
    for (const run of [pretty, markdown, json]) expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });

    const coding = pretty.stdout.split("\n\n").find((section) => section.startsWith("coding:"))!.split("\n");
    expect(coding.slice(0, 8)).toEqual([
      "coding: changed",
      "  + Added delta (listed)",
      "  ~ Moved beta from listed to inline",
      "  ~ Changed the description of alpha",
      "      - Drafts alpha reports. Use when asked for an alpha report.",
      "      + Drafts alpha and omega reports. Use when asked for a report.",
      expect.stringMatching(/^ {2}~ Changed the body of beta: \+2 -1 lines \(sha256 [0-9a-f]{8} → [0-9a-f]{8}\)$/),
      "      --- beta (before)",
    ]);
    // The changed body lines themselves: prompt text a reviewer must read.
    expect(coding.slice(8, 17)).toEqual([
      "      +++ beta (after)",
      "      @@ -1,5 +1,6 @@",
      "       # Beta",
      "       ",
      "       1. Check one.",
      "      -2. Check two.",
      "      +2. Check 2 twice.",
      "       3. Check three.",
      "      +4. Report.",
    ]);
    expect(coding[17]).toBe("  ~ Changed the files of alpha: added scripts/check.sh; removed references/old.md; changed references/template.md");
    expect(markdown.stdout).toContain("`coding`: body of `beta`\n\n<details><summary>old → new</summary>\n\n```diff\n--- beta (before)\n");
    expect(pretty.stdout).toContain("chat: unchanged\n");
    await expect(pretty.stdout).toMatchFileSnapshot("__snapshots__/diff.pretty.txt");
    await expect(markdown.stdout).toMatchFileSnapshot("__snapshots__/diff.markdown.md");
    await expect(json.stdout).toMatchFileSnapshot("__snapshots__/diff.json");

    const report = JSON.parse(json.stdout);
    const before = JSON.parse(await readFile(join(dir, "before/manifest.json"), "utf8"));
    const after = JSON.parse(await readFile(join(dir, "after/manifest.json"), "utf8"));
    // Real counts with no token setting in the config: the tokenizer's count of each side's prompts/coding.txt.
    const tokens = async (side: string) => countTokens(await readFile(join(dir, side, "prompts/coding.txt"), "utf8"));
    expect(report.tokenEncoding).toBe("o200k_base");
    expect(report.agents.find((agent: { id: string }) => agent.id === "coding").prompt).toEqual({
      before: { characters: before.agents.coding.characters.prompt, tokens: await tokens("before") },
      after: { characters: after.agents.coding.characters.prompt, tokens: await tokens("after") },
      changed: true,
    });
    const estimated = JSON.parse((await runCli(["diff", "before", "after", "--format", "json", "--estimate-tokens"], { cwd: dir })).stdout);
    expect(estimated).toMatchObject({ tokenEstimate: "ceil(characters / 4)", tokenEstimateReason: "--estimate-tokens" });
    expect(estimated.agents.find((agent: { id: string }) => agent.id === "coding").prompt.after.tokens).toBe(Math.ceil(after.agents.coding.characters.prompt / 4));
    const prompt = await readFile(join(dir, "after/prompts/coding.txt"), "utf8");
    expect(after.agents.coding.characters.prompt).toBe(prompt.length);
  });

  it("--exit-code exits 1 on a change and 0 without; a missing side is an empty bundle", async () => {
    const dir = await beforeAndAfter();
    expect((await runCli(["diff", "before", "after", "--exit-code"], { cwd: dir })).code).toBe(1);
    expect((await runCli(["diff", "after", "after/manifest.json", "--exit-code"], { cwd: dir })).code).toBe(0);
    const fresh = await runCli(["diff", "no-such-bundle", "after", "--format", "json", "--allow-missing-before"], { cwd: dir });
    expect(fresh.code).toBe(0);
    expect(JSON.parse(fresh.stdout).agents.map((agent: { id: string; status: string }) => [agent.id, agent.status])).toEqual([
      ["chat", "added"],
      ["coding", "added"],
    ]);
  });

  it("--exit-code notices a changed file beside a skill even when no prompt, body or field changed", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha"),
      "skills/alpha/references/guide.md": "# Guide\n",
    });
    expect((await runCli(["build", "--out", "before"], { cwd: dir })).code).toBe(0);
    await writeFile(join(dir, "skills/alpha/references/guide.md"), "# Guide, corrected\n");
    expect((await runCli(["build", "--out", "after"], { cwd: dir })).code).toBe(0);
    const run = await runCli(["diff", "before", "after", "--exit-code"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stdout.split("\n")).toContain("  ~ Changed the files of alpha: changed references/guide.md");
  });

  it("shows the catalogue's characters against the agent's budget before → after", async () => {
    const dir = await tempDir();
    const withBudget = (budget: number) => JSON.stringify({ location: "relative", agents: { coding: { skills: [{ root: "skills" }], budget } } });
    await writeTree(dir, {
      "skills.config.json": withBudget(700),
      "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
      "skills/beta/SKILL.md": skillMd("beta", "Runs beta."),
    });
    expect((await runCli(["build", "--out", "before"], { cwd: dir })).code).toBe(0);
    await writeTree(dir, { "skills.config.json": withBudget(900), "skills/gamma/SKILL.md": skillMd("gamma", "Explains gamma in some depth.") });
    expect((await runCli(["build", "--out", "after"], { cwd: dir })).code).toBe(0);
    const catalogue = async (side: string) => JSON.parse(await readFile(join(dir, side, "manifest.json"), "utf8")).agents.coding.characters.catalogue as number;
    const [before, after] = [await catalogue("before"), await catalogue("after")];
    const state = (used: number, limit: number) => `${used} / ${limit} (${Math.round((used / limit) * 100)}%)`;
    const budget = `${state(before, 700)} → ${state(after, 900)}`;

    const pretty = await runCli(["diff", "before", "after"], { cwd: dir });
    expect(pretty.stdout.split("\n")).toContain(`  budget (catalogue characters): ${budget}`);
    const markdown = await runCli(["diff", "before", "after", "--format", "markdown"], { cwd: dir });
    expect(markdown.stdout).toMatch(new RegExp(`^\\| \`coding\` \\| 1 added \\| .* \\| ${budget.replace(/[()]/g, "\\$&")} \\|$`, "m"));
    const json = JSON.parse((await runCli(["diff", "before", "after", "--format", "json"], { cwd: dir })).stdout);
    expect(json.agents[0].budget).toEqual({ before: { limit: 700, catalogue: before, unit: "characters", dropped: [] }, after: { limit: 900, catalogue: after, unit: "characters", dropped: [] } });
  });

  it("shows control and bidi characters escaped, and no name, description or agent id breaks out of the Markdown", async () => {
    const dir = await tempDir();
    const skill = (name: string, description: string) => `---\nname: ${JSON.stringify(name)}\ndescription: ${JSON.stringify(description)}\n---\nBody\n`;
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skill("alpha", "Plain."),
    });
    expect((await runCli(["build", "--out", "before"], { cwd: dir })).code).toBe(0);
    // A name (its folder's) and a description that would erase a line (ESC [2K) and reverse text (U+202E); the
    // description's lines try to end the Markdown table, fence and <details> (a CR ends a Markdown line too).
    const name = "new\nline\u001b[2K\u202e|`b`";
    await writeTree(dir, {
      [`skills/${name}/SKILL.md`]: skill(name, "Added."),
      "skills/alpha/SKILL.md": skill("alpha", "Ships\u001b[2K to prod\u202e safely | `x`\n</details>\n```\nthen\r</details>\r# Forged\nfive\nsix"),
    });
    expect((await runCli(["build", "--out", "after"], { cwd: dir })).code).toBe(0);

    const pretty = await runCli(["diff", "before", "after"], { cwd: dir });
    expect(pretty.stdout.split("\n")).toEqual([
      "1 of 1 agent changed (before → after)",
      "",
      "main: changed",
      "  + Added new\\nline\\x1b[2K\\u202e|`b` (listed)",
      "  ~ Changed the description of alpha",
      "      - Plain.",
      "      + Ships\\x1b[2K to prod\\u202e safely | `x`",
      "      + </details>",
      "      + ```",
      "      + then\\r</details>\\r# Forged",
      "      + five",
      "      + six",
      "  prompt characters: 495 → 734 (+239)",
      "  tokens (o200k_base): 111 → 204 (+93)",
      "",
    ]);
    const markdown = await runCli(["diff", "before", "after", "--format", "markdown"], { cwd: dir });
    expect(markdown.stdout.split("\n")).toEqual([
      "### Agent prompts: 1 of 1 agent changed",
      "",
      "| agent | changes | prompt characters | tokens (o200k\\_base) | budget (catalogue characters) |",
      "| --- | --- | ---: | ---: | --- |",
      "| `main` | 1 added, 1 description | 495 → 734 (+239) | 111 → 204 (+93) | — |",
      "",
      "#### `main` (changed)",
      "",
      "- Added `` new\\nline\\x1b[2K\\u202e|`b` `` (listed)",
      "- Changed the description of `alpha`",
      "",
      "#### Details",
      "",
      "`main`: description of `alpha`",
      "",
      "<details><summary>old → new</summary>",
      "",
      "````diff",
      "- Plain.",
      "+ Ships\\x1b[2K to prod\\u202e safely | `x`",
      "+ </details>",
      "+ ```",
      "+ then\\r</details>\\r# Forged",
      "+ five",
      "+ six",
      "````",
      "",
      "</details>",
      "",
    ]);
  });

  it("exits 2 with a clear message for a folder that is not a bundle, bad JSON, or two missing sides", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "dist/readme.txt": "not a bundle", "bad.json": "{" });
    const folder = await runCli(["diff", "dist", "dist"], { cwd: dir });
    expect(folder).toMatchObject({ code: 2, stdout: "" });
    expect(folder.stderr.trim()).toBe("skills diff: dist is a folder without a manifest.json; give a bundle folder (an outDir) or a manifest.json");
    const bad = await runCli(["diff", "bad.json", "dist"], { cwd: dir });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^skills diff: bad\.json: not valid JSON/);
    await writeFile(join(dir, "other.json"), JSON.stringify({ schemaVersion: 1 }));
    expect((await runCli(["diff", "other.json", "missing"], { cwd: dir })).stderr).toContain("other.json: $schema: expected string");
    const neither = await runCli(["diff", "a", "b"], { cwd: dir });
    expect(neither).toMatchObject({ code: 2, stdout: "" });
    expect(neither.stderr.trim()).toBe("skills diff: a: no such bundle; give a bundle folder (an outDir) or a manifest.json");
    expect((await runCli(["diff", "a"], { cwd: dir })).code).toBe(2);
  });

  it("exits 2 for a FIFO in place of a manifest, instead of waiting for a writer forever", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "bundle"));
    for (const fifo of ["pipe.json", "bundle/manifest.json"]) execFileSync("mkfifo", [join(dir, fifo)]);
    for (const side of ["pipe.json", "bundle"]) {
      const run = await runCli(["diff", side, "missing"], { cwd: dir });
      expect(run).toMatchObject({ code: 2, stdout: "" });
      expect(run.stderr.trim()).toBe(`skills diff: ${side === "bundle" ? "bundle/manifest.json" : side} is not a regular file; give a bundle folder (an outDir) or a manifest.json`);
    }
  });
});

describe("diffBundles, in process: each kind of change an agent's model sees", () => {
  const skill = (name: string, { description = `Does ${name}.`, body = `# ${name}\n`, fields = new Map(), resources = new Map(), ...over }: Partial<Omit<ReviewSkill, "content"> & ReviewContent> = {}): ReviewSkill => ({
    name,
    file: `skills/${name}/SKILL.md`,
    mode: "available",
    placement: "listed",
    location: `/repo/skills/${name}/SKILL.md`,
    content: { description, body, fields, resources },
    ...over,
  });
  const agent = (skills: ReviewSkill[], over: Partial<ReviewAgent> = {}): ReviewAgent => ({
    format: "pi",
    characters: { prompt: 101, catalogue: 50 },
    context: new Map(),
    notAllowed: new Set(),
    promptHash: "p",
    skills: new Map(skills.map((entry) => [entry.name, entry])),
    ...over,
  });
  const manifest = (agents: Record<string, ReviewAgent>, failed: [string, { code: string; message: string }][] = []): ReviewManifest => ({ agents: new Map(Object.entries(agents)), failed: new Map(failed) });

  it("skills added, removed (by allow, failed, or without a reason), moved, and their descriptions, bodies, locations, files and fields", () => {
    const before = agent([
      skill("a"),
      skill("b"),
      skill("e"),
      skill("d"),
      skill("c", {
        fields: new Map<string, unknown>([["name", "c"], ["description", "old"], ["license", "MIT"], ["metadata", { a: 1, b: 2 }], ["tags", ["x"]], ["gone", 1], ["unset", undefined]]),
        resources: new Map<string, string>([["a.md", "1"], ["b.md", "2"], ["u.md", "3"]]),
      }),
    ]);
    const c = skill("c", {
      placement: "inline",
      description: "Does c, now.",
      location: "/repo/skills/c2/SKILL.md",
      body: "# c\nnew line\n",
      fields: new Map<string, unknown>([["name", "c2"], ["description", "new"], ["license", "MIT"], ["metadata", { b: 2, a: 1 }], ["tags", ["y"]], ["added", true]]),
      resources: new Map<string, string | undefined>([["b.md", "22"], ["c.md", "3"], ["u.md", undefined]]) as Map<string, string>,
    });
    const after = agent([skill("f"), skill("d"), c], { notAllowed: new Set(["skills/a/SKILL.md"]) });
    const diff = diffBundles(manifest({ main: before }), manifest({ main: after }, [["skills/b/SKILL.md", { code: "name-invalid", message: "bad" }]])).agents[0]!;
    expect(diff.status).toBe("changed");
    expect(diff.added).toEqual([{ name: "f", file: "skills/f/SKILL.md", placement: "listed" }]);
    expect(diff.removed).toStrictEqual([
      { name: "a", file: "skills/a/SKILL.md", placement: "listed", reason: { by: "allow" } },
      { name: "b", file: "skills/b/SKILL.md", placement: "listed", reason: { by: "failed", code: "name-invalid", message: "bad" } },
      { name: "e", file: "skills/e/SKILL.md", placement: "listed" },
    ]);
    expect(diff.moved).toEqual([{ name: "c", file: "skills/c/SKILL.md", from: "listed", to: "inline" }]);
    expect(diff.descriptions).toEqual([{ name: "c", before: "Does c.", after: "Does c, now." }]);
    expect(diff.bodies).toEqual([
      { name: "c", before: createHash("sha256").update("# c\n").digest("hex"), after: createHash("sha256").update("# c\nnew line\n").digest("hex"), linesAdded: 1, linesRemoved: 0, diff: unifiedDiff("# c\n", "# c\nnew line\n", { beforeLabel: "c (before)", afterLabel: "c (after)" }) },
    ]);
    expect(diff.locations).toEqual([{ name: "c", before: "/repo/skills/c/SKILL.md", after: "/repo/skills/c2/SKILL.md" }]);
    expect(diff.resources).toEqual([{ name: "c", added: ["c.md"], removed: ["a.md"], changed: ["b.md"] }]);
    expect(diff.fields).toStrictEqual([
      { name: "c", changes: [{ field: "added", after: true }, { field: "gone", before: 1 }, { field: "tags", before: ["x"], after: ["y"] }, { field: "unset", before: undefined }] },
    ]);
  });

  it("an agent's status: added, removed (its skills without reasons), unchanged, or changed by any one thing", () => {
    const base = agent([skill("a")]);
    const failed: [string, { code: string; message: string }][] = [["skills/a/SKILL.md", { code: "name-invalid", message: "bad" }]];
    const gone = diffBundles(manifest({ main: agent([skill("a")], { notAllowed: new Set(["skills/a/SKILL.md"]) }) }), manifest({}, failed));
    expect(gone.changed).toBe(true);
    expect(gone.agents[0]).toMatchObject({ id: "main", status: "removed" });
    expect(gone.agents[0]!.removed).toStrictEqual([{ name: "a", file: "skills/a/SKILL.md", placement: "listed" }]);
    expect(diffBundles(manifest({}), manifest({ main: base })).agents[0]).toMatchObject({ status: "added", added: [{ name: "a" }] });
    const same = diffBundles(manifest({ main: base }), manifest({ main: agent([skill("a")]) }));
    expect([same.changed, same.agents[0]!.status]).toEqual([false, "unchanged"]);
    const changes: [string, Partial<ReviewAgent>, (diff: AgentDiff) => unknown, unknown][] = [
      ["the prompt", { promptHash: "q" }, (diff) => diff.prompt.changed, true],
      ["the format", { format: "markdown" }, (diff) => diff.format, { before: "pi", after: "markdown" }],
      ["a tool description added", { toolDescription: "Load one." }, (diff) => diff.toolDescription, { after: "Load one.", linesAdded: 1, linesRemoved: 0, diff: "--- tool description (before)\n+++ tool description (after)\n@@ -0,0 +1 @@\n+Load one." }],
      ["a context file", { context: new Map([["AGENTS.md", "h"]]) }, (diff) => diff.context, { added: ["AGENTS.md"], removed: [], changed: [] }],
      ["a budget", { budget: 1000 }, (diff) => diff.budget, { after: { limit: 1000, catalogue: 50, unit: "characters", dropped: [] } }],
    ];
    for (const [what, over, shown, expected] of changes) {
      const diff = diffBundles(manifest({ main: base }), manifest({ main: agent([skill("a")], over) }));
      expect([diff.changed, diff.agents[0]!.status], what).toEqual([true, "changed"]);
      expect(shown(diff.agents[0]!), what).toEqual(expected);
    }
    const removedTool = diffBundles(manifest({ main: agent([], { toolDescription: "Read one." }) }), manifest({ main: agent([]) })).agents[0]!;
    expect(removedTool.toolDescription).toStrictEqual({ before: "Read one.", linesAdded: 0, linesRemoved: 1, diff: "--- tool description (before)\n+++ tool description (after)\n@@ -1 +0,0 @@\n-Read one." });
  });

  it("a changed skill tool's description as a line diff: the lines of the skills that changed, not the whole catalogue", () => {
    const names = Array.from({ length: 2000 }, (_, index) => `skill-${String(index).padStart(4, "0")}`);
    const tool = (description: (name: string) => string) =>
      ["Load a skill.", "", "<available_skills>", ...names.flatMap((name) => ["  <skill>", `    <name>${name}</name>`, `    <description>${description(name)}</description>`, "  </skill>"]), "</available_skills>"].join("\n");
    const before = tool((name) => `Does ${name}.`);
    const after = tool((name) => (name === "skill-0100" || name === "skill-1900" ? `Does ${name}, and more.` : `Does ${name}.`));
    const bundles = diffBundles(manifest({ main: agent([], { toolDescription: before }) }), manifest({ main: agent([], { toolDescription: after }) }));
    const { toolDescription } = bundles.agents[0]!;
    expect(toolDescription).toMatchObject({ before, after, linesAdded: 2, linesRemoved: 2 });
    const lines = toolDescription!.diff.split("\n");
    expect(lines.filter((line) => /^[-+] /.test(line))).toEqual([
      "-    <description>Does skill-0100.</description>",
      "+    <description>Does skill-0100, and more.</description>",
      "-    <description>Does skill-1900.</description>",
      "+    <description>Does skill-1900, and more.</description>",
    ]);
    expect(lines.filter((line) => line.startsWith("@@"))).toHaveLength(2);
    const pretty = formatDiffPretty(bundles, { before: "a", after: "b" }, plain);
    expect(pretty).toContain("  ~ Changed the skill tool's description: +2 -2 lines\n      --- tool description (before)\n");
    expect(pretty.split("\n").length).toBeLessThan(40);
    expect(pretty).not.toContain("skill-1000");
  });

  it("the size of a skill tool's description, which the model reads instead of a catalogue in the prompt, beside the prompt's", () => {
    const before = manifest({ main: agent([], { toolDescription: "a".repeat(400), characters: { prompt: 0, catalogue: 0 } }), chat: agent([]) });
    const after = manifest({ main: agent([], { toolDescription: "a".repeat(480), characters: { prompt: 0, catalogue: 0 } }), chat: agent([]) });
    // The manifests record no count of it: every agent is estimated, and says why.
    const estimated = diffBundles(before, after);
    expect(estimated.tokenEstimate).toBe("the bundles record no token counts of the skill tool's description");
    expect(estimated.agents.map((diff) => [diff.id, diff.tool])).toEqual([
      ["chat", undefined],
      ["main", { before: { characters: 400, tokens: 100 }, after: { characters: 480, tokens: 120 } }],
    ]);
    const counted = diffBundles(before, after, { encoding: "o200k_base", before: new Map([["main", 0], ["chat", 26]]), after: new Map([["main", 0], ["chat", 26]]), tools: { before: new Map([["main", 50]]), after: new Map([["main", 60]]) } });
    expect(counted.agents[1]!.tool).toEqual({ before: { characters: 400, tokens: 50 }, after: { characters: 480, tokens: 60 } });
    const pretty = formatDiffPretty(counted, { before: "a", after: "b" }, plain);
    expect(pretty).toContain("  prompt characters: 0\n  tokens (o200k_base): 0\n  skill tool description characters: 400 → 480 (+80)\n  skill tool description tokens (o200k_base): 50 → 60 (+10)");
    expect(pretty.match(/skill tool description characters/g)).toHaveLength(1);
    const markdown = formatDiffMarkdown(counted, { limit: COMMENT_LIMIT });
    expect(markdown).toContain("| `main` | tool description | 0 + tool 400 → 480 (+80) | 0 + tool 50 → 60 (+10) | — |");
    expect(markdown).toContain("| `chat` | none | 101 | 26 | — |");
    // An agent that gained the tool: nothing before.
    const gained = diffBundles(manifest({ main: agent([]) }), manifest({ main: agent([], { toolDescription: "Load one." }) })).agents[0]!;
    expect(gained.tool).toEqual({ before: { characters: 0, tokens: 0 }, after: { characters: 9, tokens: 3 } });
  });

  it("context files and budgets compared: a changed hash, an unknown one, limits in characters and in tokens with the skills dropped", () => {
    const before = agent([skill("a", { placement: "dropped" }), skill("b")], {
      context: new Map<string, string | undefined>([["AGENTS.md", "h1"], ["old.md", "h"], ["x.md", undefined]]),
      budget: 80,
      characters: { prompt: 101, catalogue: 60 },
    });
    const after = agent([skill("a"), skill("b", { placement: "dropped" })], {
      context: new Map<string, string | undefined>([["AGENTS.md", "h2"], ["new.md", "h"], ["x.md", "h3"]]),
      budget: { tokens: 20 },
      tokens: { encoding: "o200k_base", prompt: 30, catalogue: 25 },
    });
    const diff = diffBundles(manifest({ main: before }), manifest({ main: after })).agents[0]!;
    expect(diff.context).toEqual({ added: ["new.md"], removed: ["old.md"], changed: ["AGENTS.md"] });
    expect(diff.budget).toEqual({ before: { limit: 80, catalogue: 60, unit: "characters", dropped: ["a"] }, after: { limit: 20, catalogue: 25, unit: "tokens", dropped: ["b"] } });
  });

  it("prompt tokens: the manifests' own counts when every agent has them in one encoding, else estimates, or the counts given", () => {
    const counted = (prompt: number, encoding = "o200k_base") => ({ tokens: { encoding, prompt, catalogue: 1 }, characters: { prompt: 101, catalogue: 1 } });
    const one = diffBundles(manifest({ main: agent([], counted(30)), other: agent([], counted(7)) }), manifest({ main: agent([], counted(35)) }));
    expect(one.tokenEncoding).toBe("o200k_base");
    expect(one.tokenEstimate).toBeUndefined();
    expect(one.agents.map((diff) => [diff.id, diff.prompt.before.tokens, diff.prompt.after.tokens])).toEqual([["main", 30, 35], ["other", 7, 0]]);
    const mixed = diffBundles(manifest({ main: agent([], counted(30)) }), manifest({ main: agent([], counted(35, "cl100k_base")) }));
    expect(mixed.tokenEncoding).toBeUndefined();
    expect(mixed.tokenEstimate).toBe("the bundles do not record token counts in one encoding");
    expect(mixed.agents[0]!.prompt).toEqual({ before: { characters: 101, tokens: 26 }, after: { characters: 101, tokens: 26 }, changed: false });
    const none = diffBundles(manifest({ main: agent([]) }), manifest({ main: agent([]) }));
    expect(none.tokenEstimate).toBe("the bundles do not record token counts in one encoding");
    expect(diffBundles(manifest({ main: agent([]) }), manifest({}), { estimate: "why" }).tokenEstimate).toBe("why");
    const given = diffBundles(manifest({ main: agent([]) }), manifest({ main: agent([]), other: agent([]) }), { encoding: "e", before: new Map([["main", 3]]), after: new Map([["main", 4]]), tools: { before: new Map(), after: new Map() } });
    expect(given.tokenEncoding).toBe("e");
    expect(given.agents.map((diff) => [diff.id, diff.prompt.before.tokens, diff.prompt.after.tokens])).toEqual([["main", 3, 4], ["other", 0, 0]]);
  });

  it("a change two agents share (one skill in each) shows its old → new text once, and names that agent under the other", () => {
    const shared = { description: "New words.", body: "# s\nNew step.\n" };
    // One skill object per side, as a parsed manifest shares a skill's content among the agents that list it.
    const [old, now] = [skill("s"), skill("s", shared)];
    const before = manifest({ coding: agent([old]), review: agent([old]) });
    const after = manifest({ coding: agent([now]), review: agent([now]) });
    const diff = diffBundles(before, after);
    expect(diff.agents.map((agent) => agent.bodies.length)).toEqual([1, 1]); // the data keeps every agent's
    const pretty = formatDiffPretty(diff, { before: "a", after: "b" }, plain);
    expect(pretty.match(/\+New step\./g)).toHaveLength(1);
    expect(pretty.match(/^ {6}\+ New words\.$/gm)).toHaveLength(1);
    expect(pretty).toContain("  ~ Changed the description of s; the same change as under coding\n");
    expect(pretty).toMatch(/ {2}~ Changed the body of s: \+1 -0 lines \(sha256 \w{8} → \w{8}\); the same change as under coding\n/);
    const markdown = formatDiffMarkdown(diff, { limit: COMMENT_LIMIT });
    expect(markdown.match(/<details>/g)).toHaveLength(2); // coding's description and body
    expect(markdown).toContain("- Changed the description of `s`; the same change as under `coding`\n");
    const [coding, review] = JSON.parse(formatDiffJson(diff)).agents;
    expect(coding.descriptions).toEqual([{ name: "s", before: expect.any(String), after: "New words." }]);
    expect(coding.bodies).toEqual([expect.objectContaining({ name: "s", linesAdded: 1, linesRemoved: 0 })]);
    expect([review.descriptions, review.bodies]).toEqual([[{ name: "s", sameAs: "coding" }], [{ name: "s", sameAs: "coding" }]]);
  });

  it("markdown: the table (an agent id escaped for its cell), each agent's changes by name, details fenced past the longest run of backticks, tabs kept", () => {
    const id = "a|`b`";
    const before = manifest({ [id]: agent([skill("s", { description: "Plain." })]), quiet: agent([skill("q")]) });
    const after = manifest({ [id]: agent([skill("s", { description: "Tab\there: ``` then `x`" }), skill("`t"), skill("u`")]), quiet: agent([skill("q")]) });
    expect(formatDiffMarkdown(diffBundles(before, after), { limit: COMMENT_LIMIT }).split("\n")).toEqual([
      "### Agent prompts: 1 of 2 agents changed",
      "",
      "| agent | changes | prompt characters | ≈ tokens (estimate: characters ÷ 4) | budget (catalogue characters) |",
      "| --- | --- | ---: | ---: | --- |",
      "| `` a\\|`b` `` | 2 added, 1 description | 101 | 26 | — |",
      "| `quiet` | none | 101 | 26 | — |",
      "",
      "Tokens are estimated: the bundles do not record token counts in one encoding.",
      "",
      "#### `` a|`b` `` (changed)",
      "",
      "- Added `` `t `` (listed)",
      "- Added `` u` `` (listed)",
      "- Changed the description of `s`",
      "",
      "#### Details",
      "",
      "`` a|`b` ``: description of `s`",
      "",
      "<details><summary>old → new</summary>",
      "",
      "````diff",
      "- Plain.",
      "+ Tab\there: ``` then `x`",
      "````",
      "",
      "</details>",
    ]);
  });

  it("markdown: no estimate line for counted tokens, no details where no change has a block; cut short by characters unless told bytes", () => {
    const diff = diffBundles(manifest({ main: agent([]) }), manifest({ main: agent(Array.from({ length: 40 }, (_, index) => skill(`é${index}`))) }));
    const whole = formatDiffMarkdown(diff, { limit: COMMENT_LIMIT });
    expect(whole).not.toContain("Details");
    const counted = agent([], { tokens: { encoding: "o200k_base", prompt: 30, catalogue: 1 } });
    expect(formatDiffMarkdown(diffBundles(manifest({ main: counted }), manifest({ main: counted })), { limit: COMMENT_LIMIT }).split("\n")).toEqual([
      "### Agent prompts: no changes (1 agent)",
      "",
      "| agent | changes | prompt characters | tokens (o200k\\_base) | budget (catalogue characters) |",
      "| --- | --- | ---: | ---: | --- |",
      "| `main` | none | 101 | 30 | — |",
    ]);
    // Room for every line and its newline, and for the closing note (600).
    const room = whole.length + 1 + 600;
    expect(formatDiffMarkdown(diff, { limit: room })).toBe(whole);
    expect(formatDiffMarkdown(diff, { limit: room - 1 }).split("\n").at(-1)).toBe(`**Cut short at ${(room - 1).toLocaleString("en-US")} characters: 1 more line left out; \`skills diff\` in a terminal, or with \`--format json\`, shows the rest.**`);
    expect(formatDiffMarkdown(diff, { limit: room, bytes: true }).split("\n").at(-1)).toMatch(/^\*\*Cut short at [\d,]+ bytes: \d+ more lines left out; /);
  });
});

describe("cutLine and a diff's length", () => {
  it("cuts a line past max characters, never inside a surrogate pair, and says how many it left out", () => {
    expect(cutLine("abc", 3)).toBe("abc");
    expect(cutLine("abcd", 3)).toBe("abc… (1 more characters)");
    expect(cutLine("a😀b", 2)).toBe("a… (3 more characters)");
    expect(cutLine("a😀b", 3)).toBe("a😀… (1 more characters)");
    // The high surrogates' range, 0xd800 to 0xdbff, ends where a cut must step back; its neighbours do not.
    expect(cutLine("a\ud800z", 2)).toBe("a… (2 more characters)");
    expect(cutLine("a\udbffz", 2)).toBe("a… (2 more characters)");
    expect(cutLine("a\ud7ffz", 2)).toBe("a\ud7ff… (1 more characters)");
    expect(cutLine("a\udc00z", 2)).toBe("a\udc00… (1 more characters)");
  });

  it("counts what it left out with thousands separators", () => {
    for (const [left, shown] of [[999, "999"], [1000, "1,000"], [12345, "12,345"], [1234567, "1,234,567"]] as const) {
      expect(cutLine("x".repeat(left + 1), 1)).toBe(`x… (${shown} more characters)`);
    }
  });

  it("a diff of more than maxLines lines is cut there, saying how many lines it left out", () => {
    const whole = unifiedDiff("a\nb", "a\nc", { beforeLabel: "x", afterLabel: "y" }).split("\n");
    expect(whole).toEqual(["--- x", "+++ y", "@@ -1,2 +1,2 @@", " a", "-b", "+c"]);
    const cut = (maxLines: number) => unifiedDiff("a\nb", "a\nc", { beforeLabel: "x", afterLabel: "y", maxLines }).split("\n");
    expect(cut(6)).toEqual(whole);
    expect(cut(5)).toEqual([...whole.slice(0, 5), "… 1 more line of diff"]);
    expect(cut(4)).toEqual([...whole.slice(0, 4), "… 2 more lines of diff"]);
    expect(unifiedDiff("a\nb", "a\nc", { beforeLabel: "x", afterLabel: "y", lineMax: 0 }).split("\n").at(-1)).toBe("… (1 more characters)".replace(/^/, "+"));
  });
});
