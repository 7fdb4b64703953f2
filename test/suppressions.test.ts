import { cpSync, readFileSync } from "node:fs";
import { readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { build, check, type Diagnostic } from "../src/index.js";
import { ConfigError } from "../src/compile/config.js";
import { applySuppressions, pruneSuppressions, readSuppressions, suppressAll, writeSuppressions, type Suppressions } from "../src/lint/suppressions.js";
import { REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const finding = (file: string, code: Diagnostic["code"], line = 1): Diagnostic => ({ code, severity: "warn", message: `${code} at ${line}`, file, line, column: 1 });
const entries = (suppressions: Suppressions) => [...suppressions].map(([file, codes]) => [file, Object.fromEntries(codes)]);

describe("suppressions, as ESLint's bulk suppressions", () => {
  const today = [finding("a/SKILL.md", "name-mismatch"), finding("b/SKILL.md", "field-invalid", 2), finding("b/SKILL.md", "field-invalid", 5), finding("c/SKILL.md", "name-invalid")];

  it("suppresses a file's findings of a code while they number no more than its count; past it, all of them are reported", () => {
    const suppressions: Suppressions = new Map([
      ["a/SKILL.md", new Map([["name-mismatch", 1]])],
      ["b/SKILL.md", new Map([["field-invalid", 1]])],
    ]);
    const { reported, suppressed, stale } = applySuppressions(today, suppressions, "skills-suppressions.json", "");
    expect(suppressed).toEqual([today[0]]);
    expect(reported).toEqual([today[1], today[2], today[3]]);
    expect(stale).toEqual([]);
  });

  it("names each entry that allows more than remains, at its line of the file", async () => {
    const suppressions: Suppressions = new Map([
      ["a/SKILL.md", new Map([["name-mismatch", 1], ["yaml-invalid", 1]])],
      ["b/SKILL.md", new Map([["field-invalid", 3]])],
    ]);
    const text = writeSuppressions(join(await tempDir(), "skills-suppressions.json"), suppressions);
    const { stale, suppressed } = applySuppressions(today, suppressions, "skills-suppressions.json", text);
    expect(suppressed.map((diagnostic) => diagnostic.file)).toEqual(["a/SKILL.md", "b/SKILL.md", "b/SKILL.md"]);
    expect(stale).toEqual([
      expect.objectContaining({ code: "suppression-stale", file: "skills-suppressions.json", line: 6, column: 5, message: "a/SKILL.md may have 1 `yaml-invalid` finding and has none now: the suppression is stale" }),
      expect.objectContaining({ line: 11, message: "b/SKILL.md may have 3 `field-invalid` findings and has 2 now: the suppression is stale" }),
    ]);
  });

  it("names the stale entries of a large file in linear time", async () => {
    const suppressions: Suppressions = new Map();
    for (let index = 0; index < 400; index++) suppressions.set(`skills/s${index}/SKILL.md`, new Map(Array.from({ length: 100 }, (_, code) => [`code-${code}`, 1])));
    const text = writeSuppressions(join(await tempDir(), "skills-suppressions.json"), suppressions);
    const started = performance.now();
    const { stale } = applySuppressions([], suppressions, "skills-suppressions.json", text);
    // Quadratic (each entry looked up by splitting and searching the 2.4 MB text) takes minutes here.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(stale).toHaveLength(40_000);
    const last = stale[40_000 - 1]!;
    expect(last).toMatchObject({ column: 5, message: expect.stringContaining("skills/s399/SKILL.md may have 1 `code-99` finding") });
    const lines = text.split("\n").slice(0, last.line);
    expect([lines.at(-1), [...lines].reverse().find((line) => line.startsWith('  "'))]).toEqual(['    "code-99": {', '  "skills/s399/SKILL.md": {']);
  });

  it("--suppress sets today's counts over the file's, keeping other entries; --prune-suppressions lowers counts to what remains", () => {
    const before: Suppressions = new Map([["gone/SKILL.md", new Map([["yaml-invalid", 2]])], ["b/SKILL.md", new Map([["field-invalid", 5]])]]);
    expect(entries(suppressAll(before, today))).toEqual([
      ["gone/SKILL.md", { "yaml-invalid": 2 }],
      ["b/SKILL.md", { "field-invalid": 2 }],
      ["a/SKILL.md", { "name-mismatch": 1 }],
      ["c/SKILL.md", { "name-invalid": 1 }],
    ]);
    expect(entries(pruneSuppressions(before, today))).toEqual([["b/SKILL.md", { "field-invalid": 2 }]]);
  });

  it("writes the file sorted and stable, reads it back, and keeps a file named __proto__ a file, not a prototype", async () => {
    const dir = await tempDir();
    const path = join(dir, "skills-suppressions.json");
    const suppressions: Suppressions = new Map([
      ["z/SKILL.md", new Map([["name-mismatch", 1], ["field-invalid", 2]])],
      ["__proto__", new Map([["constructor", 1]])],
      ["A/SKILL.md", new Map([["yaml-invalid", 1]])],
    ]);
    const text = writeSuppressions(path, suppressions);
    expect(text).toBe(
      '{\n  "A/SKILL.md": {\n    "yaml-invalid": {\n      "count": 1\n    }\n  },\n  "__proto__": {\n    "constructor": {\n      "count": 1\n    }\n  },\n  "z/SKILL.md": {\n    "field-invalid": {\n      "count": 2\n    },\n    "name-mismatch": {\n      "count": 1\n    }\n  }\n}\n',
    );
    const read = readSuppressions(path)!;
    expect(read.text).toBe(text);
    expect(writeSuppressions(path, read.suppressions)).toBe(text);
    expect(({} as Record<string, unknown>).constructor).toBe(Object);
    pruneSuppressions(read.suppressions, []);
    expect(Object.prototype).not.toHaveProperty("constructor.count");
  });

  it("refuses a link, a file that is not JSON or not of its shape, with one line naming the file and none of its text", async () => {
    const dir = await tempDir();
    const path = join(dir, "skills-suppressions.json");
    await writeFile(join(dir, "secret"), "root:x:0:0:secret-text\n");
    await symlink(join(dir, "secret"), path);
    expect(() => readSuppressions(path)).toThrow(ConfigError);
    expect(() => readSuppressions(path)).toThrow(/a symbolic link; the suppressions file must be a file of its own/);
    await rm(path);
    await writeFile(path, "root:x:0:0:secret-text\n");
    expect(() => readSuppressions(path)).toThrow(/not valid JSON/);
    expect(() => readSuppressions(path)).not.toThrow(/secret-text/);
    await writeFile(path, JSON.stringify({ "a/SKILL.md": { "name-mismatch": { count: 0 } } }));
    expect(() => readSuppressions(path)).toThrow(/"a\/SKILL.md"\."name-mismatch": not \{ "count": <a positive whole number> \}/);
    await writeFile(path, "[]");
    expect(() => readSuppressions(path)).toThrow(/\(file\): not an object/);
    // A key of megabytes is named in a line of hundreds of characters, its start and end.
    await writeFile(path, JSON.stringify({ [`a/${"x".repeat(5_000_000)}/SKILL.md`]: 5 }));
    const error = (() => {
      try {
        readSuppressions(path);
      } catch (caught) {
        return caught as ConfigError;
      }
    })();
    expect(error!.message.length).toBeLessThan(path.length + 700);
    expect(error!.detail).toMatch(/^"a\/x+… \(\d[\d,]* characters left out\) …x+\/SKILL\.md": not an object of codes; expected/);
  });
});

/** Copies of the catalogue shapes under vendor/, one broken skill of its own, and one agent over all of them. */
async function vendoredProject(): Promise<string> {
  const dir = await tempDir();
  cpSync(join(REPO, "test/fixtures/vendored/openai-skills"), join(dir, "vendor/openai-skills"), { recursive: true });
  cpSync(join(REPO, "test/fixtures/vendored/awesome-copilot"), join(dir, "vendor/awesome-copilot"), { recursive: true });
  await writeTree(dir, {
    "vendor/team/release-notes/SKILL.md": "---\nname: release-notes\ndescription: Draft release notes. Use when asked: what changed?\n---\nBody\n",
    "vendor/team/mismatch/SKILL.md": skillMd("not-mismatch"),
    "skills.config.json": JSON.stringify({
      agents: {
        main: {
          skills: [{ root: "vendor/openai-skills/skills", include: ["**", ".curated/**"] }, { root: "vendor/awesome-copilot/skills" }, { root: "vendor/team" }],
        },
      },
    }),
  });
  return dir;
}

describe("gating a vendored catalogue with skills-suppressions.json", () => {
  it("passes with today's findings recorded, fails naming only a new broken skill, and names the suppression a fix made stale", async () => {
    const dir = await vendoredProject();
    const first = await runCli(["check"], { cwd: dir });
    expect(first.code).toBe(1);

    const recorded = await runCli(["check", "--suppress"], { cwd: dir });
    expect(recorded.code).toBe(0);
    expect(recorded.stderr).toContain("Wrote skills-suppressions.json: 8 findings in 8 files suppressed.");
    const file = await readFile(join(dir, "skills-suppressions.json"), "utf8");
    expect(JSON.parse(file)["vendor/team/release-notes/SKILL.md"]).toEqual({ "yaml-invalid": { count: 1 } });

    const gated = await runCli(["check", "--max-warnings", "0"], { cwd: dir });
    expect(gated.code).toBe(0);
    expect(gated.stderr).toBe("Checked 1 agent, 5 skills; 0 errors, 0 warnings (8 suppressed)\n");

    await writeTree(dir, { "vendor/team/new-skill/SKILL.md": "---\nname: new-skill\n---\nNo description.\n" });
    const broken = await runCli(["check"], { cwd: dir });
    expect(broken.code).toBe(1);
    expect(broken.stderr.split("\n").filter((line) => /\[[a-z-]+\]$/.test(line))).toEqual([expect.stringMatching(/error +no `description` in the frontmatter +\[description-missing\]$/)]);
    expect(broken.stderr).toContain("vendor/team/new-skill/SKILL.md\n");
    await rm(join(dir, "vendor/team/new-skill"), { recursive: true });

    await writeTree(dir, { "vendor/team/release-notes/SKILL.md": skillMd("release-notes") });
    const fixed = await runCli(["check"], { cwd: dir });
    expect(fixed.code).toBe(0);
    expect(fixed.stderr).toMatch(/skills-suppressions\.json\n +\d+:5 +warning +vendor\/team\/release-notes\/SKILL\.md may have 1 `yaml-invalid` finding and has none now: the suppression is stale +\[suppression-stale\]/);
    expect((await runCli(["check", "--max-warnings", "0"], { cwd: dir })).code).toBe(1);

    const pruned = await runCli(["check", "--prune-suppressions"], { cwd: dir });
    expect(pruned.code).toBe(0);
    expect(pruned.stderr).toContain("Wrote skills-suppressions.json: 7 findings in 7 files suppressed.");
    expect(JSON.parse(await readFile(join(dir, "skills-suppressions.json"), "utf8"))).not.toHaveProperty(["vendor/team/release-notes/SKILL.md"]);
    expect((await runCli(["check", "--max-warnings", "0"], { cwd: dir })).code).toBe(0);
  });

  it("counts every broken link of a file past the 100 it names: one more link added later is reported", async () => {
    const links = (count: number) => Array.from({ length: count }, (_, index) => `[l${index}](missing-${index}.md)`).join("\n");
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }), "skills/linky/SKILL.md": skillMd("linky", "Links.", links(150)) });
    const recorded = await check({ cwd: dir, suppress: true });
    expect(recorded.suppressed).toHaveLength(101);
    expect(JSON.parse(await readFile(join(dir, "skills-suppressions.json"), "utf8"))).toEqual({ "skills/linky/SKILL.md": { "link-broken": { count: 150 } } });
    expect((await check({ cwd: dir, maxWarnings: 0 })).ok).toBe(true);

    await writeTree(dir, { "skills/linky/SKILL.md": skillMd("linky", "Links.", links(151)) });
    const grown = await check({ cwd: dir, maxWarnings: 0 });
    expect(grown.ok).toBe(false);
    expect(grown.diagnostics.filter((diagnostic) => diagnostic.code === "link-broken")).toHaveLength(101);
    expect(grown.diagnostics.at(-1)).toMatchObject({ count: 51, message: expect.stringMatching(/^51 more links/) });
  });

  it("every output agrees: the exit code, github annotations, SARIF results, JSON and the job summary show what is not suppressed", async () => {
    const dir = await vendoredProject();
    expect((await runCli(["check", "--suppress"], { cwd: dir })).code).toBe(0);
    await writeTree(dir, { "vendor/team/new-skill/SKILL.md": "---\nname: new-skill\n---\nNo description.\n" });
    const summary = join(dir, "summary.md");
    const github = await runCli(["check"], { cwd: dir, env: { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary } });
    expect(github.code).toBe(1);
    expect(github.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^::error file=vendor\/team\/new-skill\/SKILL\.md,line=1,col=1,title=description-missing::/)]);
    const page = await readFile(summary, "utf8");
    expect(page).toMatch(/### skills check\\: failed\\, 1 error\\, 0 warnings \\\(8 suppressed\\\) \\\(1 agent\\, 6 skills\\\)/);
    expect(page.split("\n").filter((line) => line.startsWith("| error") || line.startsWith("| warning"))).toHaveLength(1);

    const sarif = await runCli(["check", "--format", "sarif"], { cwd: dir });
    expect(sarif.code).toBe(1);
    expect(JSON.parse(sarif.stdout).runs[0].results.map((result: { ruleId: string }) => result.ruleId)).toEqual(["description-missing"]);

    const json = await runCli(["check", "--format", "json"], { cwd: dir });
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, errors: 1, warnings: 0, suppressed: 8, diagnostics: [expect.objectContaining({ code: "description-missing" })] });

    const result = await check({ cwd: dir });
    expect({ ok: result.ok, errors: result.errors, warnings: result.warnings, suppressed: result.suppressed.length }).toEqual({ ok: false, errors: 1, warnings: 0, suppressed: 8 });
  });

  it("the bundle is the same with and without suppressions: they change what a run reports, not what it builds", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills/odd/SKILL.md": skillMd("not-odd"), "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }) });
    expect((await build({ cwd: dir })).written).toBe(true);
    const before = readFileSync(join(dir, "dist/skills/manifest.json"), "utf8");
    expect((await check({ cwd: dir, suppress: true })).suppressed).toHaveLength(1);
    const rebuilt = await build({ cwd: dir });
    expect(rebuilt.diagnostics).toEqual([]);
    expect(readFileSync(join(dir, "dist/skills/manifest.json"), "utf8")).toBe(before);
    expect((await build({ cwd: dir, check: true })).stale).toEqual([]);
  });
});

describe("--fix and suppressions", () => {
  it("--fix leaves a finding the suppressions file accepts as it is, and fixes the others; --suppress then records what remains", async () => {
    const broken = "---\nname: release-notes\ndescription: Draft release notes. Use when asked: what changed?\n---\nBody\n";
    const dir = await tempDir();
    await writeTree(dir, {
      "vendor/release-notes/SKILL.md": broken,
      "skills/release-notes/SKILL.md": broken,
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "vendor" }] }, mine: { skills: [{ root: "skills" }] } } }),
    });
    expect((await check({ cwd: dir, suppress: true })).suppressed).toHaveLength(2);
    await writeFile(join(dir, "skills-suppressions.json"), JSON.stringify({ "vendor/release-notes/SKILL.md": { "yaml-invalid": { count: 1 } } }));
    const fixed = await check({ cwd: dir, fix: true, suppress: true });
    expect(fixed.fixes!.map((file) => file.file)).toEqual(["skills/release-notes/SKILL.md"]);
    expect(await readFile(join(dir, "vendor/release-notes/SKILL.md"), "utf8")).toBe(broken);
    expect(await readFile(join(dir, "skills/release-notes/SKILL.md"), "utf8")).toContain('description: "Draft release notes. Use when asked: what changed?"');
    expect(fixed.ok).toBe(true);
    expect(JSON.parse(await readFile(join(dir, "skills-suppressions.json"), "utf8"))).toEqual({ "vendor/release-notes/SKILL.md": { "yaml-invalid": { count: 1 } } });
  });
});

describe("--quiet and the count per code", () => {
  it("--quiet shows and counts errors only", async () => {
    const dir = await vendoredProject();
    const run = await runCli(["check", "--quiet", "--max-warnings", "0"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr.split("\n").filter((line) => /\[[a-z-]+\]$/.test(line))).toEqual([expect.stringMatching(/ error +.*\[yaml-invalid\]$/)]);
    expect(run.stderr).toContain("1 error, 0 warnings; check failed");
    await writeTree(dir, { "vendor/team/release-notes/SKILL.md": skillMd("release-notes") });
    expect((await runCli(["check", "--quiet", "--max-warnings", "0"], { cwd: dir })).code).toBe(0);
  });

  it("past 20 findings the pretty output ends with a count per code, most frequent first", async () => {
    const dir = await tempDir();
    const tree: Record<string, string> = { "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }) };
    for (let index = 0; index < 19; index++) tree[`skills/s${index}/SKILL.md`] = skillMd(`other-${index}`);
    tree["skills/broken/SKILL.md"] = "---\nname: broken\n---\n";
    tree["skills/Bad_Name/SKILL.md"] = skillMd("Bad_Name");
    await writeTree(dir, tree);
    const run = await runCli(["check"], { cwd: dir });
    expect(run.stderr).toContain("\n\nFindings per code:\n  name-mismatch        19 warnings\n  description-missing   1 error\n  name-invalid          1 warning\n\n1 error, 20 warnings; check failed (1 agent, 21 skills)\n");
    await rm(join(dir, "skills/Bad_Name"), { recursive: true });
    expect((await runCli(["check"], { cwd: dir })).stderr).not.toContain("Findings per code");
  });
});

describe("overrides", () => {
  it("set severities per path, later entries winning, and never change what a rule does to the skill", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "vendor/odd/SKILL.md": skillMd("not-odd"),
      "vendor/broken/SKILL.md": "---\nname: broken\n---\n",
      "skills/mine/SKILL.md": skillMd("not-mine"),
      "skills.config.json": JSON.stringify({
        rules: { "name-mismatch": "error" },
        overrides: [
          { files: ["vendor/**"], rules: { "name-mismatch": "off", "description-missing": "warn" } },
          { files: ["vendor/odd/**"], rules: { "name-mismatch": "warn" } },
        ],
        agents: { main: { skills: [{ root: "skills" }, { root: "vendor" }] } },
      }),
    });
    const result = await check({ cwd: dir });
    expect(result.diagnostics.map(({ file, code, severity }) => [file, code, severity])).toEqual([
      ["skills/mine/SKILL.md", "name-mismatch", "error"],
      ["vendor/broken/SKILL.md", "description-missing", "warn"],
      ["vendor/odd/SKILL.md", "name-mismatch", "warn"],
    ]);
    // A skip rule lowered to a warning still leaves its skill out.
    expect(result.agents[0]!.skills.map((skill) => skill.name)).toEqual(["not-mine", "not-odd"]);
  });

  it("turn on a rule that is off by default for their paths only", async () => {
    const dir = await tempDir();
    const long = `---\nname: long\ndescription: A long body. Use when testing.\n---\n${"line\n".repeat(600)}`;
    await writeTree(dir, {
      "skills/long/SKILL.md": long,
      "vendor/long/SKILL.md": long,
      "skills.config.json": JSON.stringify({ overrides: [{ files: ["skills/**"], rules: { "body-too-long": "error" } }], agents: { main: { skills: [{ root: "skills" }] }, other: { skills: [{ root: "vendor" }] } } }),
    });
    const result = await check({ cwd: dir });
    expect(result.diagnostics.map(({ file, code, severity }) => [file, code, severity])).toEqual([["skills/long/SKILL.md", "body-too-long", "error"]]);
  });

  it("a config error names an override without globs", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": JSON.stringify({ overrides: [{ files: [], rules: {} }], agents: { main: {} } }) });
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("overrides[0].files: give at least one glob");
  });
});

describe("the job summary's counts", () => {
  it("count the stale-bundle rows of build --check too", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills/odd/SKILL.md": skillMd("not-odd"), "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }) });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    await writeTree(dir, { "skills/odd/SKILL.md": skillMd("not-odd", "Another description. Use when it matters.") });
    const summary = join(dir, "summary.md");
    const run = await runCli(["build", "--check"], { cwd: dir, env: { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary } });
    expect(run.code).toBe(1);
    const page = await readFile(summary, "utf8");
    const errors = page.split("\n").filter((line) => line.startsWith("| error")).length;
    const warnings = page.split("\n").filter((line) => line.startsWith("| warning")).length;
    expect(errors).toBeGreaterThan(1);
    expect(page).toContain(`failed\\, ${errors} errors\\, ${warnings} warning`);
  });
});
