import fc from "fast-check";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { compareStrings } from "../src/compile/diagnostics.js";
import { comparePaths, isPlainRelative, pathIn, relativeTo } from "../src/compile/discover.js";

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

describe("compareStrings", () => {
  /** Code point order by its definition: the strings' code points (a lone surrogate is its own), compared in turn. */
  const byCodePoints = (a: string, b: string): number => {
    const left = [...a].map((char) => char.codePointAt(0)!);
    const right = [...b].map((char) => char.codePointAt(0)!);
    for (let i = 0; i < Math.min(left.length, right.length); i++) if (left[i] !== right[i]) return left[i]! - right[i]!;
    return left.length - right.length;
  };
  const text = fc.array(fc.constantFrom("a", "b", "/", "é", "\ud7ff", "\ud800", "\udc00", "\ue000", "\uffff", "😀", "\u{10ffff}"), { maxLength: 6 }).map((chars) => chars.join(""));

  it("orders strings by code point, surrogates and characters from U+E000 up included", () => {
    fc.assert(
      fc.property(text, text, (a, b) => {
        expect(Math.sign(compareStrings(a, b))).toBe(Math.sign(byCodePoints(a, b)));
      }),
      { numRuns: 5000 },
    );
    expect(compareStrings("\ue000", "😀")).toBeLessThan(0); // "😀" is U+1F600, though its first UTF-16 unit (U+D83D) is less
  });
});

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

describe("relativeTo and pathIn (their shortcuts past path.relative and path.join)", () => {
  // Segments a path may hold, normalized or not: the shortcuts must give what path.relative and path.join give.
  const segment = fc.constantFrom("a", "b", ".", "..", "", "...", ".gitignore", "..x", "SKILL.md");
  const absolute = fc.array(segment, { maxLength: 6 }).map((segments) => `/${segments.join("/")}`);

  it("relativeTo equals path.relative, for paths below the base or not, normalized or not", () => {
    fc.assert(
      fc.property(fc.constantFrom("/", "/a", "/a/b", "/a/b/SKILL.md"), absolute, (base, path) => {
        expect(relativeTo(base, path)).toBe(relative(base, path));
      }),
      { numRuns: 5000 },
    );
  });

  it("pathIn equals path.join for a normalized folder and a relative path of plain names", () => {
    const plain = fc.constantFrom("a", "b", "...", ".gitignore", "..x", "SKILL.md");
    fc.assert(
      fc.property(fc.array(plain, { maxLength: 4 }).map((segments) => join("/", ...segments)), fc.array(plain, { minLength: 1, maxLength: 3 }), (dir, rel) => {
        expect(pathIn(dir, rel.join("/"))).toBe(join(dir, ...rel));
      }),
      { numRuns: 2000 },
    );
  });

  it("isPlainRelative holds exactly where pathIn gives what path.resolve gives", () => {
    const relativePath = fc.oneof(fc.array(segment, { minLength: 1, maxLength: 4 }).map((segments) => segments.join("/")), absolute);
    fc.assert(
      fc.property(fc.constantFrom("/", "/a", "/a/b"), relativePath, (dir, rel) => {
        if (isPlainRelative(rel)) expect(pathIn(dir, rel)).toBe(resolve(dir, rel));
        else expect(rel === "" || rel.startsWith("/") || rel.split("/").some((part) => part === "" || part === "." || part === "..")).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });
});
