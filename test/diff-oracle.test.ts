import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { unifiedDiff } from "../src/review/diff.js";
import { tempDir } from "./helpers.js";

/*
 * GNU diff is the oracle for `unifiedDiff`'s hunks: the same headers, the same lines. Texts are made so that
 * the alignment is unique (each line of the first text is its own, and no new line equals an old one), so any
 * minimal diff gives the same edits and the hunks can be compared byte for byte; new lines may repeat each other
 * (blank lines, say). Edits are sparse, so that gaps of six and seven unchanged lines (one hunk or two, at three
 * lines of context) come up often.
 */

/** More runs for a deeper search: `ORACLE_RUNS=5000 npx vitest run test/diff-oracle.test.ts`. */
const RUNS = Number(process.env.ORACLE_RUNS ?? 200);

const edited = fc
  .array(
    fc.record({
      insertBefore: fc.oneof({ weight: 6, arbitrary: fc.constant([]) }, { weight: 1, arbitrary: fc.array(fc.constantFrom("", "new", "x", "y"), { minLength: 1, maxLength: 3 }) }),
      kept: fc.oneof({ weight: 6, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
    }),
    { maxLength: 40 },
  )
  .chain((plan) => fc.array(fc.constantFrom("", "tail"), { maxLength: 2 }).map((tail) => ({ plan, tail })))
  .map(({ plan, tail }) => {
    const before = plan.map((_, i) => `line ${i + 1}`);
    const after = [...plan.flatMap(({ insertBefore, kept }, i) => [...insertBefore, ...(kept ? [before[i]!] : [])]), ...tail];
    return { before, after };
  });

let dir: string;
beforeAll(async () => {
  dir = await tempDir("skillbake-diff-");
});

/** `diff -U3` of the two texts as files, each line ended by a newline ("" an empty file), labelled x and y. */
function gnuDiff(before: string, after: string): string {
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text === "" ? "" : `${text}\n`);
    return join(dir, name);
  };
  const run = spawnSync("diff", ["-U3", "--label", "x", "--label", "y", file("before", before), file("after", after)], { encoding: "utf8" });
  if (run.status === 2 || run.error) throw run.error ?? new Error(run.stderr);
  return run.stdout.replace(/\n$/, "");
}

describe("unifiedDiff, against GNU diff -U3", () => {
  it("gives diff's hunks, headers and lines, for random edits", () => {
    fc.assert(
      fc.property(edited, ({ before, after }) => {
        const [a, b] = [before.join("\n"), after.join("\n")];
        expect(unifiedDiff(a, b, { beforeLabel: "x", afterLabel: "y" })).toBe(gnuDiff(a, b));
      }),
      { numRuns: RUNS },
    );
  }, Math.max(60_000, RUNS * 100));

  it("merges changes six unchanged lines apart into one hunk, and splits them seven apart, as diff does", () => {
    const lines = (count: number) => Array.from({ length: count }, (_, i) => `line ${i + 1}`);
    for (const gap of [5, 6, 7, 8]) {
      const before = lines(gap + 10);
      const after = before.map((line, i) => (i === 4 || i === gap + 5 ? `${line}, edited` : line));
      const [a, b] = [before.join("\n"), after.join("\n")];
      expect(unifiedDiff(a, b, { beforeLabel: "x", afterLabel: "y" })).toBe(gnuDiff(a, b));
      expect(gnuDiff(a, b).match(/^@@/gm)).toHaveLength(gap <= 6 ? 1 : 2);
    }
  });

  it("numbers an empty side by the line before it, as diff does: a text emptied, a text from nothing, lines taken from the start or end", () => {
    const ten = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`);
    const cases: [string[], string[]][] = [
      [["a", "b"], []],
      [[], ["a", "b"]],
      [["a"], []],
      [[], ["a"]],
      [ten, ten.slice(2)],
      [ten.slice(2), ten],
      [ten, ten.slice(0, 8)],
      [ten.slice(0, 8), ten],
    ];
    for (const [before, after] of cases) {
      const [a, b] = [before.join("\n"), after.join("\n")];
      expect(unifiedDiff(a, b, { beforeLabel: "x", afterLabel: "y" }), `${a} -> ${b}`).toBe(gnuDiff(a, b));
    }
  });
});
