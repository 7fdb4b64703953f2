/**
 * Every kind of change `skills diff` names, on a real catalogue (test/fixtures/review-catalogue/trailofbits): one pull
 * request that touches each, built before and after with the real CLI, compared in pretty, markdown and json.
 */
import { cp, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { REPO, runCli, tempDir, writeTree } from "./helpers.js";

const FIXTURE = join(REPO, "test/fixtures/review-catalogue/trailofbits");

/** The agents: each sees the part of the catalogue its change is about. */
function config({ budget, after }: { budget?: number; after: boolean }) {
  return JSON.stringify({
    location: "relative",
    rules: { "yaml-invalid": "warn" }, // a skill whose YAML breaks is left out, and the build still writes
    agents: {
      security: { skills: [{ root: "skills", available: ["differential-review", "fp-check", "sharp-edges"] }], ...(budget ? { budget } : {}) },
      general: {
        skills: [{ root: "skills", available: ["*"], inline: after ? ["differential-review"] : [] }],
        ...(after ? { allow: ["*", "!sharp-edges"] } : {}),
      },
      tools: { skills: [{ root: "skills", available: ["fp-check"] }], invoke: "tool", catalogue: "tool", tool: { style: "use_skill" } },
      rules: { context: ["context/*.md"] },
    },
  });
}

let dir = "";
const outputs: Record<"pretty" | "markdown" | "json", string> = { pretty: "", markdown: "", json: "" };
let json: { tokenEncoding?: string; agents: { id: string; [key: string]: unknown }[] };
const agent = (id: string) => json.agents.find((entry) => entry.id === id)! as Record<string, unknown>;

beforeAll(async () => {
  dir = await tempDir();
  await cp(FIXTURE, join(dir, "skills"), { recursive: true });
  await writeTree(dir, { "skills.config.json": config({ after: false }), "context/house-rules.md": "# House rules\n\nCite the file and line of every finding.\n" });
  // The security agent's budget: what its catalogue takes now, and a little more.
  expect((await runCli(["build", "--out", "before"], { cwd: dir })).code).toBe(0);
  const catalogue = JSON.parse(await readFile(join(dir, "before/manifest.json"), "utf8")).agents.security.characters.catalogue as number;
  await writeFile(join(dir, "skills.config.json"), config({ budget: catalogue + 50, after: false }));
  await rm(join(dir, "before"), { recursive: true });
  expect((await runCli(["build", "--out", "before"], { cwd: dir })).code).toBe(0);

  const edit = async (name: string, change: (text: string) => string) => {
    const file = join(dir, "skills", name, "SKILL.md");
    await writeFile(file, change(await readFile(file, "utf8")));
  };
  // fp-check's longer description pushes sharp-edges out of the security agent's catalogue.
  await edit("fp-check", (text) => text.replace("not for hunting or discovering new bugs.", `not for hunting or discovering new bugs. ${"Checks reachability, attacker control and impact. ".repeat(4)}`));
  await edit("differential-review", (text) => text.replace("allowed-tools: Read Write Grep Glob Bash", "allowed-tools: Read Write Grep Glob Bash WebFetch").replace("## Core Principles", "## Core Principles\n\nAlso run it on every dependency bump."));
  await edit("property-based-testing", (text) => text.replace("effort: low", "effort: low\ndisable-model-invocation: true"));
  await edit("gh-cli", (text) => text.replace("description: Enforces", "description: [Enforces"));
  await writeTree(dir, { "skills.config.json": config({ budget: catalogue + 50, after: true }), "context/house-rules.md": "# House rules\n\nCite the file and line of every finding, and its severity.\n" });
  expect((await runCli(["build", "--out", "after"], { cwd: dir })).code).toBe(0);

  for (const format of ["pretty", "markdown", "json"] as const) {
    const run = await runCli(["diff", "before", "after", "--format", format], { cwd: dir });
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: "" });
    outputs[format] = run.stdout;
  }
  json = JSON.parse(outputs.json);
}, 120_000);

describe("skills diff names every change the model sees", () => {
  it("a skill the budget dropped from the catalogue, in every format, and on the budget line", () => {
    expect(outputs.pretty).toContain("security: changed\n  ~ Dropped sharp-edges from the catalogue: over the budget (the model no longer sees it; still invoked by name)\n");
    expect(outputs.pretty).toMatch(/^ {2}budget \(catalogue characters\): [\d,]+ \/ [\d,]+ \(\d+%\) → [\d,]+ \/ [\d,]+ \(\d+%\); drops sharp-edges$/m);
    expect(outputs.markdown).toContain("- Dropped `sharp-edges` from the catalogue: over the budget");
    expect(outputs.markdown).toMatch(/^\| `security` \| 1 dropped by the budget, .*; drops `sharp-edges` \|$/m);
    expect(agent("security").moved).toEqual([{ name: "sharp-edges", file: "skills/sharp-edges/SKILL.md", from: "listed", to: "dropped" }]);
    expect((agent("security").budget as { after: { dropped: string[] } }).after.dropped).toEqual(["sharp-edges"]);
  });

  it("a skill removed by the agent's allow list, and one that failed a rule that skips it", () => {
    expect(outputs.pretty).toContain("  - Removed sharp-edges (was listed): left out by the agent's `allow`\n");
    expect(outputs.pretty).toMatch(/^ {2}- Removed gh-cli \(was listed\): it failed yaml-invalid: /m);
    expect(outputs.markdown).toContain("- Removed `gh-cli` (was listed): it failed `yaml-invalid`: ");
    expect(agent("general").removed).toEqual([
      { name: "gh-cli", file: "skills/gh-cli/SKILL.md", placement: "listed", reason: { by: "failed", code: "yaml-invalid", message: expect.any(String) } },
      { name: "sharp-edges", file: "skills/sharp-edges/SKILL.md", placement: "listed", reason: { by: "allow" } },
    ]);
  });

  it("moves between listed, inline and hidden", () => {
    expect(outputs.pretty).toContain("  ~ Moved differential-review from listed to inline\n");
    expect(outputs.pretty).toContain("  ~ Moved property-based-testing from listed to hidden: disable-model-invocation\n");
    expect(agent("general").moved).toEqual([
      { name: "differential-review", file: "skills/differential-review/SKILL.md", from: "listed", to: "inline" },
      { name: "property-based-testing", file: "skills/property-based-testing/SKILL.md", from: "listed", to: "hidden" },
    ]);
  });

  it("old → new values of the fields that change what the model may do", () => {
    expect(outputs.pretty).toContain('  ~ Changed allowed-tools of differential-review: ["Read","Write","Grep","Glob","Bash"] → ["Read","Write","Grep","Glob","Bash","WebFetch"]\n');
    expect(outputs.pretty).toContain("  ~ Changed disable-model-invocation of property-based-testing: false → true\n");
    expect(outputs.markdown).toContain("- Changed `allowed-tools` of `differential-review`: `[\"Read\",\"Write\",\"Grep\",\"Glob\",\"Bash\"]` → `[\"Read\",\"Write\",\"Grep\",\"Glob\",\"Bash\",\"WebFetch\"]`");
    expect(agent("general").fields).toContainEqual({ name: "property-based-testing", changes: [{ field: "disable-model-invocation", before: false, after: true }] });
  });

  it("description and body changes", () => {
    expect(outputs.pretty).toMatch(/^ {2}~ Changed the description of fp-check\n {6}- Systematically verifies .*\n {6}\+ Systematically verifies .*Checks reachability/m);
    expect(outputs.pretty).toMatch(/^ {2}~ Changed the body of differential-review: \+2 -0 lines/m);
    expect(outputs.markdown).toContain("+Also run it on every dependency bump.");
  });

  it("the skill tool's description, for an agent whose catalogue is in the tool", () => {
    expect(outputs.pretty).toMatch(/^tools: changed\n {2}~ Changed the description of fp-check; the same change as under general\n[\s\S]*^ {2}~ Changed the skill tool's description: \+1 -1 lines\n {6}--- tool description \(before\)\n/m);
    expect(outputs.pretty).toMatch(/^ {6}\+ {4}<description>Systematically verifies .*Checks reachability/m);
    expect(agent("tools").toolDescription).toEqual({
      before: expect.stringContaining("fp-check"),
      after: expect.stringContaining("Checks reachability"),
      linesAdded: 1,
      linesRemoved: 1,
      diff: expect.stringMatching(/^--- tool description \(before\)\n\+\+\+ tool description \(after\)\n@@ /),
    });
    // Its size beside the prompt's (which holds no catalogue), its tokens counted as the prompts' are.
    const { before, after } = agent("tools").toolDescription as { before: string; after: string };
    const { tool } = agent("tools") as { tool: { before: { characters: number; tokens: number }; after: { characters: number; tokens: number } } };
    expect([tool.before.characters, tool.after.characters]).toEqual([before.length, after.length]);
    expect(tool.before.tokens).toBeGreaterThan(before.length / 8);
    expect(tool.after.tokens).toBeGreaterThan(tool.before.tokens);
    expect(json.tokenEncoding).toBe("o200k_base");
    const grew = (size: { before: number; after: number }) => `${size.before.toLocaleString("en")} → ${size.after.toLocaleString("en")} (+${(size.after - size.before).toLocaleString("en")})`;
    const characters = grew({ before: tool.before.characters, after: tool.after.characters });
    expect(outputs.pretty).toContain(`  skill tool description characters: ${characters}\n  skill tool description tokens (o200k_base): ${grew({ before: tool.before.tokens, after: tool.after.tokens })}`);
    expect(outputs.markdown).toMatch(new RegExp(`^\\| \`tools\` \\| [^|]+ \\| \\d+ \\+ tool ${characters.replace(/[()+]/g, "\\$&")} \\|`, "m"));
  });

  it("context changes", () => {
    expect(outputs.pretty).toContain("rules: changed\n  ~ Changed the context files: changed context/house-rules.md\n");
    expect(agent("rules").context).toEqual({ added: [], removed: [], changed: ["context/house-rules.md"] });
  });

  it("every change is named before any old → new text in the comment", () => {
    const details = outputs.markdown.indexOf("#### Details");
    expect(details).toBeGreaterThan(0);
    for (const name of ["sharp-edges", "gh-cli", "differential-review", "property-based-testing", "fp-check"]) expect(outputs.markdown.indexOf(`\`${name}\``)).toBeLessThan(details);
  });

  it("skills list flags the skill the budget dropped", async () => {
    const run = await runCli(["list", "--agent", "security"], { cwd: dir });
    expect(run.stdout).toMatch(/^ {2}sharp-edges +available +skills +\d+ chars +dropped by the budget$/m);
  });
});
