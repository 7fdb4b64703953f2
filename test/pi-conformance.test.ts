import { readdirSync, readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { check } from "../src/index.js";
import { REPO, tempDir } from "./helpers.js";

// Goldens written by Pi 0.73.1 itself (scripts/pi-goldens.mjs); see test/fixtures/pi/README.md.
const FIXTURES = join(REPO, "test/fixtures/pi");
const cases = readdirSync(FIXTURES, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

describe("prompts are byte-identical to Pi's", () => {
  it("has cases", () => expect(cases.length).toBeGreaterThanOrEqual(10));

  it.each(cases)("%s", async (name) => {
    const root = join(FIXTURES, name, "root");
    const dir = await tempDir();
    const config = join(dir, "skills.config.json");
    await writeFile(
      config,
      // Pi names each skill by its absolute path: the goldens are `absolute` locations.
      JSON.stringify({ location: "absolute", agents: { listed: { skills: [{ root }] }, inlined: { skills: [{ root, inline: ["*"] }] } } }),
    );
    const result = await check({ config });
    const prompt = (id: string) => result.agents.find((agent) => agent.id === id)!.prompt.replaceAll(root, "<ROOT>");
    expect(prompt("listed")).toBe(readFileSync(join(FIXTURES, name, "expected/available.txt"), "utf8"));
    expect(prompt("inlined")).toBe(readFileSync(join(FIXTURES, name, "expected/inline.txt"), "utf8"));
  });
});
