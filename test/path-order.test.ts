import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareStrings } from "../src/compile/diagnostics.js";
import { comparePaths } from "../src/compile/discover.js";

/** SPEC §3's path order, by its definition: segment by segment, each compared bytewise, a prefix first. */
function bySegments(a: string, b: string): number {
  const left = a.split("/");
  const right = b.split("/");
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const order = compareStrings(left[i]!, right[i]!);
    if (order !== 0) return order;
  }
  return left.length - right.length;
}

const segment = fc.array(fc.constantFrom("a", "b", "-", ".", "_", "A", "0", "é", "\ue000", "😀", "\uffff"), { minLength: 1, maxLength: 4 }).map((chars) => chars.join(""));
const path = fc.array(segment, { minLength: 1, maxLength: 4 }).map((segments) => segments.join("/"));

describe("comparePaths", () => {
  it("orders paths as SPEC §3 defines path order", () => {
    fc.assert(
      fc.property(path, path, (a, b) => {
        expect(Math.sign(comparePaths(a, b))).toBe(Math.sign(bySegments(a, b)));
      }),
      { numRuns: 5000 },
    );
  });

  it("puts a folder's own files before a sibling whose name extends the folder's", () => {
    expect(["a-b", "a/b", "a", "a/b/c", "ab"].sort(comparePaths)).toEqual(["a", "a/b", "a/b/c", "a-b", "ab"]);
  });
});
