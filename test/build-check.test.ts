import { readdir, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const CONFIG = `import { defineConfig } from "skillbake";
export default defineConfig({
  location: "relative",
  agents: { coding: { skills: [{ root: "skills", available: ["*", "!gamma"], inline: ["gamma"] }] } },
});
`;

async function builtProject(): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, {
    "skills.config.ts": CONFIG,
    "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
    "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks.", "# Beta\n\nStep one."),
    "skills/gamma/SKILL.md": skillMd("gamma", "Explains gamma.", "# Gamma\n\nAlways inline."),
  });
  const run = await runCli(["build"], { cwd: dir });
  expect(run.code, run.stderr).toBe(0);
  return dir;
}

/** Every path under `dir` with its size, mode and modification time: what a write would change. */
async function snapshot(dir: string): Promise<string[]> {
  const entries: string[] = [];
  for (const name of (await readdir(dir, { recursive: true })).sort()) {
    const info = await stat(join(dir, name));
    entries.push(`${name} ${info.size} ${info.mode} ${info.mtimeMs} ${info.isFile() ? await readFile(join(dir, name), "utf8") : ""}`);
  }
  return entries;
}

describe("skills build --check", () => {
  it("exits 0 on a fresh bundle and writes nothing", async () => {
    const dir = await builtProject();
    const before = await snapshot(dir);
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run).toMatchObject({ code: 0, stdout: "" });
    expect(run.stderr.trim()).toBe("Bundle is up to date (1 agent, 3 skills); 0 errors, 0 warnings");
    expect(await snapshot(dir)).toEqual(before);
  });

  const edits: [string, Record<string, string>][] = [
    ["editing a description", { "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha and omega reports.") }],
    ["editing the body of an available skill (the prompt is unchanged)", { "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks.", "# Beta\n\nStep one.\nStep two.") }],
    ["editing an inline body", { "skills/gamma/SKILL.md": skillMd("gamma", "Explains gamma.", "# Gamma\n\nAlways inline, always.") }],
    ["adding a skill", { "skills/delta/SKILL.md": skillMd("delta") }],
    ["editing the config", { "skills.config.ts": CONFIG.replace('"relative"', '{ base: "/srv/app" }') }],
    ["adding a frontmatter field outside the prompt", { "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports.").replace("---\n\n", "license: MIT\n---\n\n") }],
  ];
  for (const [what, tree] of edits) {
    it(`exits 1 after ${what}, and writes nothing`, async () => {
      const dir = await builtProject();
      await writeTree(dir, tree);
      const before = await snapshot(dir);
      const run = await runCli(["build", "--check"], { cwd: dir });
      expect(run.code).toBe(1);
      expect(run.stderr).toContain("dist/skills is out of date:");
      expect(run.stderr).toContain("  changed  manifest.json");
      expect(run.stderr.trim().split("\n").at(-1)).toBe("Run `skills build` to update it.");
      expect(await snapshot(dir)).toEqual(before);
    });
  }

  it("exits 1 after deleting a skill", async () => {
    const dir = await builtProject();
    await rm(join(dir, "skills/beta"), { recursive: true });
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain("  changed  prompts/coding.txt");
  });

  it("lists changed, missing and extra files, diffs the first changed prompt and repeats --config and --out in the fix", async () => {
    const dir = await builtProject();
    expect((await runCli(["build", "--out", "out dir"], { cwd: dir })).code).toBe(0);
    await writeTree(dir, {
      "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha and omega reports."),
      "out dir/prompts/retired.txt": "an agent that no longer exists",
    });
    await rm(join(dir, "out dir/manifest.json"));
    const run = await runCli(["build", "--check", "--config", "skills.config.ts", "--out", "out dir"], { cwd: dir });
    expect(run.code).toBe(1);
    const [listing, diff, fix] = run.stderr.split("\n\n") as [string, string, string];
    // The bundle's other files (the runtime module) change with the description too; these are the ones staged here.
    expect(listing.split("\n").slice(0, 2)).toEqual(["Checked 1 agent, 3 skills; 0 errors, 0 warnings", expect.stringMatching(/^out dir is out of date: \d+ files differ from a fresh build\.$/)]);
    expect(listing.split("\n")).toEqual(
      expect.arrayContaining([
        "  missing  manifest.json",
        "  changed  prompts/coding.txt",
        "  extra    prompts/retired.txt (not written by skillbake; a build will not delete it)",
      ]),
    );
    expect(diff.split("\n")).toEqual([
      "--- prompts/coding.txt (on disk)",
      "+++ prompts/coding.txt (fresh build)",
      "@@ -5,7 +5,7 @@",
      " <available_skills>",
      "   <skill>",
      "     <name>alpha</name>",
      "-    <description>Drafts alpha reports.</description>",
      "+    <description>Drafts alpha and omega reports.</description>",
      "     <location>skills/alpha/SKILL.md</location>",
      "   </skill>",
      "   <skill>",
    ]);
    expect(fix).toBe("Move the extra files out, then run `skills build --config skills.config.ts --out 'out dir'` to update it.\n");
  });

  it("says a file in the bundle that skillbake did not write must be moved out, as a build refuses to delete it", async () => {
    const dir = await builtProject();
    await writeTree(dir, { "dist/skills/notes.md": "the team's notes" });
    const check = await runCli(["build", "--check"], { cwd: dir });
    expect(check.code).toBe(1);
    expect(check.stderr).toContain("  extra  notes.md (not written by skillbake; a build will not delete it)\n\nMove the extra files out, then run `skills build` to update it.\n");
    const refused = await runCli(["build"], { cwd: dir });
    expect(refused.code).toBe(2);
    expect(await readFile(join(dir, "dist/skills/notes.md"), "utf8")).toBe("the team's notes");
    await rm(join(dir, "dist/skills/notes.md"));
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect((await runCli(["build", "--check"], { cwd: dir })).code).toBe(0);
  });

  it("names the first 100 stale files and counts the rest, in the report and as annotations; JSON lists every one", async () => {
    const dir = await builtProject();
    // A pull request can commit any number of files into the bundle folder.
    await writeTree(dir, Object.fromEntries(Array.from({ length: 250 }, (_, index) => [`dist/skills/notes/${String(index).padStart(3, "0")}.md`, "x"])));
    const pretty = await runCli(["build", "--check"], { cwd: dir });
    expect(pretty.code).toBe(1);
    const listed = pretty.stderr.split("\n").filter((line) => line.startsWith("  extra  "));
    expect(listed).toHaveLength(100);
    expect(listed.at(-1)).toBe("  extra  notes/099.md (not written by skillbake; a build will not delete it)");
    expect(pretty.stderr).toContain("dist/skills is out of date: 250 files differ from a fresh build.\n");
    expect(pretty.stderr).toContain("\n  … and 150 more (`--format json` lists every one)\n\nMove the extra files out");

    const github = await runCli(["build", "--check", "--format", "github"], { cwd: dir });
    const errors = github.stderr.split("\n").filter((line) => line.startsWith("::error "));
    expect(errors).toHaveLength(101);
    expect(errors.at(-1)).toMatch(/^::error file=dist\/skills,title=stale-bundle::dist\/skills is out of date: 150 more files differ from a fresh build/);

    const json = await runCli(["build", "--check", "--format", "json"], { cwd: dir });
    expect(JSON.parse(json.stdout).stale).toHaveLength(250);
  });

  it("shows control and bidi characters in the outDir, stale paths and the prompt diff escaped", async () => {
    const dir = await tempDir();
    // ESC [2K would erase a line, U+202E reverse what follows, and a line feed start a forged line.
    const outDir = "out\nput\u001b[2K\u202e";
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ outDir, location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha", "Plain."),
    });
    const build = await runCli(["build"], { cwd: dir });
    expect(build.stderr).toBe("Wrote out\\nput\\x1b[2K\\u202e (1 agent, 1 skill); 0 errors, 0 warnings\n");
    await writeTree(dir, {
      "skills/alpha/SKILL.md": skillMd("alpha", '"Ships\\e[2K to prod\\u202e safely"'),
      [`${outDir}/prompts/old\nagent\u001b[2K\u202e.txt`]: "an agent that no longer exists",
    });
    const run = await runCli(["build", "--check"], { cwd: dir });
    expect(run.code).toBe(1);
    // After the description-invisible warning: the summary and the listing, the diff and the fix.
    const [, listing, diff, fix] = run.stderr.split("\n\n") as [string, string, string, string];
    expect(listing.split("\n").slice(0, 2)).toEqual([
      "Checked 1 agent, 1 skill; 0 errors, 1 warning",
      expect.stringMatching(/^out\\nput\\x1b\[2K\\u202e is out of date: \d+ files differ from a fresh build\.$/),
    ]);
    expect(listing.split("\n")).toContain("  extra    prompts/old\\nagent\\x1b[2K\\u202e.txt (not written by skillbake; a build will not delete it)");
    expect(diff.split("\n")).toEqual([
      "--- prompts/main.txt (on disk)",
      "+++ prompts/main.txt (fresh build)",
      "@@ -5,7 +5,7 @@",
      " <available_skills>",
      "   <skill>",
      "     <name>alpha</name>",
      "-    <description>Plain.</description>",
      "+    <description>Ships\\x1b[2K to prod\\u202e safely</description>",
      "     <location>skills/alpha/SKILL.md</location>",
      "   </skill>",
      " </available_skills>",
    ]);
    expect(fix).toBe("Move the extra files out, then run `skills build` to update it.\n");
  });

  it("reports the stale files and the diff in --format json", async () => {
    const dir = await builtProject();
    await writeTree(dir, { "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha and omega reports.") });
    const run = await runCli(["build", "--check", "--format", "json"], { cwd: dir });
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report).toMatchObject({ command: "build", ok: false, written: false, outDir: "dist/skills" });
    expect(report.stale).toEqual(
      expect.arrayContaining([
        { path: "manifest.json", state: "changed" },
        { path: "prompts/coding.txt", state: "changed" },
      ]),
    );
    expect(report.stale.every((file: { state: string }) => file.state === "changed")).toBe(true);
    expect(report.staleDiff).toContain("-    <description>Drafts alpha reports.</description>\n+    <description>Drafts alpha and omega reports.</description>");
  });
});
