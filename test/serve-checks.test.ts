/**
 * What an agent serves with its files embedded (`files: "embed"`) is only what MCP hosts accept and can verify:
 * the diagnostics for skills they would refuse (SPEC §10), the frontmatter the SDK's reader reads as skillbake does,
 * embedded bytes that are exactly those hashed, and `skills serve` refusing a bundle it cannot serve, in one line.
 */
import { cp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { skillEntry } from "@modelcontextprotocol/server/ext/skills";
import { describe, expect, it } from "vitest";
import { build, check } from "../src/api.js";
import { bundleOf, bundleTexts } from "../src/bundle/bundle.js";
import { compile } from "../src/compile/compile.js";
import { loadConfig } from "../src/compile/config.js";
import { parseSkillFile, writtenFrontmatter } from "../src/compile/parse.js";
import type { McpSkills } from "../src/runtime/serve.js";
import { REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const embed = (skills: Record<string, unknown>[] = [{ root: "skills" }]) => JSON.stringify({ agents: { coding: { skills, files: "embed" } } });

async function project(tree: Record<string, string | Uint8Array>, config = embed()): Promise<string> {
  const dir = await tempDir("skillbake-serve-checks-");
  await writeTree(dir, { "skills.config.json": config, ...tree });
  return dir;
}

describe("skills an agent serves must be ones MCP hosts accept", () => {
  it("a namespaced name is serve-invalid (an error) and not served; the skill stays in the prompt", async () => {
    const dir = await project({ "skills/issue-triage/SKILL.md": skillMd("triage/issue-triage"), "skills/ok/SKILL.md": skillMd("ok") });
    const result = await check({ cwd: dir });
    expect(result.diagnostics.find((d) => d.code === "serve-invalid")).toMatchObject({ severity: "error", file: "skills/issue-triage/SKILL.md", line: 2, column: 7 });
    expect(result.diagnostics.find((d) => d.code === "serve-invalid")!.message).toContain("namespaced");
    expect(result.agents[0]!.served).toEqual(["ok"]);
    expect(result.agents[0]!.prompt).toContain("triage/issue-triage");
  });

  it("so is a name the extension's pattern refuses, a name or description not written (fallbacks), and a second skill of one name", async () => {
    const dir = await project(
      {
        "skills/Bad_Name/SKILL.md": skillMd("Bad_Name"),
        "skills/nameless/SKILL.md": "---\ndescription: No name of its own.\n---\n\nBody.\n",
        "skills/undescribed/SKILL.md": "---\nname: undescribed\n---\n\nThe first paragraph stands in.\n",
        "a/twin/SKILL.md": skillMd("twin"),
        "b/twin/SKILL.md": skillMd("twin"),
        "skills/aliased/SKILL.md": "---\nname: aliased\ndescription: &d Uses an anchor.\nx: *d\n---\n",
      },
      JSON.stringify({ descriptionFallback: "first-paragraph", agents: { coding: { skills: [{ root: "skills" }, { root: "a" }, { root: "b" }], files: "embed" } } }),
    );
    const result = await check({ cwd: dir });
    const invalid = result.diagnostics.filter((d) => d.code === "serve-invalid").map((d) => [d.file, d.message.replace(/;.*$/, "")]);
    expect(invalid).toEqual([
      ["b/twin/SKILL.md", 'agent "coding" has another skill named "twin" (a/twin/SKILL.md), and a name is a served skill\'s address'],
      ["skills/Bad_Name/SKILL.md", 'the name "Bad_Name" is not 1 to 64 lowercase letters, digits and single hyphens, as the MCP skills extension and the discovery index require'],
      ["skills/aliased/SKILL.md", "the frontmatter uses an anchor (`&name`), which the MCP SDK (what hosts verify a served SKILL.md with) does not read as skillbake does"],
      ["skills/nameless/SKILL.md", "the frontmatter has no `name`, and served skills are found by the name they were written with"],
      ["skills/undescribed/SKILL.md", "the frontmatter has no `description` of its own"],
    ]);
    expect(result.agents[0]!.served).toEqual(["twin"]);
  });

  it("a rule set to warn still leaves the skill unserved; an agent without files: embed checks nothing", async () => {
    const tree = { "skills/issue-triage/SKILL.md": skillMd("triage/issue-triage") };
    const warned = await check({ cwd: await project(tree, JSON.stringify({ rules: { "serve-invalid": "warn" }, agents: { coding: { skills: [{ root: "skills" }], files: "embed" } } })) });
    expect(warned.ok).toBe(true);
    expect(warned.agents[0]!.served).toEqual([]);
    const plain = await check({ cwd: await project(tree, JSON.stringify({ agents: { coding: { skills: [{ root: "skills" }] } } })) });
    expect(plain.diagnostics.map((d) => d.code)).toEqual(["name-invalid", "name-mismatch"]);
    expect(plain.agents[0]!.served).toBeUndefined();
  });

  it("over 512 files is serve-too-large, and so is over 16 MiB; each is still served (hosts may decline it)", async () => {
    const many = Object.fromEntries(Array.from({ length: 512 }, (_, index) => [`skills/many/refs/${String(index).padStart(3, "0")}.md`, "x"]));
    const dir = await project({ "skills/many/SKILL.md": skillMd("many"), ...many, "skills/big/SKILL.md": skillMd("big"), "skills/big/asset.bin": new Uint8Array(16 * 1024 * 1024 + 1) });
    const result = await check({ cwd: dir });
    const large = result.diagnostics.filter((d) => d.code === "serve-too-large");
    expect(large.map((d) => [d.file, d.severity])).toEqual([
      ["skills/big/SKILL.md", "error"],
      ["skills/many/SKILL.md", "error"],
    ]);
    expect(large[0]!.message).toContain(`2 files and ${Buffer.byteLength(skillMd("big")) + 16 * 1024 * 1024 + 1} bytes`);
    expect(large[1]!.message).toContain("513 files");
    expect(result.agents[0]!.served).toEqual(["big", "many"]);
  });
});

describe("the frontmatter served is the one hosts read", () => {
  /** SKILL.md frontmatter lines (besides name and description) and whether skillbake flags them as read otherwise. */
  const CASES: [string, boolean][] = [
    ["license: MIT", false],
    ["metadata:\n  author: me\n  version: '1.0'", false],
    ["allowed-tools: [Read, 'Bash(git log:*)', \"Grep\"]", false],
    ["tags:\n  - a\n  - b: c\n    d: e", false],
    ["n: >\n  folded\n  text\n\n  more", false],
    ["n: |-\n  kept\n    indented", false],
    ["n: 0x1F", false],
    ["n: 1e3", false],
    ["n: -0", false],
    ["n: ~", false],
    ["n: plain\n  continued", false],
    ["n: 'it''s'", false],
    ['n: "tab\\tand \\u00e9"', false],
    ["n: {a: 1, b: [x, y]}", false],
    ["# a comment\nn: x # trailing", false],
    ["n: &a 1", true],
    ["n: !!str 1", true],
    ['n: "over\n  two lines"', true],
    ["n: [a,\n  b]", true],
    ["n: |2\n   indicator", true],
    ["n: .inf", true],
    ["1: numeric key", true],
    ["n: [a: b]", true],
    ["n: [{a: b}, c]", false],
  ];

  it.each(CASES)("%j: flagged %s, and where it is not, the SDK reads the same values", async (lines, flagged) => {
    const text = `---\nname: x\ndescription: d\n${lines}\n---\n\nBody.\n`;
    const parsed = parseSkillFile("x/SKILL.md", Buffer.from(text), false);
    expect(parsed.findings).toEqual([]);
    const written = writtenFrontmatter(parsed)!;
    expect(written.unportable !== undefined).toBe(flagged);
    // As JSON, as the entry travels (and as the SDK's client compares, with ===, so -0 is 0).
    if (!flagged) expect(JSON.stringify((await skillEntry("x", { "SKILL.md": text })).frontmatter)).toBe(JSON.stringify(written.values));
  });

  it("flags fences and line ends the SDK splits otherwise", () => {
    const flag = (text: string) => writtenFrontmatter(parseSkillFile("x/SKILL.md", Buffer.from(text), false))!.unportable?.reason;
    expect(flag("---\nname: x\ndescription: d\n---\n")).toBeUndefined();
    expect(flag("---\r\nname: x\r\ndescription: d\r\n---\r\n")).toBeUndefined();
    expect(flag("--- \nname: x\ndescription: d\n---\n")).toMatch(/opening/);
    expect(flag("---\rname: x\rdescription: d\r---\r")).toMatch(/carriage return/);
  });
});

describe("embedding", () => {
  it("embeds text as it is (BOM and CRLF kept) and other bytes as bytes, exactly as hashed", async () => {
    const binary = Uint8Array.from({ length: 256 }, (_, index) => index);
    const dir = await project({ "skills/mixed/SKILL.md": skillMd("mixed"), "skills/mixed/notes.txt": "\ufeffline one\r\nline two\r\n", "skills/mixed/data.bin": binary });
    expect((await build({ cwd: dir })).ok).toBe(true);
    const module = (await import(pathToFileURL(join(dir, "dist/skills/index.js")).href)) as { mcpSkills(agent: string): McpSkills; getSkill(agent: string, name: string): { frontmatter?: unknown } };
    const { source } = module.mcpSkills("coding");
    const text = await source.read("skill://mixed/notes.txt");
    expect(text).toEqual({ text: "\ufeffline one\r\nline two\r\n", mimeType: "text/plain" });
    const bytes = await source.read("skill://mixed/data.bin");
    expect(bytes && "bytes" in bytes && Buffer.from(bytes.bytes).equals(Buffer.from(binary))).toBe(true);
    expect(module.getSkill("coding", "mixed").frontmatter).toEqual({ name: "mixed", description: "Does mixed things. Use when mixed is needed." });
  });

  it("a file swapped after discovery fails the build with one line naming it, never embedded", async () => {
    const dir = await project({ "skills/swap/SKILL.md": skillMd("swap"), "skills/swap/ref.md": "original" });
    const compilation = await compile(await loadConfig(undefined, dir));
    await rm(join(dir, "skills/swap/ref.md"));
    await writeFile(join(dir, "skills/swap/ref.md"), "replaced"); // same size, another file
    expect(() => bundleTexts(bundleOf(compilation))).toThrow(/^cannot read skills\/swap\/ref\.md: it changed during the build/);
  });

  it("a module without files: embed carries none of it", async () => {
    const dir = await project({ "skills/plain/SKILL.md": skillMd("plain") }, JSON.stringify({ agents: { coding: { skills: [{ root: "skills" }] }, served: { skills: [{ root: "skills" }], files: "embed" } } }));
    expect((await build({ cwd: dir })).ok).toBe(true);
    const plain = await readFile(join(dir, "dist/skills/agents/coding.js"), "utf8");
    const served = await readFile(join(dir, "dist/skills/agents/served.js"), "utf8");
    expect(plain).not.toMatch(/mcpSkills|createMcpSkills|"served"/);
    expect(served).toMatch(/export const mcpSkills = createMcpSkills\(runtime\);/);
    expect(await readFile(join(dir, "dist/skills/agents/coding.d.ts"), "utf8")).not.toContain("mcpSkills");
  });
});

describe("skills serve refuses what it cannot serve, in one line, exit 2", () => {
  const serve = (dir: string, ...args: string[]) => runCli(["serve", ...args], { cwd: dir });
  const oneLine = (stderr: string) => stderr.trim().split("\n");

  it("no bundle, an agent not in it, an agent that does not embed, a module edited since", async () => {
    const dir = await project({ "skills/one/SKILL.md": skillMd("one") }, JSON.stringify({ agents: { coding: { skills: [{ root: "skills" }], files: "embed" }, chat: { skills: [{ root: "skills" }] } } }));
    let run = await serve(dir, "--agent", "coding");
    expect([run.code, oneLine(run.stderr)]).toEqual([2, [`skills: there is no bundle in ${join(dir, "dist/skills")} (no manifest.json); run \`skills build\` first`]]);
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    run = await serve(dir, "--agent", "other");
    expect([run.code, oneLine(run.stderr)]).toEqual([2, [`skills: the bundle in ${join(dir, "dist/skills")} has no agent "other" (it has chat, coding); check --agent, or run \`skills build\` after adding the agent`]]);
    run = await serve(dir, "--agent", "chat");
    expect(run.code).toBe(2);
    expect(oneLine(run.stderr)).toEqual([expect.stringContaining(`does not hold the files of agent "chat"'s skills: set \`files: "embed"\``)]);
    await writeFile(join(dir, "dist/skills/agents/coding.js"), `${await readFile(join(dir, "dist/skills/agents/coding.js"), "utf8")}\n// edited\n`);
    run = await serve(dir, "--agent", "coding");
    expect([run.code, oneLine(run.stderr)]).toEqual([2, [`skills: ${join(dir, "dist/skills/agents/coding.js")} is not the module its manifest records (edited since, or left by another build); run \`skills build\` again`]]);
  });

  it("without the MCP SDK installed, says how to install it", async () => {
    const dir = await project({ "skills/one/SKILL.md": skillMd("one") });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    // The CLI alone, where no node_modules holds the SDK.
    const bin = await tempDir("skillbake-no-sdk-");
    await mkdir(join(bin, "dist"));
    for (const file of ["launch.cjs", "cli.cjs", "zod.cjs"]) await cp(join(REPO, "dist", file), join(bin, "dist", file));
    await writeFile(join(bin, "package.json"), JSON.stringify({ type: "module" }));
    const run = await runCli(["serve", "--agent", "coding"], { cwd: dir, cli: join(bin, "dist/launch.cjs") });
    expect([run.code, oneLine(run.stderr)]).toEqual([2, ["skills: skills serve needs the MCP SDK, @modelcontextprotocol/server 2.4 or later: npm install @modelcontextprotocol/server"]]);
  });

  it("usage: --agent required and an id, --http a port, --host only with --http", async () => {
    const dir = await tempDir();
    for (const [args, message] of [
      [[], "--agent ID is required"],
      [["--agent", "Bad Id"], "--agent takes an agent id"],
      [["--agent", "coding", "--http", "99999"], "--http takes a port number from 0 to 65535"],
      [["--agent", "coding", "--host", "0.0.0.0"], "--host goes with --http PORT"],
    ] as const) {
      const run = await serve(dir, ...args);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(message);
    }
  });
});
