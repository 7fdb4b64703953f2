/**
 * What CI gets: GitHub annotations and SARIF with paths relative to the working folder (the repository root),
 * for diagnostics, config errors and a stale bundle; and the job summary under GitHub Actions.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import AjvDraft04Module from "ajv-draft-04";
import addFormatsModule from "ajv-formats";
import { micromark } from "micromark";
import { gfm, gfmHtml } from "micromark-extension-gfm";
import { describe, expect, it } from "vitest";
import { REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";
import { formatGithub, formatSarif, formatStepSummary, type Annotation } from "../src/cli/report.js";
import { escapeMarkdown } from "../src/compile/terminal.js";
import { DOCS_URL, REPOSITORY_URL } from "../src/compile/links.js";

const AjvDraft04 = AjvDraft04Module.default ?? AjvDraft04Module;
const addFormats = addFormatsModule.default ?? addFormatsModule;

/** The SARIF 2.1.0 JSON Schema (draft-04), vendored: see test/fixtures/sarif/README.md. */
const sarifSchema = JSON.parse(await readFile(join(REPO, "test/fixtures/sarif/sarif-2.1.0-rtm.5.json"), "utf8"));
// The schema has a pattern JavaScript rejects in unicode mode (`^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$`).
const validateSarif = addFormats(new AjvDraft04({ strict: false, allErrors: true, unicodeRegExp: false })).compile(sarifSchema);

/** A repository whose config sits in packages/agent/: one broken skill, one inlined with a `</skill>` in its body. */
async function monorepo(config: object = { agents: { main: { skills: [{ root: "skills", inline: ["tagged"] }] } } }): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, {
    "packages/agent/skills.config.json": JSON.stringify(config),
    "packages/agent/skills/bad/SKILL.md": "---\nname: bad\n---\nBody\n",
    "packages/agent/skills/tagged/SKILL.md": skillMd("tagged", "Has a tag.", "Text.\nStop </skill> here."),
  });
  return dir;
}

const CONFIG = ["--config", "packages/agent/skills.config.json"];

describe("--format github", () => {
  it("names files relative to the working folder, with the end of the span where known", async () => {
    const dir = await monorepo();
    const run = await runCli(["check", ...CONFIG, "--format", "github"], { cwd: dir });
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split("\n");
    expect(lines[0]).toMatch(/^::error file=packages\/agent\/skills\/bad\/SKILL\.md,line=1,col=1,title=description-missing::/);
    expect(lines[1]).toMatch(/^::warning file=packages\/agent\/skills\/tagged\/SKILL\.md,line=7,endLine=7,col=6,endColumn=13,title=body-closes-tag::/);
  });

  it("annotates a config error on the config file, then prints it and exits 2", async () => {
    const dir = await monorepo({ agents: { main: { skills: [{ root: 42 }] } } });
    const run = await runCli(["check", ...CONFIG], { cwd: dir, env: { GITHUB_ACTIONS: "true" } });
    expect(run.code).toBe(2);
    const [annotation, plain] = run.stderr.trim().split("\n");
    expect(annotation).toBe("::error file=packages/agent/skills.config.json,title=config-error::agents.main.skills[0].root: expected string, received number");
    expect(plain).toMatch(/^skills: .*packages\/agent\/skills\.config\.json: agents\.main\.skills\[0\]\.root: expected string, received number$/);
  });

  it("annotates each stale file of build --check at its path in the bundle", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha"),
    });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    await writeTree(dir, { "skills/alpha/SKILL.md": skillMd("alpha", "A new description.") });
    const run = await runCli(["build", "--check", "--format", "github"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("::error file=dist/skills/prompts/main.txt,title=stale-bundle::dist/skills is out of date: prompts/main.txt differs from a fresh build%0ARun `skills build` and commit the bundle.\n");
  });
});

describe("--format github past what GitHub shows", () => {
  const annotations = (severity: Annotation["severity"], count: number): Annotation[] => Array.from({ length: count }, (_, i) => ({ severity, rule: "r", message: `m${i}` }));

  it("ends with a notice counting them when a kind passes 10, GitHub's annotations per kind and step", () => {
    expect(formatGithub([...annotations("error", 10), ...annotations("warning", 10)])).not.toContain("::notice");
    const lines = formatGithub([...annotations("error", 2), ...annotations("warning", 11)]).split("\n");
    expect(lines).toHaveLength(14);
    expect(lines.at(-1)).toBe("::notice title=skillbake::2 errors and 11 warnings: GitHub shows the first 10 of each kind on the pull request; this step's log lists every one.");
    expect(formatGithub(annotations("error", 11)).split("\n").at(-1)).toMatch(/^::notice title=skillbake::11 errors: GitHub shows/);
  });

  it("annotates the first 100 of a code in a file, and counts the rest in a plain line of the log", () => {
    const many = Array.from({ length: 250 }, (_, i): Annotation => ({ severity: "warning", rule: "link-broken", file: "skills/x/SKILL.md", line: i + 1, message: `m${i}` }));
    const other: Annotation = { severity: "error", rule: "yaml-invalid", file: "skills/y/SKILL.md", line: 1, message: "y" };
    const lines = formatGithub([...many, other]).split("\n");
    expect(lines.filter((line) => line.startsWith("::warning file=skills/x/SKILL.md,"))).toHaveLength(100);
    expect(lines).toContain("skillbake: 150 more link-broken warnings in skills/x/SKILL.md are not shown; `--format json` lists every one.");
    expect(lines).toContain("::error file=skills/y/SKILL.md,line=1,title=yaml-invalid::y");
    expect(lines.at(-1)).toBe("::notice title=skillbake::1 error and 250 warnings: GitHub shows the first 10 of each kind on the pull request; this step's log lists them, up to 100 of a code in a file.");
    // A file name cannot make the count line a workflow command of its own.
    const forged = formatGithub(Array.from({ length: 101 }, (): Annotation => ({ severity: "warning", rule: "r", file: "a ##[error]b\n::error::c", message: "m" })));
    expect(forged.split("\n").filter((line) => !line.startsWith("::warning ") && !line.startsWith("::notice "))).toEqual(["skillbake: 1 more r warning in a ##\\x5berror]b\\n::error::c is not shown; `--format json` lists every one."]);
  });

  it("from the CLI: every finding a command, then the notice", async () => {
    const dir = await tempDir();
    const skills = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`skills/skill-${i}/SKILL.md`, skillMd(`other-${i}`)]));
    await writeTree(dir, { "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }), ...skills });
    const run = await runCli(["check", "--format", "github"], { cwd: dir });
    expect(run.code).toBe(0);
    const lines = run.stderr.trim().split("\n");
    expect(lines.filter((line) => line.startsWith("::warning ") && line.includes("title=name-mismatch::"))).toHaveLength(12);
    expect(lines.at(-1)).toBe("::notice title=skillbake::12 warnings: GitHub shows the first 10 of each kind on the pull request; this step's log lists every one.");
  });
});

describe("--format sarif", () => {
  it("prints a SARIF 2.1.0 log that the schema accepts: every rule, results with regions relative to the working folder", async () => {
    const dir = await monorepo();
    const run = await runCli(["check", ...CONFIG, "--format", "sarif"], { cwd: dir });
    expect(run.code).toBe(1);
    const log = JSON.parse(run.stdout);
    expect(validateSarif(log), JSON.stringify(validateSarif.errors)).toBe(true);
    const { driver } = log.runs[0].tool;
    expect(driver.rules.map((rule: { id: string }) => rule.id)).toEqual(expect.arrayContaining(["description-missing", "body-closes-tag", "config-error", "stale-bundle"]));
    // Links only where they resolve: the repository's docs, once package.json names a repository.
    const yamlInvalid = driver.rules.find((rule: { id: string }) => rule.id === "yaml-invalid");
    if (DOCS_URL) expect([yamlInvalid.helpUri, driver.informationUri]).toEqual([`${DOCS_URL}diagnostics.md#yaml-invalid`, REPOSITORY_URL]);
    else expect([yamlInvalid.helpUri, driver.informationUri, run.stdout.match(/https?:\/\/[^"]+/g)]).toEqual([undefined, undefined, ["https://json.schemastore.org/sarif-2.1.0.json"]]);
    expect(log.runs[0].results).toEqual([
      expect.objectContaining({
        ruleId: "description-missing",
        level: "error",
        locations: [{ physicalLocation: { artifactLocation: { uri: "packages/agent/skills/bad/SKILL.md", uriBaseId: "%SRCROOT%" }, region: { startLine: 1, startColumn: 1 } } }],
      }),
      expect.objectContaining({
        ruleId: "body-closes-tag",
        level: "warning",
        locations: [{ physicalLocation: { artifactLocation: { uri: "packages/agent/skills/tagged/SKILL.md", uriBaseId: "%SRCROOT%" }, region: { startLine: 7, startColumn: 6, endLine: 7, endColumn: 14 } } }],
      }),
    ]);
    // The schema check is real: a log without its version fails.
    expect(validateSarif({ ...log, version: undefined })).toBe(false);
  });

  it("gives a config error as a result on the config file, and exits 2", async () => {
    const dir = await monorepo({ agents: { main: { skills: [{ root: 42 }] } } });
    const run = await runCli(["check", ...CONFIG, "--format", "sarif"], { cwd: dir });
    expect(run.code).toBe(2);
    const log = JSON.parse(run.stdout);
    expect(validateSarif(log), JSON.stringify(validateSarif.errors)).toBe(true);
    expect(log.runs[0].results).toEqual([expect.objectContaining({ ruleId: "config-error", locations: [{ physicalLocation: { artifactLocation: { uri: "packages/agent/skills.config.json", uriBaseId: "%SRCROOT%" } } }] })]);
  });

  it("builds each location's URI a path segment at a time under %SRCROOT%: no scheme, query or fragment survives, and a file outside the working folder has none", async () => {
    const dir = await tempDir();
    const broken = "---\nname: x\n---\nBody ##[error]forged\n";
    await writeTree(dir, {
      "repo/skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "." }, { root: "../outside" }] } } }),
      "repo/javascript:alert(1)/SKILL.md": broken,
      "repo/https:/evil.example/SKILL.md": broken,
      "repo/a#b?c=%41 d/SKILL.md": broken,
      "repo/##[error]x/SKILL.md": broken,
      "outside/far/SKILL.md": broken,
    });
    const run = await runCli(["check", "--format", "sarif"], { cwd: join(dir, "repo") });
    expect(run.code).toBe(1);
    const log = JSON.parse(run.stdout);
    expect(validateSarif(log), JSON.stringify(validateSarif.errors)).toBe(true);
    type Result = { ruleId: string; locations?: { physicalLocation: { artifactLocation: { uri: string } } }[] };
    // One name-mismatch per skill, in path order (../outside/far sorts second).
    const locations = log.runs[0].results.filter((result: Result) => result.ruleId === "name-mismatch").map((result: Result) => result.locations?.[0]?.physicalLocation.artifactLocation);
    expect(locations).toEqual([
      { uri: "%23%23%5Berror%5Dx/SKILL.md", uriBaseId: "%SRCROOT%" },
      undefined,
      { uri: "a%23b%3Fc%3D%2541%20d/SKILL.md", uriBaseId: "%SRCROOT%" },
      { uri: "https%3A/evil.example/SKILL.md", uriBaseId: "%SRCROOT%" },
      { uri: "javascript%3Aalert(1)/SKILL.md", uriBaseId: "%SRCROOT%" },
    ]);
    for (const { uri } of locations.filter(Boolean) as { uri: string }[]) {
      // Resolved against the repository, each URI stays in it and keeps its whole path: no scheme, query or fragment.
      const url = new URL(uri, "https://github.example/repo/");
      expect([url.origin, url.search, url.hash]).toEqual(["https://github.example", "", ""]);
      expect(url.pathname.startsWith("/repo/")).toBe(true);
    }
    const texts = log.runs[0].results.map((result: { message: { text: string } }) => result.message.text).join("\n");
    expect(texts).toContain("##\\x5berror]x");
    expect(texts).not.toContain("##[");
  });
});

describe("the GitHub Actions job summary", () => {
  it("gets a heading and a table of what was found, its text escaped", async () => {
    const dir = await monorepo();
    // Its body links twice to "y", which is not there: two link-broken warnings besides the three.
    await writeTree(dir, { "packages/agent/skills/odd/SKILL.md": skillMd("a|<b>[x](y)") });
    const summary = join(dir, "summary.md");
    await writeTree(dir, { "summary.md": "earlier step\n" });
    const run = await runCli(["check", ...CONFIG], { cwd: dir, env: { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary } });
    expect(run.code).toBe(1);
    const text = await readFile(summary, "utf8");
    expect(text.startsWith("earlier step\n### skills check\\: failed\\, 1 error\\, 5 warnings \\(1 agent\\, 3 skills\\)\n\n| severity | where | code | message |\n")).toBe(true);
    expect(text).toContain("| error | packages\\/agent\\/skills\\/bad\\/SKILL\\.md\\:1\\:1 | description\\-missing | no \\`description\\` in the frontmatter |\n");
    expect(text).toContain('name \\"a\\|\\<b\\>\\[x\\]\\(y\\)\\" does not match');
  });

  it("renders skill text as text: no link, autolink, image, HTML, @mention or issue reference reaches the page", async () => {
    const dir = await tempDir();
    const attack = "See https://evil.example/login, www.evil.example or [approve](https://evil.example) ![x](https://evil.example/p.png) <details><summary>Approved by @org/security-team</summary></details> fixes #12 and GH-2 <!-- hide";
    await writeTree(dir, { "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }), "skills/odd/SKILL.md": skillMd(JSON.stringify(attack)) });
    const summary = join(dir, "summary.md");
    // The name does not match its folder: a warning that quotes it.
    expect((await runCli(["check"], { cwd: dir, env: { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary } })).code).toBe(0);
    const html = micromark(await readFile(summary, "utf8"), { allowDangerousHtml: true, extensions: [gfm()], htmlExtensions: [gfmHtml()] });
    expect(html).toContain("<table>");
    expect(html).not.toMatch(/<(?!\/?(?:h3|table|thead|tbody|tr|th|td|p)\b)[a-z!]/i);
    // What GitHub links in the rendered text: a mention, an issue reference; the zero-width space breaks each.
    expect(html.replace(/<[^>]*>/g, "")).not.toMatch(/(?:^|[^\w`])@[a-z0-9]|(?:^|[^\w&])#\d|\bGH-\d/i);
    expect(html).toContain("Approved by @\u200borg/security-team");
  });

  it("gets nothing from a run with nothing to report", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }), "skills/alpha/SKILL.md": skillMd("alpha") });
    const summary = join(dir, "summary.md");
    expect((await runCli(["check"], { cwd: dir, env: { GITHUB_ACTIONS: "true", GITHUB_STEP_SUMMARY: summary } })).code).toBe(0);
    await expect(readFile(summary, "utf8")).rejects.toThrow("ENOENT");
  });

  it("is not written outside GitHub Actions", async () => {
    const dir = await monorepo();
    const summary = join(dir, "summary.md");
    await runCli(["check", ...CONFIG], { cwd: dir, env: { GITHUB_STEP_SUMMARY: summary } });
    await expect(readFile(summary, "utf8")).rejects.toThrow("ENOENT");
  });
});

describe("the CI formats' text, in process", () => {
  const named: Annotation = {
    severity: "error",
    rule: "name-mismatch",
    message: "name a\nb is 100% off ##[group] ::x",
    hint: "rename it",
    file: "skills/a,b:c/%\u001b/SKILL.md",
    line: 2,
    column: 3,
    endLine: 4,
    endColumn: 5,
  };

  it("github: properties and message escaped for the runner after the report's own escapes; the hint after the one %0A", () => {
    expect(formatGithub([named, { severity: "warning", rule: "a\r\nb:c,d%", message: "m" }])).toBe(
      [
        "::error file=skills/a%2Cb%3Ac/%25\\x1b/SKILL.md,line=2,endLine=4,col=3,endColumn=5,title=name-mismatch::name a\\nb is 100%25 off ##\\x5bgroup] ::x%0Arename it",
        "::warning title=a%0D%0Ab%3Ac%2Cd%25::m",
      ].join("\n"),
    );
  });

  it("the job summary: a row per annotation up to 50, where as file:line:column, every cell escaped; the rest counted", () => {
    const rows = [named, { severity: "warning" as const, rule: "r", message: "no file", line: 7, column: 1 }, { severity: "warning" as const, rule: "r", message: "m", file: "f", column: 9 }];
    expect(formatStepSummary("skills check: #1 @bob", rows)).toBe(
      [
        `### ${escapeMarkdown("skills check: #1 @bob")}`,
        "",
        "| severity | where | code | message |",
        "| --- | --- | --- | --- |",
        `| error | ${escapeMarkdown("skills/a,b:c/%\u001b/SKILL.md:2:3")} | ${escapeMarkdown("name-mismatch")} | ${escapeMarkdown(named.message)} |`,
        "| warning | 7\\:1 | r | no file |",
        "| warning | f | r | m |",
      ].join("\n"),
    );
    expect(formatStepSummary("h", [])).toBe("### h");
    const many = formatStepSummary("h", Array.from({ length: 52 }, (_, i) => ({ severity: "warning" as const, rule: "r", message: `m${i}` }))).split("\n");
    expect(many.filter((line) => line.startsWith("| warning"))).toHaveLength(50);
    expect(many.slice(-2)).toEqual(["", "… and 2 more in the job log."]);
    expect(formatStepSummary("h", [{ severity: "error", rule: "r", message: "m", file: "", line: 3, column: 1 }]).split("\n").at(-1)).toBe(`| error | ${escapeMarkdown("3:1")} | r | m |`);
    expect(formatStepSummary("h", Array.from({ length: 50 }, () => named))).not.toContain("more in the job log");
  });

  it("sarif: each rule's default level, results with their rule's index, a region past the span's end, a URI a segment at a time", () => {
    const log = JSON.parse(formatSarif([named, { ...named, file: "skills/a b/#?/x:y.md", line: 2, column: undefined, endLine: undefined, endColumn: undefined }, { severity: "warning", rule: "config-error", message: "m" }]));
    const run = log.runs[0];
    const rules = run.tool.driver.rules as { id: string; defaultConfiguration: { level: string } }[];
    const level = (id: string) => rules.find((rule) => rule.id === id)!.defaultConfiguration.level;
    expect([level("name-mismatch"), level("field-unknown"), level("frontmatter-missing"), level("config-error")]).toEqual(["warning", "none", "error", "error"]);
    expect(run.results.map((result: { ruleIndex: number }) => rules[result.ruleIndex]!.id)).toEqual(["name-mismatch", "name-mismatch", "config-error"]);
    expect(run.results[0].message.text).toBe("name a\\nb is 100% off ##\\x5bgroup] ::x\nrename it");
    expect(run.results[0].locations).toEqual([
      { physicalLocation: { artifactLocation: { uri: "skills/a%2Cb%3Ac/%25%1B/SKILL.md", uriBaseId: "%SRCROOT%" }, region: { startLine: 2, startColumn: 3, endLine: 4, endColumn: 6 } } },
    ]);
    expect(run.results[1].locations[0].physicalLocation).toEqual({ artifactLocation: { uri: "skills/a%20b/%23%3F/x%3Ay.md", uriBaseId: "%SRCROOT%" }, region: { startLine: 2 } });
    expect(run.results[2]).not.toHaveProperty("locations");
  });

  it("sarif: no location for a file outside the working folder or a path that is not plain", () => {
    for (const file of ["../x/SKILL.md", "/etc/passwd", "a//b", "./a", "a/./b", "a/", ""]) {
      const result = JSON.parse(formatSarif([{ severity: "error", rule: "config-error", message: "m", file, line: 1 }])).runs[0].results[0];
      expect(result, file).not.toHaveProperty("locations");
    }
  });
});
