/**
 * Diagnostics that once pointed at the wrong place or gave advice that did not fit, each on the real file it was
 * found in (a few lines copied into test/fixtures/catalogues, sources in its README).
 */
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { check } from "../src/api.js";
import { MAX_MESSAGE_CHARACTERS } from "../src/compile/diagnostics.js";
import { REPO, tempDir, writeTree } from "./helpers.js";

/** `check` on one fixture skill, as the only skill of one agent. */
async function checkFixture(folder: string) {
  const dir = await tempDir();
  await writeTree(dir, { "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }) });
  await cp(join(REPO, "test/fixtures/catalogues", folder), join(dir, "skills", folder), { recursive: true });
  return (await check({ cwd: dir })).diagnostics;
}

describe("precise diagnostics on real files", () => {
  it("puts a bad metadata value's caret on its own key, not on the mapping's first", async () => {
    const [diagnostic] = await checkFixture("acquire-codebase-knowledge");
    expect(diagnostic).toMatchObject({
      code: "field-invalid",
      line: 8,
      column: 3,
      message: "`metadata.enhancements` is a list, not a string; the value of `metadata` is kept under `extra` only",
    });
  });

  it("reports an unclosed `[` on its own line with the quoted value to copy, though YAML fails on the next", async () => {
    const [diagnostic] = await checkFixture("brainstorming");
    expect(diagnostic).toMatchObject({
      code: "yaml-invalid",
      line: 3,
      column: 14,
      hint: 'The value of `description` starts with `[`, which YAML treats as syntax. Quote the value: description: "[broken"',
    });
  });

  it("never cuts a long hint inside the line it gives to copy", async () => {
    const [diagnostic] = await checkFixture("property-based-testing");
    expect(diagnostic).toMatchObject({ code: "yaml-invalid", line: 4 });
    expect(diagnostic!.hint).not.toContain("left out");
    expect(diagnostic!.hint!.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARACTERS);
    expect(diagnostic!.hint).toContain('Quote the value: put it in double quotes, with \\" for each " and \\\\ for each \\ inside it (`skills check --fix` does this).');
  });

  it("does not propose a folder named after an invalid name", async () => {
    const mismatch = (await checkFixture("active-directory-attacks")).find((diagnostic) => diagnostic.code === "name-mismatch");
    expect(mismatch?.hint).toBe("Set `name: active-directory-attacks`, the folder's name.");
  });
});
