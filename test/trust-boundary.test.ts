import { execFileSync } from "node:child_process";
import { existsSync, rmSync, symlinkSync } from "node:fs";
import { readdir, readFile, rm, truncate } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { bundleOf, stagedCopies } from "../src/bundle/bundle.js";
import { writeBundle } from "../src/bundle/emit.js";
import { formatPretty, readSourceLines } from "../src/cli/report.js";
import { compile } from "../src/compile/compile.js";
import { loadConfig } from "../src/compile/config.js";
import { styleFor } from "../src/compile/terminal.js";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

/** What a file outside the project holds; it must appear in no output. */
const SECRET = "AWS_SECRET_ACCESS_KEY=outside-the-roots-7f3a";

/**
 * A built project with a secret beside it (outside the project folder): `skills.config.json`, two skills, the
 * bundle in dist/skills. With `stage`, the skills' files are copied into the bundle.
 */
async function builtProject(options: { stage?: boolean } = {}): Promise<{ dir: string; secret: string }> {
  const base = await tempDir();
  const dir = join(base, "project");
  const secret = join(base, "secret.env");
  await writeTree(base, {
    "secret.env": `${SECRET}\n{"schemaVersion": "${SECRET}"\n`,
    "project/skills.config.json": JSON.stringify({ location: "relative", ...(options.stage ? { stage: true } : {}), agents: { main: { skills: [{ root: "skills" }] } } }),
    "project/skills/alpha/SKILL.md": skillMd("alpha"),
    "project/skills/alpha/references/guide.md": "# Guide\n",
    "project/skills/beta/SKILL.md": skillMd("beta"),
  });
  const run = await runCli(["build"], { cwd: dir });
  expect(run.code, run.stderr).toBe(0);
  return { dir, secret };
}

async function replaceWithLink(dir: string, path: string, target: string): Promise<void> {
  await rm(join(dir, path), { recursive: true, force: true });
  await writeTree(dir, { [path]: { link: target } });
}

describe("build --check and diff never follow a link in the outDir or read a special file", () => {
  it("a prompt replaced by a link to a secret outside the project: stale, reported as a link, the secret printed nowhere", async () => {
    const { dir, secret } = await builtProject();
    await replaceWithLink(dir, "dist/skills/prompts/main.txt", secret);
    for (const format of ["pretty", "github", "json"]) {
      const run = await runCli(["build", "--check", "--format", format], { cwd: dir });
      expect(run.code).toBe(1);
      expect(run.stdout + run.stderr).not.toContain("outside-the-roots");
      if (format === "json") expect(JSON.parse(run.stdout).stale).toEqual([{ path: "prompts/main.txt", state: "changed", notFollowed: "a symlink; not followed" }]);
      else expect(run.stderr).toContain("  changed  prompts/main.txt (a symlink; not followed)");
    }
  });

  it("a folder of the bundle replaced by a link to an outside folder: its files are not read", async () => {
    const { dir } = await builtProject();
    await writeTree(dir, { "../outside/main.txt": `${SECRET}\n` });
    await replaceWithLink(dir, "dist/skills/prompts", "../../../outside");
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).not.toContain("outside-the-roots");
    expect(run.stderr).toContain("  changed  prompts/main.txt (below prompts, a symlink; not followed)");
  });

  it("a staged file replaced by a link: reported as a link, not hashed", async () => {
    const { dir, secret } = await builtProject({ stage: true });
    await replaceWithLink(dir, "dist/skills/skills/alpha/references/guide.md", secret);
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("  changed  skills/alpha/references/guide.md (a symlink; not followed)");
  });

  it("a FIFO in place of a prompt does not hang --check", { timeout: 15_000 }, async () => {
    const { dir } = await builtProject();
    await rm(join(dir, "dist/skills/prompts/main.txt"));
    execFileSync("mkfifo", [join(dir, "dist/skills/prompts/main.txt")]);
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("  changed  prompts/main.txt (a FIFO; not read)");
  });

  it("an outDir that is a link: --check refuses it (exit 2) and lists nothing behind it", async () => {
    const { dir } = await builtProject();
    await writeTree(dir, { "../outside/private-name.txt": SECRET });
    await replaceWithLink(dir, "dist/skills", "../../outside");
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("is a symbolic link; not followed");
    expect(run.stdout + run.stderr).not.toContain("private-name");
  });

  it("skills diff: a manifest.json that links to a file outside is not read, in a folder or named", async () => {
    const { dir, secret } = await builtProject();
    await writeTree(dir, { "base/manifest.json": await readFile(join(dir, "dist/skills/manifest.json"), "utf8") });
    await replaceWithLink(dir, "dist/skills/manifest.json", secret);
    for (const after of ["dist/skills", "dist/skills/manifest.json"]) {
      const run = await runCli(["diff", "base", after], { cwd: dir });
      expect(run.code).toBe(2);
      expect(run.stderr.trim()).toBe("skills diff: dist/skills/manifest.json is a symlink; not followed. Give the bundle folder or manifest.json it points to.");
    }
    expect(await readdir(join(dir, "dist/skills"))).toContain("manifest.json");
  });
});

describe("skill text cannot forge a GitHub workflow command in any output", () => {
  const FORGED_DESCRIPTION = "Forged.\\n::error file=src/auth.ts,line=1,title=Security::FORGED\\n##[error]x";
  const forgeTree = (description = FORGED_DESCRIPTION, step = "Step one.") => ({
    "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills", inline: ["forge-inline"], available: ["*", "!forge-inline"] }] } } }),
    "skills/forge/SKILL.md": `---\nname: "::error::name"\ndescription: "${description}"\n---\n\n# Forge\n`,
    "skills/forge-inline/SKILL.md": `---\nname: forge-inline\ndescription: "##[error]x"\n---\n\n# Forge\n\n::warning::x\n  ::set-output name=x::y\n${step}\n`,
    "skills/##[error]folder/SKILL.md": skillMd("folder"),
  });
  /** A command skillbake writes itself with --format github: every value escaped, the data after `::`. */
  const OWN_COMMAND = /^::(error|warning) (file=[^,:]*,)?(line=\d+,)?(endLine=\d+,)?(col=\d+,)?(endColumn=\d+,)?title=[a-z-]+::|^::notice title=skillbake::\d+ (errors?|warnings?)( and \d+ warnings?)?: GitHub shows/;

  /** Lines a runner would act on (it trims leading whitespace; `##[` counts anywhere) that skillbake did not write. */
  function forgedLines(output: string): string[] {
    return output.split(/\r\n|\r|\n/).filter((line) => {
      const trimmed = line.replace(/^[\s\x85]+/, "");
      return (trimmed.startsWith("::") && !OWN_COMMAND.test(trimmed)) || line.includes("##[");
    });
  }

  it("build, check, build --check, list and diff, in every format", { timeout: 120_000 }, async () => {
    const dir = await tempDir();
    await writeTree(dir, forgeTree());
    const outputs: [string, string][] = [];
    const run = async (args: string[], env?: Record<string, string>) => {
      const result = await runCli(args, { cwd: dir, env });
      outputs.push([args.join(" "), result.stdout + result.stderr]);
      return result;
    };
    for (const format of ["pretty", "github", "json", "sarif"]) {
      expect((await run(["build", "--format", format])).code).toBe(0);
      expect((await run(["check", "--format", format])).code).toBe(0);
    }
    expect((await run(["build"], { GITHUB_ACTIONS: "true" })).code).toBe(0);
    for (const format of ["pretty", "json"]) expect((await run(["list", "--format", format])).code).toBe(0);

    await writeTree(dir, { "base/manifest.json": await readFile(join(dir, "dist/skills/manifest.json"), "utf8") });
    const manifest = JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8"));
    manifest.agents = { "::error::agent": manifest.agents.main };
    await writeTree(dir, { "forged-base/manifest.json": JSON.stringify(manifest) });
    await writeTree(dir, forgeTree("Forged, edited.\\n::error file=src/auth.ts,line=1,title=Security::FORGED\\n##[error]x", "Step two."));
    for (const format of ["pretty", "github", "json", "sarif"]) {
      const check = await run(["build", "--check", "--format", format]);
      expect(check.code).toBe(1);
      if (format !== "json") expect(check.stderr).toContain("Step two."); // the diff is shown
    }
    expect((await run(["build"])).code).toBe(0);
    for (const format of ["pretty", "markdown", "json"]) {
      expect((await run(["diff", "base", "dist/skills", "--format", format])).code).toBe(0);
      // An agent id outside the pattern a config allows is refused, naming the field.
      const forged = await run(["diff", "forged-base", "dist/skills", "--format", format]);
      expect(forged.code).toBe(2);
      expect(forged.stderr).toMatch(/^skills diff: forged-base\/manifest\.json: agents\.::error::agent: /);
    }

    for (const [command, output] of outputs) expect.soft(forgedLines(output), command).toEqual([]);
    // The text is still there, escaped where it would start a line.
    const all = outputs.map(([, output]) => output).join("\n");
    expect(all).toContain("\\x3a:warning::x");
    expect(all).toContain("##\\x5berror]x");
    // JSON output keeps its data: `\u005b` is the bracket to a parser.
    const [, listJson] = outputs.find(([command]) => command === "list --format json")!;
    expect(JSON.parse(listJson.slice(0, listJson.lastIndexOf("}") + 1)).agents[0].skills.map((skill: { name: string }) => skill.name)).toContain("::error::name");
  });
});

describe("a file swapped between discovery and reading is not used (path-changed)", () => {
  /** A project whose alpha skill has a reference file, beside an outside folder holding a secret SKILL.md and guide. */
  async function project(config: object = {}): Promise<{ dir: string; outside: string }> {
    const base = await tempDir();
    const dir = join(base, "project");
    await writeTree(base, {
      "outside/SKILL.md": skillMd("alpha", `Leaks ${SECRET}.`, `# Secret\n\n${SECRET}`),
      "outside/references/guide.md": `${SECRET}\n`,
      "project/skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills", available: ["beta"], inline: ["alpha"] }] } }, ...config }),
      "project/skills/alpha/SKILL.md": skillMd("alpha"),
      "project/skills/alpha/references/guide.md": "# Guide\n",
      "project/skills/beta/SKILL.md": skillMd("beta"),
    });
    return { dir, outside: join(base, "outside") };
  }

  /** Compiles with `swap` run after discovery, then writes the bundle when nothing failed; returns everything produced. */
  async function compileWithSwap(dir: string, swap: () => void) {
    const loaded = await loadConfig(undefined, dir);
    const result = await compile(loaded, { afterDiscovery: swap });
    const errors = result.diagnostics.filter((diagnostic) => diagnostic.severity === "error");
    if (errors.length === 0) await writeBundle(result.outDir, bundleOf(result), stagedCopies(result), loaded);
    const written = existsSync(result.outDir) ? (await readdir(result.outDir, { recursive: true })).map((path) => join(result.outDir, path)) : [];
    const bundleText = (await Promise.all(written.map((path) => readFile(path, "utf8").catch(() => "")))).join("\n");
    const pretty = formatPretty(result.diagnostics, styleFor({ isTTY: false }, {}), readSourceLines(result.diagnostics, dir, result.verified));
    return { result, bundleText, shown: `${pretty}\n${result.agents.map((agent) => agent.prompt).join("\n")}` };
  }

  const swapForLink = (path: string, target: string) => () => {
    rmSync(path, { recursive: true });
    symlinkSync(target, path);
  };

  it("SKILL.md swapped for a link to a file outside the root: the skill is left out, the file never read", async () => {
    const { dir, outside } = await project();
    const { result, shown, bundleText } = await compileWithSwap(dir, swapForLink(join(dir, "skills/alpha/SKILL.md"), join(outside, "SKILL.md")));
    expect(shown + bundleText).not.toContain("outside-the-roots");
    // The inline pattern "alpha" now selects nothing: pattern-unmatched besides.
    expect(result.diagnostics.map(({ code, severity, file }) => ({ code, severity, file })).filter(({ code }) => code !== "pattern-unmatched")).toEqual([
      { code: "path-changed", severity: "error", file: "skills/alpha/SKILL.md" },
    ]);
    expect(result.agents[0]!.skills.map((skill) => skill.name)).toEqual(["beta"]);
  });

  it("a reference file swapped for a link out of the root: path-changed, not hashed or staged", async () => {
    const { dir, outside } = await project({ stage: true, rules: { "path-changed": "warn" } });
    const { result, bundleText } = await compileWithSwap(dir, swapForLink(join(dir, "skills/alpha/references/guide.md"), join(outside, "references/guide.md")));
    expect(bundleText).not.toContain("outside-the-roots");
    expect(result.diagnostics.map(({ code, file }) => ({ code, file }))).toEqual([{ code: "path-changed", file: "skills/alpha/references/guide.md" }]);
    const alpha = result.agents[0]!.skills.find((skill) => skill.name === "alpha")!;
    expect(alpha.files.map((file) => file.path)).toEqual(["SKILL.md"]);
    expect(existsSync(join(dir, "dist/skills/skills/alpha/SKILL.md"))).toBe(true);
    expect(existsSync(join(dir, "dist/skills/skills/alpha/references/guide.md"))).toBe(false);
  });

  it("a context file that is a link out of the config's folder: symlink-escape, not read", async () => {
    const { dir, outside } = await project();
    const config = { location: "relative", agents: { main: { context: ["context/*.md"], skills: [{ root: "skills" }] } } };
    await writeTree(dir, { "skills.config.json": JSON.stringify(config), "context/rules.md": "# Rules\n", "context/secret.md": { link: join(outside, "references/guide.md") } });
    const run = await runCli(["build", "--format", "json"], { cwd: dir });
    expect(run.stdout + run.stderr).not.toContain("outside-the-roots");
    const prompt = await readFile(join(dir, "dist/skills/prompts/main.txt"), "utf8");
    expect(prompt).not.toContain("outside-the-roots");
    expect(prompt).toContain("# Rules");
    expect(JSON.parse(run.stdout).diagnostics).toMatchObject([{ code: "symlink-escape", file: "context/secret.md" }]);
  });

  it("a skill's folder swapped for a link to an outside folder: its files are not read; by default the build fails", async () => {
    const { dir, outside } = await project({ stage: true });
    const { result, shown, bundleText } = await compileWithSwap(dir, swapForLink(join(dir, "skills/alpha"), outside));
    expect(shown + bundleText).not.toContain("outside-the-roots");
    // The inline pattern "alpha" now selects nothing: pattern-unmatched besides.
    expect(result.diagnostics.map(({ code, severity, file }) => ({ code, severity, file })).filter(({ code }) => code !== "pattern-unmatched")).toEqual([
      { code: "path-changed", severity: "error", file: "skills/alpha/SKILL.md" },
    ]);
    expect(existsSync(join(dir, "dist/skills"))).toBe(false);
  });
});

describe("a file a pull request makes gigabytes long is not read whole: one line, never an internal error", () => {
  // Sparse files: 700 MiB on no disk space, past the longest string Node makes of a file (512 MiB).
  const HUGE = 700 * 1024 * 1024;

  it("a committed prompt: build --check lists it changed, without a diff", async () => {
    const { dir } = await builtProject();
    await truncate(join(dir, "dist/skills/prompts/main.txt"), HUGE);
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("\n  changed  prompts/main.txt\n\nRun `skills build` to update it.\n");
    expect(run.stderr).not.toContain("internal error");
  });

  it("a published index.json: the folder is not taken for one skillbake wrote", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }], publish: { wellKnown: "public" } } } }),
      "skills/alpha/SKILL.md": skillMd("alpha"),
    });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    await truncate(join(dir, "public/.well-known/agent-skills/index.json"), HUGE);
    const run = await runCli(["build"], { cwd: dir });
    expect(run).toMatchObject({ code: 2, stderr: expect.stringMatching(/^skills: .*public\/\.well-known\/agent-skills is not empty and holds no discovery index written by skillbake; refusing to replace it\. .*\n$/) });
  });

  it("the config file: exit 2, naming it", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": "{}", "skills/alpha/SKILL.md": skillMd("alpha") });
    await truncate(join(dir, "skills.config.json"), HUGE);
    const run = await runCli(["build"], { cwd: dir });
    expect(run).toMatchObject({ code: 2, stderr: `skills: ${join(dir, "skills.config.json")}: the config file is 700 MiB, over the 64 MiB a config file may hold\n` });
  });

  it("a context file over 1 MiB: file-too-large, left out unread", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { context: ["*.md"], skills: [{ root: "skills" }] } } }),
      "AGENTS.md": "# Rules\n",
      "CLAUDE.md": "# Kept\n",
      "skills/alpha/SKILL.md": skillMd("alpha"),
    });
    await truncate(join(dir, "AGENTS.md"), HUGE);
    const run = await runCli(["check", "--format", "json"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout).diagnostics).toMatchObject([
      { code: "file-too-large", severity: "error", file: "AGENTS.md", line: 1, column: 1, message: "the context file AGENTS.md is 700.0 MiB, over the 1 MiB limit; it is left out" },
    ]);
    await truncate(join(dir, "AGENTS.md"), 1024 * 1024);
    expect((await runCli(["check"], { cwd: dir })).code).toBe(0);
  });
});

describe("names and values: canonical twins, huge values, lone surrogates", () => {
  const config = (roots: string[], extra: object = {}) =>
    JSON.stringify({ location: "relative", ...extra, agents: { main: { skills: roots.map((root) => ({ root })) } } });
  const nfc = "caf\u00e9";
  const nfd = "cafe\u0301";

  it("names that differ only in Unicode normalization are one name: duplicate-name in a root, duplicate-across-sources across", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": config(["skills"]),
      "skills/a/SKILL.md": skillMd(nfc),
      "skills/b/SKILL.md": skillMd(nfd),
      "other/skills.config.json": config(["one", "two"]),
      "other/one/x/SKILL.md": skillMd(nfc),
      "other/two/x/SKILL.md": skillMd(nfd),
    });
    const inRoot = JSON.parse((await runCli(["check", "--format", "json"], { cwd: dir })).stdout);
    expect(inRoot.diagnostics.filter((d: { code: string }) => d.code === "duplicate-name")).toMatchObject([
      { file: "skills/b/SKILL.md", message: `"${nfd}" is already defined by skills/a/SKILL.md (as the same name in another Unicode normalization), which comes first in path order; this one is left out` },
    ]);
    expect(inRoot.agents[0].skills).toBe(1);
    const across = JSON.parse((await runCli(["check", "--format", "json"], { cwd: join(dir, "other") })).stdout);
    expect(across.diagnostics.map((d: { code: string }) => d.code)).toContain("duplicate-across-sources");
  });

  it("an 800 KB name gives diagnostics of a few kilobytes, in every format", { timeout: 30_000 }, async () => {
    const dir = await tempDir();
    const name = "Huge".repeat(200_000);
    await writeTree(dir, { "skills.config.json": config(["skills"]), "skills/huge/SKILL.md": skillMd(name, "Does huge things.", "Body.") });
    for (const format of ["pretty", "github", "json"]) {
      const run = await runCli(["check", "--format", format], { cwd: dir });
      expect(run.code).toBe(0);
      expect(run.stdout.length + run.stderr.length, format).toBeLessThan(10_000);
      expect(run.stdout + run.stderr).toContain("characters left out");
    }
  });

  it("a lone surrogate escaped in the frontmatter is encoding-invalid, so getPrompt equals prompts/<agent>.txt", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": config(["skills"], { rules: { "encoding-invalid": "warn" } }),
      "skills/good/SKILL.md": skillMd("good"),
      "skills/half/SKILL.md": '---\nname: half\ndescription: "Half a pair: \\ud800."\n---\n\nBody.\n',
      "skills/half-name/SKILL.md": '---\nname: "half-\\udc00"\ndescription: Fine.\n---\n\nBody.\n',
    });
    const run = await runCli(["build", "--format", "json"], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).diagnostics.map(({ code, file }: { code: string; file: string }) => `${code} ${file}`)).toEqual([
      "encoding-invalid skills/half-name/SKILL.md",
      "encoding-invalid skills/half/SKILL.md",
    ]);
    const module = await import(pathToFileURL(join(dir, "dist/skills/index.js")).href);
    expect(module.getPrompt("main")).toBe(await readFile(join(dir, "dist/skills/prompts/main.txt"), "utf8"));
    expect(module.getPrompt("main")).toContain("<name>good</name>");
  });
});
