import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { build } from "../src/api.js";
import { bundleFingerprint } from "../src/bundle/bundle.js";
import { compile, type Compilation } from "../src/compile/compile.js";
import { loadConfig } from "../src/compile/config.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

/**
 * The fingerprint is what lets a rebuild leave the bundle alone. It is taken from the hashes of the inputs, not
 * from the whole compilation, so each of these edits of something the bundle shows must still change it.
 */

const config = ({ rules = "", frontmatter = "", format = "" } = {}) => `import { defineConfig, z } from "skillbake";
import { heading } from "./heading.ts";
export default defineConfig({
  location: "relative",${rules ? `\n  rules: ${rules},` : ""}${frontmatter ? `\n  frontmatter: ${frontmatter},` : ""}
  agents: { main: { skills: [{ root: "skills" }], context: ["context.md"]${format ? `, format: ${format}` : ""} } },
});
`;

/** A format function whose output comes from another file: its own text stays the same when that file changes. */
const FORMAT = "(ctx) => `${heading}: ${ctx.skills.map((skill) => skill.name).join(', ')}`";
const TEAM = 'z.object({ team: z.string().transform((team) => team.toUpperCase()) })';

async function project(files: Record<string, string> = {}): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, {
    "skills.config.ts": config(),
    "heading.ts": 'export const heading = "Skills";\n',
    "context.md": "# Context\n",
    "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports.", "# Alpha\n\nStep one."),
    "skills/alpha/references/guide.md": "# Guide\n",
    "skills/beta/SKILL.md": "---\nname: beta\ndescription: Runs beta checks.\nteam: qa\n---\n\n# Beta\n",
    ...files,
  });
  return dir;
}

async function compiled(dir: string, outDir?: string): Promise<Compilation> {
  return compile(await loadConfig(undefined, dir), outDir ? { outDir: join(dir, outDir) } : {});
}

const fingerprint = async (dir: string, outDir?: string) => bundleFingerprint(await compiled(dir, outDir));

afterEach(() => {
  vi.unstubAllEnvs();
});

describe("the bundle's fingerprint", () => {
  it("is the same for the same inputs, compiled again", async () => {
    const dir = await project();
    expect(await fingerprint(dir)).toBe(await fingerprint(dir));
  });

  it.each([
    // A rule for a finding there is none of: the bundle differs only by its manifest's hash of the inputs.
    ["a config setting", {}, (dir: string) => writeFile(join(dir, "skills.config.ts"), config({ rules: '{ "name-mismatch": "off" }' }))],
    ["a body (same length)", {}, (dir: string) => writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports.", "# Alpha\n\nStep One."))],
    ["a resource file (same length)", {}, (dir: string) => writeFile(join(dir, "skills/alpha/references/guide.md"), "# GUIDE\n")],
    ["a context file (same length)", {}, (dir: string) => writeFile(join(dir, "context.md"), "# CONTEXT\n")],
    ["what a format function renders", { "skills.config.ts": config({ format: FORMAT }) }, (dir: string) => writeFile(join(dir, "heading.ts"), 'export const heading = "SKILLS";\n')],
  ])("changes with %s", async (_what, files: Record<string, string>, edit) => {
    const dir = await project(files);
    const before = await fingerprint(dir);
    await edit(dir);
    expect(await fingerprint(dir)).not.toBe(before);
  });

  it("changes with the outDir", async () => {
    const dir = await project();
    expect(await fingerprint(dir, "other/skills")).not.toBe(await fingerprint(dir));
  });

  it("changes with SKILLS_PROMPT_CHAR_BUDGET", async () => {
    const dir = await project();
    const before = await fingerprint(dir);
    vi.stubEnv("SKILLS_PROMPT_CHAR_BUDGET", "100000");
    expect(await fingerprint(dir)).not.toBe(before);
  });

  it("changes with a diagnostic", async () => {
    const compilation = await compiled(await project());
    const warning = { code: "description-too-long" as const, severity: "warn" as const, file: "skills/alpha/SKILL.md", line: 3, column: 14, message: "a warning" };
    const warned = { ...compilation, diagnostics: [...compilation.diagnostics, warning] };
    expect(bundleFingerprint(warned)).not.toBe(bundleFingerprint(compilation));
    expect(bundleFingerprint({ ...compilation, diagnostics: [...compilation.diagnostics, { ...warning, message: "another warning" }] })).not.toBe(bundleFingerprint(warned));
  });

  it("changes with what a frontmatter schema's transform outputs, though the schema's JSON Schema is the same", async () => {
    const dir = await project({ "skills.config.ts": config({ frontmatter: TEAM }) });
    const before = await compiled(dir);
    await writeFile(join(dir, "skills.config.ts"), config({ frontmatter: TEAM.replace("toUpperCase", "toLowerCase") }));
    const after = await compiled(dir);
    expect(after.agents[0]!.skills.find((skill) => skill.name === "beta")!.fields).toMatchObject({ team: "qa" });
    expect(before.agents[0]!.skills.find((skill) => skill.name === "beta")!.fields).toMatchObject({ team: "QA" });
    expect(bundleFingerprint(after)).not.toBe(bundleFingerprint(before));
  });

  it("lets a rebuild skip only while nothing the bundle shows has changed", async () => {
    const dir = await project();
    expect((await build({ cwd: dir })).written).toBe(true);
    expect((await build({ cwd: dir })).written).toBe(false);
    await writeFile(join(dir, "skills/alpha/references/guide.md"), "# GUIDE\n");
    expect((await build({ cwd: dir })).written).toBe(true);
    expect((await build({ cwd: dir })).written).toBe(false);
  });
});
