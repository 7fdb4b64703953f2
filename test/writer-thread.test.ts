import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { build } from "../src/api.js";
import { WRITER_THREAD_MIN_BODIES } from "../src/bundle/file-writes.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

/** A project of `count` skills, one with a body longer than a chunk the files are written in (256 KB). */
async function project(count: number): Promise<string> {
  const dir = await tempDir();
  const skills = Object.fromEntries(Array.from({ length: count }, (_, i) => [`skills/s${i}/SKILL.md`, skillMd(`s${i}`, undefined, i === 7 ? `Step ${"é".repeat(10)}.\n`.repeat(30_000) : `Steps for s${i}.`)]));
  await writeTree(dir, { "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }), ...skills });
  return dir;
}

/** Each file the manifest records a hash of, whose bytes on disk must have that hash. */
async function expectRecordedHashes(outDir: string): Promise<void> {
  const { hashes } = JSON.parse(await readFile(join(outDir, "manifest.json"), "utf8")) as { hashes: { outputs: Record<string, string> } };
  expect(Object.keys(hashes.outputs).length).toBeGreaterThan(3);
  for (const [path, sha256] of Object.entries(hashes.outputs)) expect(createHash("sha256").update(await readFile(join(outDir, path))).digest("hex"), path).toBe(sha256);
}

describe("a bundle large enough for the writer thread", () => {
  it("is written with the bytes and the recorded hashes of a bundle rendered in this thread, built anew and after an edit", async () => {
    const dir = await project(WRITER_THREAD_MIN_BODIES);
    const outDir = join(dir, "dist/skills");
    expect((await build({ cwd: dir })).written).toBe(true);
    // `build --check` renders the bundle here, hashing each file as it goes, and compares every byte with the disk.
    expect((await build({ cwd: dir, check: true })).stale).toEqual([]);
    await expectRecordedHashes(outDir);

    // Copied from the last bundle where unchanged (entries, bodies), rendered where not.
    await writeTree(dir, { "skills/s3/SKILL.md": skillMd("s3", "Changed. Use when testing.", "New steps.") });
    const rebuilt = await build({ cwd: dir });
    expect(rebuilt.written).toBe(true);
    expect(rebuilt.cache.reused).toBe(WRITER_THREAD_MIN_BODIES - 1);
    expect((await build({ cwd: dir, check: true })).stale).toEqual([]);
    await expectRecordedHashes(outDir);
    expect(await readFile(join(outDir, "manifest.json"), "utf8")).toContain("New steps.");
  }, 120_000);
});
