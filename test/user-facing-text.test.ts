/**
 * What users read speaks of the product and of what they know (Claude Code, Codex, Pi, the Agent Skills
 * specification, the MCP skills extension), never of the team's own history: its design notes, issues, rounds of
 * work or the sections of its internal contract. Scanned: the README, every docs page, every file under src/
 * (messages, hints and the JSDoc that ships in the declarations; comments too, as the strictest line is the
 * simplest), types/, examples/, package.json and action.yml, and what the CLI writes and prints in a new project
 * (the bundle, `skills init`'s files, help, JSON Schemas). The packed tarball's files are scanned by
 * test/package.test.ts with the same words.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { glob } from "tinyglobby";
import { describe, expect, it } from "vitest";
import { forbiddenWords, internalReferences } from "./internal-references.js";
import { REPO, runCli, tempDir, writeTree } from "./helpers.js";

const USER_FACING = ["README.md", "package.json", "action.yml", "docs/**", "src/**", "types/**", "examples/**"];

describe("text users read", () => {
  it("recognises each internal reference, and leaves the ordinary words alone", () => {
    for (const text of ["seed 001", "Seed 004's setting", "the seed designs", "seeds 003 and 004", "issue 16's review", "Issue #18", "SPEC §6", "spec §3–§4", "see SPEC.md", "this round", "This Round's bench", "the last round", "stop 2", "stops 3"]) {
      expect(internalReferences(text), text).not.toEqual([]);
    }
    for (const text of ["a fixed random seed", "FUZZ_SEED=1", "seedling", "issues", "an issue tracker", "a public issue", "the spec", "round-trip", "a round trip", "stop", "stops the run", "nonstop 3", "§"]) {
      expect(internalReferences(text), text).toEqual([]);
    }
  });

  it("names no design note, issue, round or contract section in the docs, the sources or the examples", async () => {
    const files = (await glob(USER_FACING, { cwd: REPO, dot: true, ignore: ["**/node_modules/**"] })).sort();
    expect(files).toEqual(expect.arrayContaining(["README.md", "docs/configuration.md", "src/compile/config.ts", "types/vite.d.ts"]));
    const found: string[] = [];
    for (const file of files) found.push(...internalReferences(await readFile(join(REPO, file), "utf8")).map((hit) => `${file}:${hit}`));
    expect(found, `reword these as the behaviour they name (forbidden: ${forbiddenWords})`).toEqual([]);
  });

  it("sends users to no test file: the tests are not in the package (the developers' page aside)", async () => {
    const pages = (await glob(["README.md", "docs/**/*.md"], { cwd: REPO, ignore: ["docs/developing.md"] })).sort();
    const found: string[] = [];
    for (const file of pages) {
      const lines = (await readFile(join(REPO, file), "utf8")).split("\n");
      for (const [index, line] of lines.entries()) if (/\btest\/|\.test\.ts\b/.test(line)) found.push(`${file}:${index + 1}: ${line.trim()}`);
    }
    expect(found, "say what the tests check, without their paths").toEqual([]);
  });

  it("names none in what the CLI writes and prints: the bundle, `skills init`, help and schemas", async () => {
    const project = await tempDir("skillbake-words-");
    await writeTree(project, { "package.json": "{}\n", "node_modules/skillbake": { link: REPO } });
    const outputs: string[] = [];
    const cli = async (...args: string[]) => {
      const run = await runCli(args, { cwd: project });
      expect(run.code, `skills ${args.join(" ")}: ${run.stderr}`).toBe(0);
      outputs.push(`skills ${args.join(" ")}\n${run.stdout}${run.stderr}`);
    };
    await cli("init");
    // Then a config that reaches the settings with text of their own: the skill tool, staging, context files.
    await writeTree(project, {
      "skills.config.ts": `import { defineConfig } from "skillbake";
export default defineConfig({
  stage: { layout: "per-agent" },
  contextFile: "AGENTS.md",
  tokens: { encoding: "o200k_base" },
  agents: {
    assistant: { skills: [{ root: "skills" }], context: ["context/*.md"] },
    tasks: { skills: [{ root: "skills" }], invoke: "tool", catalogue: "tool", format: "markdown", tool: { style: "Skill" }, budget: { contextWindow: 200000 } },
  },
});
`,
      "context/house-rules.md": "Answer briefly.\n",
    });
    for (const command of ["build", "check", "list", "diff", "init", "schema"]) await cli(command, "--help");
    for (const schema of ["frontmatter", "config", "manifest"]) await cli("schema", schema);
    await cli("build");
    await cli("list", "--format", "json");
    await cli("check", "--format", "sarif");
    const written = await glob(["**"], { cwd: project, dot: true, ignore: ["node_modules/**"] });
    expect(written).toEqual(expect.arrayContaining(["dist/skills/index.d.ts", "dist/skills/agents/tasks.js", "dist/skills/agents/assistant/AGENTS.md", "skills/explain-code/SKILL.md"]));
    const found: string[] = [];
    for (const file of written) found.push(...internalReferences(await readFile(join(project, file), "utf8")).map((hit) => `${file}:${hit}`));
    for (const output of outputs) found.push(...internalReferences(output).map((hit) => `${output.split("\n")[0]}:${hit}`));
    expect(found).toEqual([]);
  });
});
