import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { check, type Diagnostic } from "../src/index.js";
import { withThousands } from "../src/compile/diagnostics.js";
import { RULES, type RuleCode } from "../src/compile/rules.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

type Tree = Parameters<typeof writeTree>[1];

interface Case {
  /** Skill files and anything else, under the project folder. */
  tree: Tree;
  /** Config beside them; default: one agent over `skills`. */
  config?: object;
  expected: Omit<Diagnostic, "message" | "hint" | "severity"> & { severity?: Diagnostic["severity"] };
  /** Whether the skill hit still reaches the agent. */
  included?: boolean;
}

const agent = (source: object = { root: "skills" }) => ({ agents: { main: { skills: [source] } } });
const file = (path: string) => `skills/${path}/SKILL.md`;

// One fixture per code of SPEC §4, with the exact position each diagnostic must point at.
const CASES: Record<string, Case> = {
  "frontmatter-missing": {
    tree: { [file("plain")]: "# Plain\n\nNo frontmatter here.\n" },
    expected: { code: "frontmatter-missing", file: file("plain"), line: 1, column: 1 },
    included: false,
  },
  "frontmatter-unclosed": {
    tree: { [file("open")]: "---\nname: open\ndescription: Never closed.\n\n# Body\n" },
    expected: { code: "frontmatter-unclosed", file: file("open"), line: 1, column: 1 },
    included: false,
  },
  "yaml-invalid": {
    tree: { [file("colon")]: "---\nname: colon\ndescription: Use when: the user asks\n---\nBody\n" },
    expected: { code: "yaml-invalid", file: file("colon"), line: 3, column: 22 },
    included: false,
  },
  "yaml-recovered": {
    tree: { [file("colon")]: "---\nname: colon\ndescription: Use when: the user asks\n---\nBody\n" },
    config: { yaml: "recover", ...agent() },
    expected: { code: "yaml-recovered", file: file("colon"), line: 3, column: 22 },
    included: true,
  },
  "frontmatter-not-mapping": {
    tree: { [file("list")]: "---\n- name: list\n- description: A list.\n---\nBody\n" },
    expected: { code: "frontmatter-not-mapping", file: file("list"), line: 2, column: 1 },
    included: false,
  },
  "description-missing": {
    tree: { [file("quiet")]: "---\nname: quiet\n---\nBody\n" },
    expected: { code: "description-missing", file: file("quiet"), line: 1, column: 1 },
    included: false,
  },
  "description-type": {
    tree: { [file("numeric")]: "---\nname: numeric\ndescription: 42\n---\nBody\n" },
    expected: { code: "description-type", file: file("numeric"), line: 3, column: 14 },
    included: false,
  },
  "description-too-long": {
    tree: { [file("wordy")]: `---\nname: wordy\ndescription: ${"a".repeat(1025)}\n---\nBody\n` },
    expected: { code: "description-too-long", file: file("wordy"), line: 3, column: 14 },
    included: true,
  },
  "description-fallback": {
    tree: { [file("para")]: "---\nname: para\n---\n# Para\n\nTurns notes into a paragraph.\n" },
    config: { descriptionFallback: "first-paragraph", ...agent() },
    expected: { code: "description-fallback", file: file("para"), line: 1, column: 1 },
    included: true,
  },
  "name-missing": {
    tree: { [file("anonymous")]: "---\ndescription: No name given.\n---\nBody\n" },
    expected: { code: "name-missing", file: file("anonymous"), line: 1, column: 1 },
    included: true,
  },
  "name-type": {
    tree: { [file("typed")]: "---\nname: [a, b]\ndescription: A list as a name.\n---\nBody\n" },
    expected: { code: "name-type", file: file("typed"), line: 2, column: 7 },
    included: false,
  },
  "name-mismatch": {
    tree: { [file("folder")]: skillMd("other") },
    expected: { code: "name-mismatch", file: file("folder"), line: 2, column: 7 },
    included: true,
  },
  "name-invalid": {
    tree: { [file("Bad_Name")]: skillMd("Bad_Name") },
    expected: { code: "name-invalid", file: file("Bad_Name"), line: 2, column: 7 },
    included: true,
  },
  "name-too-long": {
    tree: { [file("x".repeat(65))]: skillMd("x".repeat(65)) },
    expected: { code: "name-too-long", file: file("x".repeat(65)), line: 2, column: 7 },
    included: true,
  },
  "duplicate-name": {
    tree: { [file("a/twin")]: skillMd("twin"), [file("b/twin")]: skillMd("twin") },
    expected: { code: "duplicate-name", file: file("b/twin"), line: 1, column: 1 },
    included: false,
  },
  "duplicate-across-sources": {
    tree: { [file("twin")]: skillMd("twin"), "more/twin/SKILL.md": skillMd("twin") },
    config: { agents: { main: { skills: [{ root: "skills" }, { root: "more" }] } } },
    expected: { code: "duplicate-across-sources", file: "skills.config.json" },
    included: true,
  },
  "selection-overlap": {
    tree: { [file("both")]: skillMd("both") },
    config: agent({ root: "skills", available: ["*"], inline: ["both"] }),
    expected: { code: "selection-overlap", file: "skills.config.json" },
    included: true,
  },
  "pattern-unmatched": {
    tree: { [file("present")]: skillMd("present") },
    config: agent({ root: "skills", available: ["present", "absent-*"] }),
    expected: { code: "pattern-unmatched", file: "skills.config.json" },
    included: true,
  },
  "root-missing": {
    tree: { [file("present")]: skillMd("present") },
    config: { agents: { main: { skills: [{ root: "skills" }, { root: "nowhere" }] } } },
    expected: { code: "root-missing", file: "skills.config.json" },
  },
  "root-not-folder": {
    tree: { [file("present")]: skillMd("present"), "notes.md": "A file, not a folder.\n" },
    config: { agents: { main: { skills: [{ root: "skills" }, { root: "notes.md" }] } } },
    expected: { code: "root-not-folder", file: "skills.config.json" },
  },
  "hidden-skill": {
    tree: { [file("present")]: skillMd("present"), [file(".curated/gh-fix-ci")]: skillMd("gh-fix-ci") },
    expected: { code: "hidden-skill", file: file(".curated/gh-fix-ci") },
    included: false,
  },
  "nested-skill": {
    tree: { [file("qdrant-monitoring")]: skillMd("qdrant-monitoring"), [file("qdrant-monitoring/debugging")]: skillMd("qdrant-monitoring-debugging") },
    expected: { code: "nested-skill", file: file("qdrant-monitoring/debugging") },
    included: false,
  },
  "agent-empty": {
    tree: { "skills/README.md": "No skills yet.\n" },
    expected: { code: "agent-empty", file: "skills.config.json" },
  },
  "symlink-escape": {
    tree: { "outside/secret/SKILL.md": skillMd("secret"), "skills/secret": { link: "../outside/secret" } },
    expected: { code: "symlink-escape", file: "skills/secret" },
    included: false,
  },
  "field-invalid": {
    tree: { [file("flags")]: "---\nname: flags\ndescription: Flags.\ndisable-model-invocation: \"true\"\n---\nBody\n" },
    expected: { code: "field-invalid", file: file("flags"), line: 4, column: 27 },
    included: true,
  },
  "field-unknown": {
    tree: { [file("extra")]: "---\nname: extra\ndescription: Extra.\nowner: platform-team\n---\nBody\n" },
    config: { rules: { "field-unknown": "warn" }, ...agent() },
    expected: { code: "field-unknown", file: file("extra"), line: 4, column: 1 },
    included: true,
  },
  "field-lookalike": {
    tree: { [file("twice")]: "---\nname: twice\ndescription: Twice.\nName: Twice Over\n---\nBody\n" },
    expected: { code: "field-lookalike", file: file("twice"), line: 4, column: 1 },
    included: true,
  },
  "body-too-long": {
    tree: { [file("long")]: skillMd("long", "Long body.", Array.from({ length: 501 }, (_, i) => `line ${i}`).join("\n")) },
    config: { rules: { "body-too-long": "warn" }, ...agent() },
    expected: { code: "body-too-long", file: file("long"), line: 6, column: 1 },
    included: true,
  },
  "link-broken": {
    tree: { [file("linked")]: skillMd("linked", "Links.", "See [the guide](references/guide.md).") },
    expected: { code: "link-broken", file: file("linked"), line: 6, column: 17 },
    included: true,
  },
  "description-duplicate": {
    tree: { [file("one")]: skillMd("one", "Same words."), [file("two")]: skillMd("two", "Same words.") },
    expected: { code: "description-duplicate", file: file("two") },
    included: true,
  },
  "prompt-too-long": {
    tree: { [file("big")]: skillMd("big", "Big.", "x".repeat(100_001)) },
    config: agent({ root: "skills", inline: ["big"] }),
    expected: { code: "prompt-too-long", file: "skills.config.json" },
    included: true,
  },
  "encoding-invalid": {
    tree: { [file("latin1")]: Buffer.concat([Buffer.from("---\nname: latin1\ndescription: caf"), Buffer.from([0xe9]), Buffer.from("\n---\n")]) },
    expected: { code: "encoding-invalid", file: file("latin1"), line: 3, column: 17 },
    included: false,
  },
  "file-too-large": {
    tree: { [file("huge")]: skillMd("huge", "Huge.", "x".repeat(5 * 1024 * 1024)) },
    expected: { code: "file-too-large", file: file("huge"), line: 1, column: 1 },
    included: false,
  },
};

// Codes whose cases live with the feature that raises them.
const ELSEWHERE = new Set<RuleCode>(["suppression-stale", "budget-exceeded", "body-closes-tag", "path-unreadable", "path-changed", "skill-folder-too-large", "skill-files-too-large", "folder-too-deep", "gitignore-too-large", "description-invisible", "frontmatter-schema", "agentskills-invalid", "serve-invalid", "serve-too-large"]);

describe("every diagnostic code of SPEC §4", () => {
  it("has a case here or with its feature", () => {
    const missing = (Object.keys(RULES) as RuleCode[]).filter((code) => !(code in CASES) && !ELSEWHERE.has(code));
    expect(missing).toEqual([]);
  });

  it.each(Object.entries(CASES))("%s", async (code, testCase) => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": JSON.stringify(testCase.config ?? agent()), ...testCase.tree });
    const result = await check({ cwd: dir });
    const hits = result.diagnostics.filter((diagnostic) => diagnostic.code === code);
    expect(hits).toHaveLength(1);
    const [hit] = hits as [Diagnostic];
    const defaultSeverity = RULES[code as RuleCode].severity;
    expect(hit).toMatchObject({ severity: defaultSeverity === "off" ? "warn" : defaultSeverity, ...testCase.expected });
    expect(hit.message.length).toBeGreaterThan(10);
    if (testCase.included !== undefined) {
      const skillFile = "file" in testCase.expected && testCase.expected.file?.endsWith("SKILL.md") ? testCase.expected.file : undefined;
      const names = result.agents[0]!.skills.map((skill) => skill.file);
      if (skillFile) expect(names.includes(skillFile)).toBe(testCase.included);
      else expect(names.length > 0).toBe(testCase.included);
    }
  });

  it("`rules` can raise, lower and silence a code", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ rules: { "name-mismatch": "error", "name-missing": "off" }, ...agent() }),
      [file("folder")]: skillMd("other"),
      [file("anonymous")]: "---\ndescription: No name.\n---\n",
    });
    const result = await check({ cwd: dir });
    expect(result.diagnostics.map((d) => [d.code, d.severity])).toEqual([["name-mismatch", "error"]]);
    expect(result.ok).toBe(false);
  });

  it("points at the file relative to the config folder, even for a config in a subfolder", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "config/skills.config.json": JSON.stringify(agent({ root: "../skills" })),
      [file("quiet")]: "---\nname: quiet\n---\n",
    });
    const result = await check({ config: join(dir, "config/skills.config.json") });
    expect(result.diagnostics[0]).toMatchObject({ code: "description-missing", file: "../skills/quiet/SKILL.md" });
  });
});

describe("withThousands", () => {
  it("writes a count as toLocaleString(\"en-US\") does", () => {
    for (const count of [0, 7, 999, 1000, 12345, 500000, 1234567, Number.MAX_SAFE_INTEGER]) expect(withThousands(count)).toBe(count.toLocaleString("en-US"));
    fc.assert(
      fc.property(fc.nat(), fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (small, large) => {
        expect(withThousands(small)).toBe(small.toLocaleString("en-US"));
        expect(withThousands(large)).toBe(large.toLocaleString("en-US"));
      }),
    );
  });
});
