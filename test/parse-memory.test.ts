import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { parseSkillFile } from "../src/compile/parse.js";

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

const FILES = 40;
const BODY_BYTES = 500_000;

/** The heap a parse's fields keep alive, in bytes: what `keep` holds of FILES files with large bodies. */
function heapKeptBy(frontmatter: string, keep: (parsed: ReturnType<typeof parseSkillFile>) => unknown): number {
  const kept: unknown[] = [];
  collectGarbage();
  const before = process.memoryUsage().heapUsed;
  for (let index = 0; index < FILES; index++) {
    // Each body of its own, so no two files share one string.
    const body = `${index} ${"Step by step instructions. ".repeat(BODY_BYTES / 26)}`;
    const parsed = parseSkillFile("SKILL.md", new TextEncoder().encode(`---\n${frontmatter}\n---\n${body}\n`), false);
    expect(parsed.fields?.length).toBeGreaterThan(0);
    kept.push(keep(parsed));
  }
  collectGarbage();
  const after = process.memoryUsage().heapUsed;
  expect(kept).toHaveLength(FILES);
  return after - before;
}

// A build (and a watch session, between rebuilds) keeps each skill's fields but not its SKILL.md: a field value
// must not be a view into the file's whole text, which would keep every body in memory too.
describe("the fields a parse returns keep no SKILL.md text alive", () => {
  const frontmatters = {
    "plain fields (read without the yaml package)": "name: memory-kept-skill\ndescription: Drafts long reports from the notes given.\nmetadata:\n  author: someone-with-a-long-name",
    "fields the yaml package reads": "# a comment\nname: memory-kept-skill\ndescription: >\n  Drafts long reports\n  from the notes given.",
  };
  for (const [shape, frontmatter] of Object.entries(frontmatters)) {
    it(shape, () => {
      const whole = FILES * BODY_BYTES;
      expect(heapKeptBy(frontmatter, (parsed) => parsed.fields)).toBeLessThan(whole / 10);
      // What the measure tells: the bodies kept are all there.
      expect(heapKeptBy(frontmatter, (parsed) => parsed.body)).toBeGreaterThan(whole * 0.9);
    });
  }
});
