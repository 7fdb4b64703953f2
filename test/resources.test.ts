import { createHash } from "node:crypto";
import { lstatSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compile, WORKER_MIN_FILES } from "../src/compile/compile.js";
import { loadConfig } from "../src/compile/config.js";
import { fileStatsOf, hashFile, hashInWorker, hashOutcome, sha256Hex, type HashRequest } from "../src/compile/resources.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

const CHUNK = 256 * 1024;
const sha256 = (bytes: string | Uint8Array) => createHash("sha256").update(bytes).digest("hex");

describe("hashFile", () => {
  it("gives the size and sha256 of files read in one read, at the read size's edges, and in many", async () => {
    const dir = await tempDir();
    for (const size of [0, 1, 7000, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5]) {
      const bytes = Buffer.alloc(size, size % 251);
      const file = join(dir, `f${size}`);
      writeFileSync(file, bytes);
      const hashed = hashFile(file);
      expect({ size: hashed.size, sha256: hashed.sha256 }).toEqual({ size, sha256: sha256(bytes) });
      expect(sha256Hex(bytes)).toBe(hashed.sha256);
    }
  });
});

describe("hashInWorker", () => {
  it("gives for every file what hashing it in this thread gives: sizes and hashes, stats, and each failure", async () => {
    const dir = await tempDir();
    const outside = await tempDir();
    writeFileSync(join(outside, "secret"), "outside\n");
    const requests: HashRequest[] = [];
    for (const size of [0, 5, CHUNK + 1]) {
      const file = join(dir, `f${size}`);
      writeFileSync(file, Buffer.alloc(size, 7));
      requests.push({ path: file, expected: fileStatsOf(lstatSync(file, { bigint: true })) });
    }
    // Swapped for a link out of the root after discovery took its identity; a file gone; a folder in a file's place.
    const swapped = join(dir, "swapped");
    writeFileSync(swapped, "inside\n");
    const identity = fileStatsOf(lstatSync(swapped, { bigint: true }));
    rmSync(swapped);
    symlinkSync(join(outside, "secret"), swapped);
    mkdirSync(join(dir, "folder"));
    requests.push({ path: swapped, expected: identity }, { path: join(dir, "gone") }, { path: join(dir, "folder") });

    const outcomes = await hashInWorker(requests)();
    expect([...outcomes.keys()]).toEqual(requests.map((request) => request.path));
    expect([...outcomes.values()]).toEqual(requests.map(hashOutcome));
    expect(outcomes.get(join(dir, `f${CHUNK + 1}`))).toMatchObject({ size: CHUNK + 1, sha256: sha256(Buffer.alloc(CHUNK + 1, 7)) });
    expect([swapped, join(dir, "gone"), join(dir, "folder")].map((path) => outcomes.get(path))).toEqual([{ failure: "path-changed" }, { failure: "ENOENT" }, { failure: "EISDIR" }]);
  });

  it("hashes the files of a catalogue large enough for the worker, and still leaves out a file swapped after discovery", async () => {
    const dir = await tempDir();
    const outside = await tempDir();
    writeFileSync(join(outside, "secret.md"), "outside\n");
    const tree: Record<string, string> = { "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }) };
    // Past the threshold, however it is set, so the files go to the worker.
    const perSkill = Math.ceil(WORKER_MIN_FILES / 50) + 10;
    for (let skill = 0; skill < 50; skill++) {
      tree[`skills/s${skill}/SKILL.md`] = skillMd(`s${skill}`);
      for (let file = 0; file < perSkill; file++) tree[`skills/s${skill}/references/r${file}.md`] = `reference ${skill}/${file}\n`;
    }
    await writeTree(dir, tree);
    const swapped = join(dir, "skills/s3/references/r7.md");
    const result = await compile(await loadConfig(undefined, dir), {
      afterDiscovery: () => {
        rmSync(swapped);
        symlinkSync(join(outside, "secret.md"), swapped);
      },
    });
    const files = result.agents[0]!.skills.flatMap((skill) => skill.files.map((file) => ({ ...file, path: `${skill.file.slice(0, -"SKILL.md".length)}${file.path}` })));
    expect(files).toHaveLength(50 * (perSkill + 1) - 1);
    for (const file of files) {
      const text = tree[file.path]!;
      expect(file).toEqual({ path: file.path, size: Buffer.byteLength(text), sha256: sha256(text) });
    }
    expect(result.diagnostics.map((diagnostic) => [diagnostic.code, diagnostic.file])).toEqual([["path-changed", "skills/s3/references/r7.md"]]);
  });
});
