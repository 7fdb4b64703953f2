import { mkdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RealPaths } from "../src/compile/real-paths.js";
import { tempDir } from "./helpers.js";

// RealPaths (src/compile/real-paths.ts) stands in for realpath(3) where discovery and the rebuild checks resolve
// links: whatever the tree and the order of the questions, each answer must be realpath's.

/** realpath's answer: the real path, or the error's code. */
function answerOf(resolve: (path: string) => string, path: string): string {
  try {
    return resolve(path);
  } catch (error) {
    return `error ${(error as NodeJS.ErrnoException).code}`;
  }
}

const name = fc.constantFrom("a", "b", "c");
/** A link target's parts: names, `.`, `..` and empty parts (`a//b`, a trailing slash). */
const targetPart = fc.constantFrom("a", "b", "c", "x", ".", "..", "");
const entry = fc.record({
  under: fc.nat(),
  name,
  kind: fc.constantFrom("folder", "folder", "file", "link"),
  target: fc.array(targetPart, { minLength: 1, maxLength: 4 }),
  absolute: fc.boolean(),
});

describe("real paths, each folder looked up once", () => {
  it("answer as realpath(3) does on random trees of folders, files and links (chains, loops, `..` through links), asked in any order", async () => {
    const base = await tempDir();
    let round = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(entry, { minLength: 1, maxLength: 14 }), fc.array(fc.nat(), { maxLength: 40 }), fc.array(targetPart, { maxLength: 3 }), async (entries, order, suffix) => {
        const dir = join(base, String(round++));
        mkdirSync(dir);
        const folders = [dir];
        const paths = [dir];
        for (const { under, name: entryName, kind, target, absolute } of entries) {
          const path = join(folders[under % folders.length]!, entryName);
          if (paths.includes(path)) continue;
          paths.push(path);
          if (kind === "folder") {
            mkdirSync(path);
            folders.push(path);
          } else if (kind === "file") writeFileSync(path, "");
          else symlinkSync(absolute ? `${dir}/${target.join("/")}` : target.join("/") || ".", path); // a link cannot be empty
        }
        // Each path, and each with more after it: a name, `..` after a link or a file, a trailing slash.
        const asked = paths.flatMap((path) => [path, `${path}/${suffix.join("/")}`, `${path}/..`, `${path}/a/..`]);
        const resolver = new RealPaths();
        const inOrder = [...order.map((index) => asked[index % asked.length]!), ...asked];
        for (const path of inOrder) expect(answerOf((p) => resolver.of(p), path), path).toBe(answerOf(realpathSync.native, path));
        rmSync(dir, { recursive: true });
      }),
      { numRuns: 300 },
    );
  });

  it("follow at most 40 links in one path, as realpath does, however the chain was reached before", async () => {
    const dir = await tempDir();
    mkdirSync(join(dir, "end"));
    for (let link = 1; link <= 45; link++) symlinkSync(link === 1 ? "end" : `l${link - 1}`, join(dir, `l${link}`));
    const resolver = new RealPaths();
    // The shorter chains first, so that the longer ones meet links already resolved.
    for (let link = 1; link <= 45; link++) expect(answerOf((p) => resolver.of(p), join(dir, `l${link}`))).toBe(answerOf(realpathSync.native, join(dir, `l${link}`)));
    expect(answerOf((p) => resolver.of(p), join(dir, "l45"))).toBe("error ELOOP");
    expect(resolver.of(join(dir, "l40"))).toBe(join(dir, "end"));
  });
});
