/**
 * `preset: "agentskills"` gives the verdicts of the Agent Skills reference validator (skills-ref,
 * agentskills/agentskills@69ef37e), recorded in test/fixtures/catalogues/agentskills-verdicts.json by running
 * `skills-ref validate` on each fixture folder (real skills' frontmatter, sources in the fixtures' README).
 */
import { cp, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { check } from "../src/api.js";
import { agentSkillsFindings } from "../src/compile/agentskills.js";
import { REPO, tempDir, writeTree } from "./helpers.js";

const FIXTURES = join(REPO, "test/fixtures/catalogues");
const verdicts: Record<string, string[]> = JSON.parse(await readFile(join(FIXTURES, "agentskills-verdicts.json"), "utf8"));

/** The skills with an error, by folder, when `check` runs over every fixture with `config`. */
async function failing(config: object): Promise<string[]> {
  const dir = await tempDir();
  await writeTree(dir, { "skills.config.json": JSON.stringify({ ...config, agents: { main: { skills: [{ root: "skills" }] } } }) });
  for (const folder of Object.keys(verdicts)) await cp(join(FIXTURES, folder), join(dir, "skills", folder), { recursive: true });
  const { diagnostics } = await check({ cwd: dir });
  return [...new Set(diagnostics.filter((diagnostic) => diagnostic.severity === "error").map((diagnostic) => diagnostic.file!.split("/")[1]!))].sort();
}

describe('preset: "agentskills"', () => {
  it("fails exactly the skills the reference validator refuses", async () => {
    const refused = Object.keys(verdicts).filter((folder) => verdicts[folder]!.length > 0).sort();
    expect(refused.length).toBeGreaterThan(3);
    expect(await failing({ preset: "agentskills" })).toEqual(refused);
    // Without the preset, skillbake's own reading passes some of them (flow lists, extra fields, a long description).
    expect(await failing({})).not.toEqual(refused);
  });

  it("lets the config's rules change the preset's severities", async () => {
    expect(await failing({ preset: "agentskills", rules: { "agentskills-invalid": "warn" } })).toEqual(["brainstorming", "property-based-testing"]);
  });

  it("reads the frontmatter as the reference validator does: every value text, no flow style, anchors or tags", () => {
    const codes = (text: string, folder = "notes") => agentSkillsFindings("SKILL.md", folder, text).map((finding) => finding.message);
    expect(codes("---\nname: notes\ndescription: 2024\nmetadata:\n  version: 1.0\n---\nBody")).toEqual([]);
    expect(codes("---\nname: notes\ndescription: Notes.\nallowed-tools: [Read]\n---\n")).toEqual(["Agent Skills specification: invalid YAML in frontmatter: flow style ([…] or {…}) is not allowed"]);
    expect(codes("---\nname: notes\ndescription: &d Notes.\nlicense: *d\n---\n")[0]).toContain("anchors");
    expect(codes("---\nname: café\ndescription: Notes.\n---\n", "café")).toEqual([]);
    expect(codes("---\nname: Notes--x\ndescription: Notes.\ntags: a\n---\n")).toEqual([
      "Agent Skills specification: unexpected fields in frontmatter: tags; only allowed-tools, compatibility, description, license, metadata, name are allowed",
      "Agent Skills specification: skill name 'Notes--x' must be lowercase",
      "Agent Skills specification: skill name cannot contain consecutive hyphens",
      "Agent Skills specification: directory name 'notes' must match skill name 'Notes--x'",
    ]);
  });
});
