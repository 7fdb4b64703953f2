import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, lstatSync, readFileSync, statSync, utimesSync } from "node:fs";
import { lstat, readdir, readFile, rename, rm, stat, symlink, truncate, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { build, type BuildResult } from "../src/api.js";
import { jsonPieces, readCacheFile, writeCacheFile } from "../src/compile/cache-file.js";
import { BuildCache, settledSignatures, signatureOf } from "../src/compile/cache.js";
import { compile } from "../src/compile/compile.js";
import type { FolderEntry } from "../src/compile/discover.js";
import { loadConfig } from "../src/compile/config.js";
import { rewriteCache, runCli, sameSizeEdit, skillMd, tempDir, writeTree } from "./helpers.js";

const CACHE = "node_modules/.cache/skillbake/skills.config.json.json";

const config = (extra: object = {}) =>
  JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills", inline: ["gamma"], available: ["*", "!gamma"] }] } }, ...extra });

/** Three valid skills (one inline, one with a resource file), one with a warning and one with an error. */
async function project(): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, {
    "skills.config.json": config(),
    "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
    "skills/beta/SKILL.md": "---\nname: beta\ndescription: Runs beta checks.\nallowed-tools: [Read, Bash]\nmetadata:\n  owner: qa\ncustom: [1, 2]\n---\n# Beta\n\nStep one.\n",
    "skills/beta/references/guide.md": "# Guide\n",
    "skills/gamma/SKILL.md": skillMd("gamma", "Explains gamma.", "# Gamma\n\nAlways inline."),
    "skills/folder/SKILL.md": skillMd("other-name"),
  });
  return dir;
}

const run = (dir: string) => build({ cwd: dir });
/** A build through the build cache: without the last build's snapshot, which would answer a rebuild where nothing changed first. */
const compiledBuild = async (dir: string) => {
  await rm(join(dir, "node_modules/.cache/skillbake/skills.config.json.inputs.json"), { force: true });
  return run(dir);
};
const prompt = (dir: string) => readFile(join(dir, "dist/skills/prompts/main.txt"), "utf8");
const inode = async (dir: string, path: string) => (await stat(join(dir, "dist/skills", path))).ino;

/** The compilation without the cache, for comparison. */
async function fresh(dir: string) {
  return compile(await loadConfig(undefined, dir));
}

function comparable(result: BuildResult) {
  return { agents: result.agents, diagnostics: result.diagnostics };
}

describe("build cache", () => {
  it("reuses every unchanged SKILL.md's outcome, exactly, and leaves an unchanged bundle alone", async () => {
    const dir = await project();
    const first = await run(dir);
    expect(first.cache).toMatchObject({ parsed: 4, reused: 0 });
    expect(first.written).toBe(true);
    const manifest = await inode(dir, "manifest.json");

    const second = await run(dir);
    expect(second.cache).toMatchObject({ parsed: 0, reused: 4 });
    expect(comparable(second)).toEqual(comparable(first));
    expect(comparable(second)).toEqual(comparable({ ...(await fresh(dir)) } as BuildResult));
    expect(second.written).toBe(false);
    expect(await inode(dir, "manifest.json")).toBe(manifest);
  });

  it("keeps errors and warnings from the cache too", async () => {
    const dir = await project();
    await writeTree(dir, { "skills/broken/SKILL.md": "---\nname: broken\n---\nNo description.\n" });
    const first = await run(dir);
    expect(first.ok).toBe(false);
    const second = await run(dir);
    expect(second.cache).toMatchObject({ parsed: 0, reused: 5 });
    expect(second.diagnostics).toEqual(first.diagnostics);
    expect(second.diagnostics.map((d) => d.code)).toEqual(expect.arrayContaining(["description-missing", "name-mismatch"]));
  });

  it("re-parses exactly the SKILL.md that changed, and rewrites the bundle", async () => {
    const dir = await project();
    await run(dir);
    await writeFile(join(dir, "skills/gamma/SKILL.md"), skillMd("gamma", "Explains gamma.", "# Gamma\n\nInline, edited."));
    const after = await run(dir);
    expect(after.cache).toMatchObject({ parsed: 1, reused: 3 });
    expect(after.written).toBe(true);
    expect(await prompt(dir)).toContain("Inline, edited.");
    expect(comparable(after)).toEqual(comparable({ ...(await fresh(dir)) } as BuildResult));
  });

  it("re-parses a skill whose folder moved (its path and folder name are part of its outcome)", async () => {
    const dir = await project();
    await run(dir);
    await rename(join(dir, "skills/folder"), join(dir, "skills/other-name"));
    const after = await run(dir);
    expect(after.cache).toMatchObject({ parsed: 1, reused: 3 });
    expect(after.diagnostics.map((d) => d.code)).not.toContain("name-mismatch");
  });

  it("re-parses a skill whose folder was renamed even where its path relative to the config is the same", async () => {
    // A root that is itself the skill: SKILL.md beside the config, its folder the project folder.
    const base = await tempDir();
    await writeTree(base, {
      "old-name/skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "." }] } } }),
      "old-name/SKILL.md": skillMd("new-name"),
    });
    expect((await run(join(base, "old-name"))).diagnostics.map((d) => d.code)).toContain("name-mismatch");
    await rename(join(base, "old-name"), join(base, "new-name"));
    const after = await run(join(base, "new-name"));
    expect(after.cache).toMatchObject({ parsed: 1, reused: 0 });
    expect(after.diagnostics.map((d) => d.code)).not.toContain("name-mismatch");
  });

  it("parses nothing when only a resource file changed, but rewrites the bundle that lists its hash", async () => {
    const dir = await project();
    await run(dir);
    await writeFile(join(dir, "skills/beta/references/guide.md"), "# Guide, edited\n");
    const after = await run(dir);
    expect(after.cache).toMatchObject({ parsed: 0, reused: 4 });
    expect(after.written).toBe(true);
    const manifest = JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8"));
    expect(JSON.stringify(manifest)).toContain((await fresh(dir)).agents[0]!.skills.find((s) => s.name === "beta")!.files.find((f) => f.path === "references/guide.md")!.sha256);
  });

  it("keeps parse outcomes across config edits that do not change parsing, and drops them when one does", async () => {
    const dir = await project();
    await run(dir);
    await writeFile(join(dir, "skills.config.json"), config({ location: "absolute", rules: { "name-mismatch": "off" } }));
    const selectionChanged = await run(dir);
    expect(selectionChanged.cache).toMatchObject({ parsed: 0, reused: 4 });
    expect(selectionChanged.written).toBe(true);
    expect(await prompt(dir)).toContain(join(dir, "skills/alpha/SKILL.md"));

    await writeFile(join(dir, "skills.config.json"), config({ location: "absolute", yaml: "recover" }));
    expect((await run(dir)).cache).toMatchObject({ parsed: 4, reused: 0 });
    await writeFile(join(dir, "skills.config.json"), config({ location: "absolute", yaml: "recover", descriptionFallback: "first-paragraph" }));
    expect((await run(dir)).cache).toMatchObject({ parsed: 4, reused: 0 });
  });

  it("ignores a cache written by another version of the tool", async () => {
    // The built CLI's version carries a digest of its sources; this in-process build's is "+source".
    const dir = await project();
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const header = JSON.parse((await readFile(join(dir, CACHE), "utf8")).split("\n")[0]!);
    expect((await run(dir)).cache).toMatchObject({ parsed: 4, reused: 0 });
    expect(JSON.parse((await readFile(join(dir, CACHE), "utf8")).split("\n")[0]!).key).not.toBe(header.key);
    expect((await run(dir)).cache).toMatchObject({ parsed: 0, reused: 4 });
  });

  it("ignores a corrupt cache file, builds correctly and replaces it", async () => {
    for (const corrupt of [
      (text: string) => text.slice(0, text.length / 2), // truncated
      (text: string) => text.replace("Drafts alpha reports.", "Drafts alpha rep0rts."), // a changed byte: the checksum disagrees
      () => "\u0000\u0001 not json at all",
      () => "",
    ]) {
      const dir = await project();
      const first = await run(dir);
      await writeFile(join(dir, CACHE), corrupt(await readFile(join(dir, CACHE), "utf8")));
      const after = await compiledBuild(dir);
      expect(after.cache).toMatchObject({ parsed: 4, reused: 0 });
      expect(comparable(after)).toEqual(comparable(first));
      expect(after.agents[0]!.skills.find((skill) => skill.name === "alpha")!.description).toBe("Drafts alpha reports.");
      expect((await run(dir)).cache).toMatchObject({ parsed: 0, reused: 4 });
    }
  });

  it("does not follow a link or open a FIFO put in the cache file's place (a committed node_modules/.cache), and replaces it", async () => {
    const dir = await project();
    const first = await run(dir);
    const elsewhere = join(dir, "copy.json");
    await writeFile(elsewhere, await readFile(join(dir, CACHE)));
    const swaps: [string, () => Promise<void>][] = [
      ["a link to /dev/zero", () => symlink("/dev/zero", join(dir, CACHE))],
      ["a link to a valid cache", () => symlink(elsewhere, join(dir, CACHE))],
      ["a FIFO", async () => void execFileSync("mkfifo", [join(dir, CACHE)])],
    ];
    for (const [what, swap] of swaps) {
      await rm(join(dir, CACHE));
      await swap();
      const after = await compiledBuild(dir);
      expect(after.cache, what).toMatchObject({ parsed: 4, reused: 0 });
      expect(comparable(after)).toEqual(comparable(first));
      expect((await lstat(join(dir, CACHE))).isFile(), what).toBe(true);
    }
  });

  it("rewrites a bundle someone edited or removed a file from; refuses one a file was added to, deleting nothing", async () => {
    const dir = await project();
    await run(dir);
    const original = await prompt(dir);
    await writeFile(join(dir, "dist/skills/prompts/main.txt"), "edited by hand");
    expect((await run(dir)).written).toBe(true);
    expect(await prompt(dir)).toBe(original);

    await rm(join(dir, "dist/skills/prompts/main.txt"));
    expect((await run(dir)).written).toBe(true);
    expect(await prompt(dir)).toBe(original);

    // A file the manifest does not list is not skillbake's to delete.
    for (const stray of ["dist/skills/agents/stray.js", "dist/skills/stray.txt"]) {
      await writeFile(join(dir, stray), "");
      await expect(run(dir)).rejects.toThrow(`holds files its manifest does not list (${stray.slice("dist/skills/".length)})`);
      expect(await readFile(join(dir, stray), "utf8")).toBe("");
      await rm(join(dir, stray));
      await run(dir);
      expect(await prompt(dir)).toBe(original);
    }
  });

  it("rewrites a bundle whose file was edited keeping its size and mtime, whose folder was swapped for a copy, or whose file was swapped for a link", async () => {
    const dir = await project();
    await run(dir);
    const original = await prompt(dir);
    const promptFile = join(dir, "dist/skills/prompts/main.txt");
    // Edited, its size and mtime kept: only the ctime tells (an edit within the build's own timestamp tick aside).
    await sameSizeEdit(promptFile, original.replace("alpha", "ALPHA"));
    expect((await run(dir)).written).toBe(true);
    expect(await prompt(dir)).toBe(original);

    // The prompts folder moved away and a copy put in its place, with the same times (cp -p).
    await rename(join(dir, "dist/skills/prompts"), join(dir, "moved-prompts"));
    execFileSync("cp", ["-Rp", join(dir, "moved-prompts"), join(dir, "dist/skills/prompts")]);
    expect((await run(dir)).written).toBe(true);
    expect(await prompt(dir)).toBe(original);

    // The prompt moved out of the bundle, and a link to it left in its place: the same file, reached through a link.
    await rename(promptFile, join(dir, "moved-main.txt"));
    await symlink(join(dir, "moved-main.txt"), promptFile);
    expect((await run(dir)).written).toBe(true);
    expect((await lstat(promptFile)).isSymbolicLink()).toBe(false);
    expect(await prompt(dir)).toBe(original);
    expect(await readFile(join(dir, "moved-main.txt"), "utf8")).toBe(original);
  });

  it("is not written by `build --check`", async () => {
    const dir = await project();
    await run(dir);
    const before = await readFile(join(dir, CACHE), "utf8");
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited."));
    const checked = await build({ cwd: dir, check: true });
    expect(checked.cache).toMatchObject({ parsed: 1, reused: 3 });
    expect(await readFile(join(dir, CACHE), "utf8")).toBe(before);
  });
});

describe("build cache in CI (the CI variable set)", () => {
  afterEach(() => vi.restoreAllMocks());
  const SNAPSHOT = ["node_modules/.cache/skillbake/skills.config.json.inputs.json", "node_modules/.cache/skillbake/skills.config.json.result.json"];
  const exists = async (dir: string, path: string) => (await lstat(join(dir, path)).catch(() => undefined)) !== undefined;
  /** Every file of the bundle, by path. */
  const bundleFiles = async (dir: string) => {
    const root = join(dir, "dist/skills");
    const paths = (await readdir(root, { recursive: true, withFileTypes: true })).filter((entry) => entry.isFile()).map((entry) => relative(root, join(entry.parentPath, entry.name)));
    return Object.fromEntries(await Promise.all(paths.sort().map(async (path) => [path, await readFile(join(root, path), "utf8")])));
  };
  async function inCi<T>(value: string | undefined, action: () => Promise<T>): Promise<T> {
    const before = process.env.CI;
    process.env.CI = value;
    try {
      return await action();
    } finally {
      process.env.CI = before;
    }
  }

  it("a build that finds no cache writes none, nor the unchanged-build snapshot, and the same bundle", async () => {
    const [ci, local] = [await project(), await project()];
    // Every file past the racy window, as after a pause: a build that kept caches would keep the snapshot too.
    const now = Date.now.bind(Date);
    vi.spyOn(Date, "now").mockImplementation(() => now() + 10_000);
    const built = await inCi("true", () => run(ci));
    expect(built.written).toBe(true);
    await run(local);
    expect(await exists(ci, CACHE)).toBe(false);
    for (const path of SNAPSHOT) expect(await exists(ci, path)).toBe(false);
    expect(await exists(local, CACHE)).toBe(true);
    for (const path of SNAPSHOT) expect(await exists(local, path)).toBe(true);
    expect(await bundleFiles(ci)).toEqual(await bundleFiles(local));
    // The next build in CI has no cache either: it parses everything again, and gives the same bundle.
    const again = await inCi("true", () => run(ci));
    expect(again.cache).toMatchObject({ parsed: 4, reused: 0 });
    expect(await exists(ci, CACHE)).toBe(false);
    expect(await bundleFiles(ci)).toEqual(await bundleFiles(local));
  });

  it("a cache that is found (restored by a CI cache step) is used and kept up to date, the snapshot with it", async () => {
    const dir = await project();
    await run(dir);
    const before = await readFile(join(dir, CACHE), "utf8");
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited."));
    const edited = await inCi("true", () => run(dir));
    expect(edited.cache).toMatchObject({ parsed: 1, reused: 3 });
    expect(await readFile(join(dir, CACHE), "utf8")).not.toBe(before);
    const record = JSON.parse((await readFile(join(dir, CACHE), "utf8")).split("\n")[1]!);
    expect(record.skills["skills/alpha/SKILL.md"].content.description).toBe("Drafts alpha reports, edited.");
    expect(edited.written).toBe(true);
    expect(await prompt(dir)).toContain("Drafts alpha reports, edited.");
  });

  it("a cache file for other settings or another version counts as found: it is replaced", async () => {
    const dir = await project();
    writeCacheFile(join(dir, CACHE), 2, "another version's key", { skills: {}, files: {}, folders: {} });
    const built = await inCi("true", () => run(dir));
    expect(built.cache).toMatchObject({ parsed: 4, reused: 0 });
    expect((await inCi("true", () => run(dir))).cache).toMatchObject({ parsed: 0, reused: 4 });
  });

  it("CI set to false, 0 or nothing is no CI", async () => {
    for (const value of ["false", "0", ""]) {
      const dir = await project();
      await inCi(value, () => run(dir));
      expect(await exists(dir, CACHE)).toBe(true);
    }
  });

  it("`skills build` run by a CI job writes the bundle and no cache", async () => {
    const dir = await project();
    const result = await runCli(["build"], { cwd: dir, env: { CI: "true" } });
    expect(result.stderr).toContain("Wrote dist/skills");
    expect(result.code).toBe(0);
    expect(await exists(dir, "dist/skills/manifest.json")).toBe(true);
    expect(await exists(dir, CACHE)).toBe(false);
  });
});

describe("cache files", () => {
  it("a link put where a cache file's temporary copy goes is neither written through nor removed", async () => {
    const dir = await tempDir();
    const file = join(dir, "cache", "x.json");
    const outside = join(dir, "outside.txt");
    await writeTree(dir, { "outside.txt": "not the cache's", "cache/.keep": "" });
    await symlink(outside, `${file}.${process.pid}.tmp`);
    writeCacheFile(file, 1, "key", { a: 1 });
    expect(await readFile(outside, "utf8")).toBe("not the cache's");
    expect((await lstat(`${file}.${process.pid}.tmp`)).isSymbolicLink()).toBe(true);
    expect(readCacheFile(file, 1, "key")).toBeUndefined(); // not written this time: a cache only saves time

    await rm(`${file}.${process.pid}.tmp`);
    writeCacheFile(file, 1, "key", { a: 1 });
    expect(readCacheFile(file, 1, "key")).toEqual({ a: 1 });
  });

  it("one longer than any payload JSON.parse takes (gigabytes a pull request committed) is not read", async () => {
    const dir = await tempDir();
    const file = join(dir, "x.json");
    writeCacheFile(file, 1, "key", { a: 1 });
    await truncate(file, 1900 * 1024 * 1024); // sparse: no disk space taken
    const started = performance.now();
    expect(readCacheFile(file, 1, "key")).toBeUndefined();
    // Read whole, it took seconds and 1.9 GB of memory; the size alone tells it is not skillbake's.
    expect(performance.now() - started).toBeLessThan(500);
  });

  it("is written in ASCII and read back as the same value; a UTF-8 payload (an earlier writer's) reads too", async () => {
    const dir = await tempDir();
    const file = join(dir, "x.json");
    // Latin-1, a character past it, an emoji (a surrogate pair), a lone surrogate (JSON.stringify escapes it), DEL, controls.
    const value = { "clé": ["café", "日本語", "🙂 done", "\ud800 alone", "\u007f", "tab\there\nline", "\u0080\u00ff\uffff"] };
    writeCacheFile(file, 1, "key", value);
    const bytes = await readFile(file);
    expect([...bytes].every((byte) => byte < 0x80)).toBe(true);
    expect(readCacheFile(file, 1, "key")).toEqual(value);

    const payload = Buffer.from(JSON.stringify(value), "utf8");
    const header = JSON.stringify({ format: 1, key: "key", sha256: createHash("sha256").update(payload).digest("hex") });
    await writeFile(file, Buffer.concat([Buffer.from(`${header}\n`), payload]));
    expect(readCacheFile(file, 1, "key")).toEqual(value);
  });

  it("writes a payload in pieces that join to what JSON.stringify writes of it, at every depth it walks", () => {
    // Beside JSON data: what JSON.stringify leaves out or writes otherwise (undefined, functions, toJSON given its
    // key, Dates, boxed primitives, a class's instance, a Map, a null prototype, an own __proto__ key), nested anywhere.
    const odd = fc.constantFrom<() => unknown>(
      () => undefined,
      () => () => 1,
      () => ({ toJSON: (key: string) => `key ${key}` }),
      () => ({ toJSON: () => undefined }),
      () => new Date(0),
      () => Object("boxed"),
      () => Object.assign(Object.create(null) as object, { b: 1, a: [2] }),
      () => JSON.parse('{"__proto__": {"x": 1}, "y": 2}') as unknown,
      () => new (class Record { own = [1, "a"]; get inherited() { return 2; } })(),
      () => new Map([["a", 1]]),
      () => Object(1),
    );
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof({ depthSize: "small" }, fc.jsonValue({ maxDepth: 1 }), odd.map((make) => make()), fc.array(tie("tree"), { maxLength: 4 }), fc.dictionary(fc.string({ maxLength: 3 }), tie("tree"), { maxKeys: 4 })),
    }));
    fc.assert(
      fc.property(fc.oneof(fc.array(tree, { maxLength: 4 }), fc.dictionary(fc.string({ maxLength: 3 }), tree, { maxKeys: 4 })), fc.integer({ min: 0, max: 4 }), (value, levels) => {
        expect([...jsonPieces(value, levels)].join("")).toBe(JSON.stringify(value));
      }),
      { numRuns: 400, seed: 28 },
    );
  });

  it("is read back under a key of any characters (the checksum is put in its place by bytes)", async () => {
    const file = join(await tempDir(), "x.json");
    writeCacheFile(file, 1, "clé 🙂", { a: "é" });
    expect(readCacheFile(file, 1, "clé 🙂")).toEqual({ a: "é" });
  });

  it("writes any text as ASCII, each character past it as \\u and four hex digits, and reads it back the same", async () => {
    const dir = await tempDir();
    const file = join(dir, "x.json");
    const unit = fc.oneof(fc.constantFrom("a", '"', "\\", "\n", "\u007f", "\u0080", "\u00ff", "\u0100", "\u0fff", "\u1000", "\ud83d", "\ude00", "\uffff"), fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)));
    fc.assert(
      fc.property(fc.array(fc.string({ unit }), { maxLength: 8 }), (value) => {
        const json = JSON.stringify(value);
        writeCacheFile(file, 1, "key", value);
        const bytes = readFileSync(file);
        const payload = bytes.subarray(bytes.indexOf(0x0a) + 1).toString("latin1");
        expect(payload).toBe(json.replace(/[\u0080-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`));
        expect(readCacheFile(file, 1, "key")).toEqual(value);
      }),
      { numRuns: 300, seed: 21 },
    );
  });
});

/** A valid SKILL.md outcome as `validate` gives it. */
const outcome = (extra: Record<string, unknown>) => ({ findings: [], content: { name: "x", description: "d", fields: {}, extra, body: "", bodyLine: 4, links: [] } });

describe("build cache: a record of the wrong shape in a cache file (its checksum right) is never used", () => {
  it("a skill record: the SKILL.md is parsed again", async () => {
    const dir = await project();
    await run(dir);
    const path = "skills/folder/SKILL.md"; // an error (name-mismatch) in its findings
    const original = await readFile(join(dir, CACHE), "utf8");
    const record = JSON.parse(original.split("\n")[1]!).skills[path];
    expect(record.findings.map((finding: { code: string }) => finding.code)).toContain("name-mismatch");
    const parsedWith = async (edit: (record: Record<string, any>) => void) => {
      await writeFile(join(dir, CACHE), original);
      rewriteCache(join(dir, CACHE), (contents) => edit(contents.skills[path]));
      const cache = BuildCache.open(await loadConfig(undefined, dir));
      let parsed = false;
      const result = cache.skill(path, "folder", record.hash, () => ((parsed = true), { findings: [] }));
      return { parsed, result };
    };
    const reused = await parsedWith(() => {});
    expect(reused.parsed).toBe(false);
    expect(reused.result.content!.name).toBe("other-name");
    expect((await parsedWith((r) => delete r.content)).parsed).toBe(false); // a skill a skip rule hit has no content
    for (const edit of [
      (r: Record<string, any>) => (r.findings = "name-mismatch"),
      (r: Record<string, any>) => (r.findings = [null]),
      (r: Record<string, any>) => (r.findings = [...r.findings, { code: "no-such-rule", message: "m" }]),
      (r: Record<string, any>) => (r.findings = [...r.findings, { code: "name-mismatch" }]),
      (r: Record<string, any>) => (r.content.name = 1),
      (r: Record<string, any>) => delete r.content.description,
      (r: Record<string, any>) => (r.content.bodyLine = 1.5),
      (r: Record<string, any>) => (r.content.links = {}),
      (r: Record<string, any>) => (r.content.fields = []),
      (r: Record<string, any>) => (r.content.fields = null),
      (r: Record<string, any>) => (r.content.extra = null),
    ]) {
      expect((await parsedWith(edit)).parsed, String(edit)).toBe(true);
    }
  });

  it("a folder record: the folder is listed again; a valid one's entries keep their kinds", async () => {
    const dir = await project();
    const skills = join(dir, "skills");
    const stats = statSync(skills, { bigint: true });
    await run(dir);
    const original = await readFile(join(dir, CACHE), "utf8");
    const listing = async (entries: unknown) => {
      await writeFile(join(dir, CACHE), original);
      rewriteCache(join(dir, CACHE), (contents) => (contents.folders.skills = { stat: signatureOf(stats), entries }));
      const cache = BuildCache.open(await loadConfig(undefined, dir));
      const listed = cache.listFolder(skills, "skills");
      return { listed, fromCache: cache.folderStats.unlisted === 1 };
    };
    const cached = await listing(["dalpha", "fREADME.md", "llinked"]);
    expect(cached.fromCache).toBe(true);
    expect(cached.listed.map((entry) => [entry.name, entry.isFile(), entry.isDirectory(), entry.isSymbolicLink()])).toEqual([
      ["alpha", false, true, false],
      ["README.md", true, false, false],
      ["linked", false, false, true],
    ]);
    expect(cached.listed.some((entry) => entry.isFIFO() || entry.isSocket() || entry.isCharacterDevice() || entry.isBlockDevice())).toBe(false);
    for (const entries of ["dalpha", ["dalpha", "f"], ["dalpha", ""], ["dalpha", "xname"], ["dalpha", 5], ["dalpha", ["d", "beta"]]]) {
      const again = await listing(entries);
      expect(again.fromCache, JSON.stringify(entries)).toBe(false);
      expect(again.listed.map((entry) => entry.name).sort()).toEqual(["alpha", "beta", "folder", "gamma"]);
    }
  });

  it("a file record: the file is read again", async () => {
    const dir = await project();
    const file = join(dir, "skills/beta/references/guide.md");
    const stats = lstatSync(file, { bigint: true });
    await run(dir);
    const original = await readFile(join(dir, CACHE), "utf8");
    const known = async (record: Record<string, unknown>) => {
      await writeFile(join(dir, CACHE), original);
      rewriteCache(join(dir, CACHE), (contents) => (contents.files["skills/beta/references/guide.md"] = record));
      return BuildCache.open(await loadConfig(undefined, dir)).knownFile("skills/beta/references/guide.md", stats);
    };
    const sha256 = "0".repeat(64);
    expect(await known({ stat: signatureOf(stats), size: 8, sha256 })).toEqual({ size: 8, sha256 });
    for (const record of [{ stat: signatureOf(stats), size: 8.5, sha256 }, { stat: signatureOf(stats), size: "8", sha256 }, { stat: signatureOf(stats), size: 8, sha256: 0 }, { stat: `${signatureOf(stats)}1`, size: 8, sha256 }]) {
      expect(await known(record), JSON.stringify(record)).toBeUndefined();
    }
  });

  it("a cache whose records are not objects is ignored whole", async () => {
    for (const edit of [(c: Record<string, any>) => (c.files = null), (c: Record<string, any>) => (c.folders = "x"), (c: Record<string, any>) => (c.skills = 5)]) {
      const dir = await project();
      const first = await run(dir);
      rewriteCache(join(dir, CACHE), edit);
      const after = await compiledBuild(dir);
      expect(after.cache, String(edit)).toMatchObject({ parsed: 4, reused: 0 });
      expect(comparable(after)).toEqual(comparable(first));
    }
  });

  it("token counts: used only in the encoding they were counted in, and only as text", async () => {
    const dir = await project();
    await run(dir);
    const original = await readFile(join(dir, CACHE), "utf8");
    const counts = async (tokens: unknown, encoding: string) => {
      await writeFile(join(dir, CACHE), original);
      rewriteCache(join(dir, CACHE), (contents) => (contents.tokens = tokens));
      return BuildCache.open(await loadConfig(undefined, dir)).tokenCounts(encoding);
    };
    expect(await counts({ encoding: "o200k_base", counts: "3,4" }, "o200k_base")).toBe("3,4");
    expect(await counts({ encoding: "o200k_base", counts: "3,4" }, "cl100k_base")).toBeUndefined();
    expect(await counts({ encoding: "o200k_base", counts: [3, 4] }, "o200k_base")).toBeUndefined();
    expect(await counts(undefined, "o200k_base")).toBeUndefined();
  });

  it("an outcome JSON cannot carry exactly (NaN, ±Infinity, -0, a Date) is not cached; null, nested values and absent members are", async () => {
    const dir = await project();
    const loaded = await loadConfig(undefined, dir);
    const parsedAgain = (extra: Record<string, unknown>) => {
      const cache = BuildCache.open(loaded);
      cache.skill("skills/x/SKILL.md", "x", "h", () => outcome(extra));
      cache.nextBuild();
      let parsed = false;
      cache.skill("skills/x/SKILL.md", "x", "h", () => ((parsed = true), outcome(extra)));
      return parsed;
    };
    for (const extra of [{ n: 1, s: "s", b: true, z: null, list: [1, [2]], map: { a: { b: 0 } }, gone: undefined }, {}]) expect(parsedAgain(extra), JSON.stringify(extra)).toBe(false);
    for (const extra of [{ n: Number.NaN }, { n: Number.POSITIVE_INFINITY }, { n: -0 }, { list: [1, Number.NaN] }, { map: { a: -0 } }, { when: new Date(0) }, { big: 1n }]) {
      expect(parsedAgain(extra), String(Object.values(extra)[0])).toBe(true);
    }
  });
});

describe("settled signatures (the config's inputs)", () => {
  it("a file's signature only when both its times are older than the racy window before `since`; none for a missing file", async () => {
    const dir = await tempDir();
    const file = join(dir, "skills.config.json");
    await writeFile(file, "{}");
    const stats = statSync(file, { bigint: true });
    const racy = 2_000_000_000n;
    expect(settledSignatures([file], stats.ctimeNs + racy + 1n)).toBe(signatureOf(stats));
    expect(settledSignatures([file, file], stats.ctimeNs + racy + 1n)).toBe(`${signatureOf(stats)}\n${signatureOf(stats)}`);
    expect(settledSignatures([file], stats.ctimeNs + racy)).toBeUndefined();
    expect(settledSignatures([file, join(dir, "missing.json")], stats.ctimeNs + racy + 1n)).toBeUndefined();
    const later = new Date(Number((stats.ctimeNs + 3_600_000_000_000n) / 1_000_000n)); // an mtime an hour after the ctime
    utimesSync(file, later, later);
    const moved = statSync(file, { bigint: true });
    expect(settledSignatures([file], moved.ctimeNs + racy + 1n)).toBeUndefined();
    expect(settledSignatures([file], moved.mtimeNs + racy + 1n)).toBe(signatureOf(moved));
  });
});

describe("build cache: written only when a record changes, and then only what changed", () => {
  const CHANGES = CACHE.replace(/\.json$/, ".changes.json");
  const settledStats = (dir: string, file: string) => ({ ...lstatSync(join(dir, file), { bigint: true }), mtimeNs: 1n, ctimeNs: 1n }); // settled long ago
  const inode = async (dir: string, file: string) => (await stat(join(dir, file))).ino; // a file is replaced by a rename: a new inode
  /** The files a build cache opened now knows, of `files`. */
  const known = async (dir: string, files: string[]) => {
    const cache = BuildCache.open(await loadConfig(undefined, dir));
    return files.filter((file) => cache.knownFile(file, settledStats(dir, file)) !== undefined);
  };
  /** A project of `count` skills, each file of them recorded in a written cache. */
  async function recorded(count: number): Promise<{ dir: string; files: string[] }> {
    const dir = await tempDir();
    const files = Array.from({ length: count }, (_, index) => `skills/s${index}/SKILL.md`);
    await writeTree(dir, { "skills.config.json": config(), ...Object.fromEntries(files.map((file, index) => [file, skillMd(`s${index}`)])) });
    const cache = BuildCache.open(await loadConfig(undefined, dir));
    for (const file of files) cache.recordFile(file, settledStats(dir, file), 1, "0".repeat(64));
    cache.save();
    return { dir, files };
  }

  it("a build that reuses every record writes nothing; one that drops a record or adds one writes the change beside the cache file", async () => {
    const { dir, files } = await recorded(8);
    const written = await inode(dir, CACHE);

    const same = BuildCache.open(await loadConfig(undefined, dir));
    for (const file of files) expect(same.knownFile(file, settledStats(dir, file))).toBeDefined();
    same.save();
    expect(await inode(dir, CACHE)).toBe(written);
    expect(existsSync(join(dir, CHANGES))).toBe(false);

    const fewer = BuildCache.open(await loadConfig(undefined, dir));
    for (const file of files.slice(1)) expect(fewer.knownFile(file, settledStats(dir, file))).toBeDefined();
    fewer.save();
    expect(await inode(dir, CACHE)).toBe(written);
    expect(JSON.parse((await readFile(join(dir, CHANGES), "utf8")).split("\n")[1]!)).toEqual({ skills: {}, files: { [files[0]!]: null }, folders: {} });
    expect(await known(dir, files)).toEqual(files.slice(1));

    // Changes since the cache file was written add up: the record dropped stays dropped, the one added is there.
    const more = BuildCache.open(await loadConfig(undefined, dir));
    for (const file of files.slice(1)) expect(more.knownFile(file, settledStats(dir, file))).toBeDefined();
    more.recordFile("skills/new/SKILL.md", settledStats(dir, files[0]!), 2, "1".repeat(64));
    more.save();
    expect(await inode(dir, CACHE)).toBe(written);
    expect(Object.keys(JSON.parse((await readFile(join(dir, CHANGES), "utf8")).split("\n")[1]!).files).sort()).toEqual([files[0], "skills/new/SKILL.md"].sort());
    expect(await known(dir, files)).toEqual(files.slice(1));
  });

  it("writes the whole cache file again once the changes would be past half its size, and removes the file of changes", async () => {
    const { dir, files } = await recorded(8);
    const first = await inode(dir, CACHE);
    // Files hashed again (another stat): `changed` of them get new records, the rest keep theirs.
    const rehashing = async (changed: number) => {
      const cache = BuildCache.open(await loadConfig(undefined, dir));
      files.forEach((file, index) => {
        if (index >= changed) expect(cache.knownFile(file, settledStats(dir, file))).toBeDefined();
        else cache.recordFile(file, settledStats(dir, file), 2, "1".repeat(64));
      });
      cache.save();
    };
    await rehashing(1);
    expect(await inode(dir, CACHE)).toBe(first);
    expect(existsSync(join(dir, CHANGES))).toBe(true);
    await rehashing(5);
    expect(await inode(dir, CACHE)).not.toBe(first);
    expect(existsSync(join(dir, CHANGES))).toBe(false);
    const records = JSON.parse((await readFile(join(dir, CACHE), "utf8")).split("\n")[1]!).files as Record<string, { size: number }>;
    expect(files.map((file) => records[file]!.size)).toEqual([2, 2, 2, 2, 2, 1, 1, 1]);
    expect(await known(dir, files)).toEqual(files);
  });

  it("reads no file of changes written for another cache file, or of another shape", async () => {
    const { dir, files } = await recorded(8);
    const dropFirst = async () => {
      const cache = BuildCache.open(await loadConfig(undefined, dir));
      for (const file of files.slice(1)) cache.knownFile(file, settledStats(dir, file));
      cache.save();
    };
    await dropFirst();
    const changes = await readFile(join(dir, CHANGES), "utf8");
    // The cache file written anew (a record's stat changed): the changes name the file they were written for.
    const cache = BuildCache.open(await loadConfig(undefined, dir));
    for (const file of files) cache.recordFile(file, { ...settledStats(dir, file), mtimeNs: 2n }, 1, "0".repeat(64));
    cache.save();
    expect(existsSync(join(dir, CHANGES))).toBe(false);
    await writeFile(join(dir, CHANGES), changes);
    const reopened = BuildCache.open(await loadConfig(undefined, dir));
    expect(files.filter((file) => reopened.knownFile(file, { ...settledStats(dir, file), mtimeNs: 2n }) !== undefined)).toEqual(files);

    // Of another shape, named by the cache file now there: the cache file alone is read.
    const baseSha = (JSON.parse((await readFile(join(dir, CACHE), "utf8")).split("\n")[0]!) as { sha256: string }).sha256;
    const key = `${BuildCache.keyOf(await loadConfig(undefined, dir))}:${baseSha}`;
    const knownWith = async (changes: string) => {
      writeCacheFile(join(dir, CHANGES), 2, key, JSON.parse(changes));
      const shaped = BuildCache.open(await loadConfig(undefined, dir));
      return files.filter((file) => shaped.knownFile(file, { ...settledStats(dir, file), mtimeNs: 2n }) !== undefined);
    };
    const dropping = `"files":{"${files[0]}":null}`;
    for (const payload of ["[]", `{"skills":{},${dropping}}`, `{"skills":{},${dropping},"folders":[]}`, `{"skills":[],${dropping},"folders":{}}`]) {
      expect(await knownWith(payload)).toEqual(files);
    }
    // The same change in the shape a build writes is applied.
    expect(await knownWith(`{"skills":{},${dropping},"folders":{}}`)).toEqual(files.slice(1));
  });

  it("keeps a record at a path named __proto__ as any other, in the file of changes too", async () => {
    const { dir, files } = await recorded(8);
    const cache = BuildCache.open(await loadConfig(undefined, dir));
    for (const file of files) cache.knownFile(file, settledStats(dir, file));
    cache.recordFile("__proto__", settledStats(dir, files[0]!), 3, "2".repeat(64));
    cache.save();
    expect(existsSync(join(dir, CHANGES))).toBe(true);
    const reopened = BuildCache.open(await loadConfig(undefined, dir));
    expect(reopened.knownFile("__proto__", settledStats(dir, files[0]!))).toEqual({ size: 3, sha256: "2".repeat(64) });
    expect(reopened.knownFile(files[1]!, settledStats(dir, files[1]!))).toEqual({ size: 1, sha256: "0".repeat(64) });
  });
});

describe("build cache: a folder's listing, recorded and read back", () => {
  it("gives back each entry's name and kind, names starting with f, d or l included; a folder holding a FIFO is not recorded", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": config(), "skills/docs.md": "", "skills/files/SKILL.md": skillMd("files"), "skills/link": { link: "files" } });
    const loaded = await loadConfig(undefined, dir);
    const skills = join(dir, "skills");
    // Stats as a folder changed long ago has them: the racy rule lets the listing be recorded.
    const settled = () => Object.assign(Object.create(Object.getPrototypeOf(statSync(skills, { bigint: true }))), statSync(skills, { bigint: true }), { mtimeNs: 1n, ctimeNs: 1n });
    const shown = (entries: FolderEntry[]) => entries.map((entry) => [entry.name, entry.isFile(), entry.isDirectory(), entry.isSymbolicLink()]).sort();
    const first = BuildCache.open(loaded);
    const listed = shown(first.listFolder(skills, "skills", settled()));
    expect(listed).toEqual([["docs.md", true, false, false], ["files", false, true, false], ["link", false, false, true]]);
    first.save();
    const second = BuildCache.open(loaded);
    expect(shown(second.listFolder(skills, "skills", settled()))).toEqual(listed);
    expect(second.folderStats).toEqual({ listed: 0, unlisted: 1 });

    execFileSync("mkfifo", [join(skills, "files/pipe")]);
    const files = join(skills, "files");
    const settledFiles = () => Object.assign(Object.create(Object.getPrototypeOf(statSync(files, { bigint: true }))), statSync(files, { bigint: true }), { mtimeNs: 1n, ctimeNs: 1n });
    const third = BuildCache.open(loaded);
    third.listFolder(files, "skills/files", settledFiles());
    third.save();
    const fourth = BuildCache.open(loaded);
    fourth.listFolder(files, "skills/files", settledFiles());
    expect(fourth.folderStats).toEqual({ listed: 1, unlisted: 0 });
  });
});
