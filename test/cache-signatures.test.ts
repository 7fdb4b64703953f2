import { createHash } from "node:crypto";
import { execFileSync } from "node:child_process";
import { lstatSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { build, BuildSession, buildInSession } from "../src/api.js";
import { bundleOf, bundleTexts } from "../src/bundle/bundle.js";
import { BuildCache } from "../src/compile/cache.js";
import { bodyWasRead, compile } from "../src/compile/compile.js";
import { loadConfig } from "../src/compile/config.js";
import { runCli, sameSizeEdit, skillMd, tempDir, writeTree } from "./helpers.js";

const CACHE = "node_modules/.cache/skillbake/skills.config.json.json";
/** Longer than the cache's racy window: files older than this get a signature. */
const SETTLE_MS = 2100;

/** Two skills, one with a reference file; and a file outside the root. */
async function project(): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, {
    "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }),
    "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
    "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks."),
    "skills/beta/references/guide.md": "# Guide\n",
    "skills/beta/examples/guide.md": "# Example\n",
    "outside/SKILL.md": skillMd("alpha", "outside-the-roots"),
  });
  return dir;
}

const run = (dir: string) => build({ cwd: dir });
const manifest = (dir: string) => readFileSync(join(dir, "dist/skills/manifest.json"), "utf8");
const fileRecords = (dir: string) => Object.keys(JSON.parse(readFileSync(join(dir, CACHE), "utf8").split("\n")[1]!).files as object).sort();
/** Whether a result skill's body was read: until its first use it holds a reader, not the text. */
const bodyRead = (skill: object) => bodyWasRead(skill);
/** Every file of the bundle, by path. */
const bundleFiles = (dir: string) => Object.fromEntries(["manifest.json", "index.js", "index.d.ts", "agents/main.js", "prompts/main.txt"].map((path) => [path, readFileSync(join(dir, "dist/skills", path), "utf8")]));
const hashOf = (dir: string, skill: string, path: string) =>
  (JSON.parse(manifest(dir)) as { skills: { name: string; files: { path: string; sha256: string }[] }[] }).skills.find((entry) => entry.name === skill)!.files.find((file) => file.path === path)?.sha256;

describe("build cache: stat signatures", () => {
  // Projects made up front and left to settle once: a file changed less than 2 s before a build gets no signature.
  const settled: string[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 9; i++) settled.push(await project());
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    for (const dir of settled) await run(dir);
  }, 30_000);

  it("a rebuild with nothing changed lists no folder and reads no skill file, and leaves the bundle alone", async () => {
    const dir = settled[0]!;
    expect(fileRecords(dir)).toEqual(["skills/alpha/SKILL.md", "skills/beta/SKILL.md", "skills/beta/examples/guide.md", "skills/beta/references/guide.md"]);
    const again = await run(dir);
    expect(again.cache).toEqual({ parsed: 0, reused: 2, hashed: 0, unchanged: 4, listed: 0, unlisted: 5 });
    expect(again.written).toBe(false);
  });

  it("a bundle rewritten from unchanged files (a config edit) copies their bodies from the bundle it replaces, and equals a build without the cache", async () => {
    const dir = settled[1]!;
    await writeFile(join(dir, "skills.config.json"), JSON.stringify({ location: "absolute", agents: { main: { skills: [{ root: "skills" }] } } }));
    const edited = await run(dir);
    expect(edited.cache).toMatchObject({ hashed: 0, unchanged: 4 });
    expect(edited.written).toBe(true);
    // Every entry shows a new location, so each is made again; the bodies in them are the bundle's own.
    expect(edited.agents[0]!.skills.map(bodyRead)).toEqual([false, false]);
    const withCache = bundleFiles(dir);
    expect(withCache["manifest.json"]).toContain("Steps for alpha.");
    expect(withCache["manifest.json"]).toContain(join(dir, "skills/alpha/SKILL.md"));
    await rm(join(dir, "node_modules"), { recursive: true });
    expect((await run(dir)).cache).toMatchObject({ hashed: 4, unchanged: 0 });
    expect(bundleFiles(dir)).toEqual(withCache);
  });

  it("one SKILL.md edited in place (its folder unchanged, so not listed): only it is read again, and the bundle has its new body", async () => {
    const dir = settled[2]!;
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports.", "# alpha\n\nSteps, edited."));
    const after = await run(dir);
    expect(after.cache).toEqual({ parsed: 1, reused: 1, hashed: 1, unchanged: 3, listed: 0, unlisted: 5 });
    expect(manifest(dir)).toContain("Steps, edited.");
  });

  it("a bundle rewritten after one SKILL.md changed copies the other bodies from the bundle it replaces, which a file edited or linked by hand is not", async () => {
    const dir = settled[7]!;
    const rebuild = async (body: string) => {
      await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports.", body));
      const result = await run(dir);
      const beta = result.agents[0]!.skills.find((skill) => skill.name === "beta")!;
      const files = bundleFiles(dir);
      // The same bytes as a build without the cache (and so without a bundle to copy from).
      await rm(join(dir, "node_modules"), { recursive: true });
      await rm(join(dir, "dist"), { recursive: true });
      await run(dir);
      expect(bundleFiles(dir)).toEqual(files);
      return { result, read: bodyRead(beta) };
    };
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS)); // beta's SKILL.md, and the cold build's bundle, settled

    const edited = await rebuild("# alpha\n\nSteps, edited.");
    expect(edited.result.written).toBe(true);
    expect(edited.read).toBe(false); // beta's entry, body and all, came from the bundle replaced, not from its SKILL.md
    expect(manifest(dir)).toContain("Steps, edited.");

    // A file of beta's edited: its entry is made again (the file's new sha256 in it), its body still copied.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    await writeFile(join(dir, "skills/beta/references/guide.md"), "# Guide, edited\n");
    const resource = await rebuild("# alpha\n\nSteps, edited again.");
    expect(resource.read).toBe(false);
    expect(hashOf(dir, "beta", "references/guide.md")).toBe(createHash("sha256").update("# Guide, edited\n").digest("hex"));

    // The module edited by hand, its size and mtime kept: beta's body is read for it again (the manifest's copy is still good).
    await sameSizeEdit(join(dir, "dist/skills/index.js"), readFileSync(join(dir, "dist/skills/index.js"), "utf8").replace("Steps for beta.", "Steps for BETA."));
    expect((await rebuild("# alpha\n\nSteps, edited twice.")).read).toBe(true);
    expect(readFileSync(join(dir, "dist/skills/index.js"), "utf8")).not.toContain("Steps for BETA.");

    // The bundle's folder moved away and a copy put in its place (cp -p, times kept), its module edited: every file
    // is another, so nothing is copied from it.
    await rename(join(dir, "dist/skills"), join(dir, "dist/moved"));
    execFileSync("cp", ["-Rp", join(dir, "dist/moved"), join(dir, "dist/skills")]);
    await rm(join(dir, "dist/moved"), { recursive: true });
    await sameSizeEdit(join(dir, "dist/skills/index.js"), readFileSync(join(dir, "dist/skills/index.js"), "utf8").replace("Steps for beta.", "Steps for BETA."));
    expect((await rebuild("# alpha\n\nSteps, edited again twice.")).read).toBe(true);
    expect(readFileSync(join(dir, "dist/skills/index.js"), "utf8")).not.toContain("Steps for BETA.");

    // The module replaced by a link to a file outside the roots, of the same length: never read.
    const module = join(dir, "dist/skills/index.js");
    const length = readFileSync(module).byteLength;
    writeFileSync(join(dir, "outside/index.js"), "outside-the-roots ".repeat(length).slice(0, length));
    rmSync(module);
    symlinkSync(join(dir, "outside/index.js"), module);
    const linked = await rebuild("# alpha\n\nSteps, edited thrice.");
    expect(linked.read).toBe(true);
    expect(Object.values(bundleFiles(dir)).join("")).not.toContain("outside-the-roots");
  }, 20_000);

  it("a watch session whose first build found the bundle current copies the unchanged bodies from it when it rewrites", async () => {
    const dir = settled[8]!;
    // Without the last build's snapshot, the session's first build compiles and finds the bundle current.
    rmSync(join(dir, "node_modules/.cache/skillbake/skills.config.json.inputs.json"));
    const session = new BuildSession();
    const first = await buildInSession({ cwd: dir }, session);
    expect(first.written).toBe(false);
    expect(first.cache.reused).toBe(2);
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports.", "# alpha\n\nSteps, edited."));
    const rebuilt = await buildInSession({ cwd: dir }, session);
    session.save();
    expect(rebuilt.written).toBe(true);
    expect(manifest(dir)).toContain("Steps, edited.");
    expect(bodyRead(rebuilt.agents[0]!.skills.find((skill) => skill.name === "beta")!)).toBe(false);
  });

  it("two folders swapped (renamed into each other's place): each path's file is hashed again, not taken from the other's record", async () => {
    const dir = settled[3]!;
    const guide = hashOf(dir, "beta", "references/guide.md");
    const example = hashOf(dir, "beta", "examples/guide.md");
    await rename(join(dir, "skills/beta/references"), join(dir, "skills/beta/swap"));
    await rename(join(dir, "skills/beta/examples"), join(dir, "skills/beta/references"));
    await rename(join(dir, "skills/beta/swap"), join(dir, "skills/beta/examples"));
    const after = await run(dir);
    // skills/beta is listed again (entries renamed in it); so are the two paths now holding each other's folder.
    expect(after.cache).toMatchObject({ hashed: 2, unchanged: 2, listed: 3, unlisted: 2 });
    expect(hashOf(dir, "beta", "references/guide.md")).toBe(example);
    expect(hashOf(dir, "beta", "examples/guide.md")).toBe(guide);
  });

  it("a skill folder renamed, a file deleted, a skill and a file added: each shows in the bundle", async () => {
    const dir = settled[4]!;
    await rename(join(dir, "skills/alpha"), join(dir, "skills/gamma"));
    await rm(join(dir, "skills/beta/examples/guide.md"));
    await writeTree(dir, { "skills/delta/SKILL.md": skillMd("delta"), "skills/beta/references/extra.md": "# Extra\n" });
    const after = await run(dir);
    expect(after.agents[0]!.skills.map((skill) => [skill.name, skill.file])).toEqual([
      ["alpha", "skills/gamma/SKILL.md"],
      ["beta", "skills/beta/SKILL.md"],
      ["delta", "skills/delta/SKILL.md"],
    ]);
    expect(after.diagnostics.map((d) => d.code)).toContain("name-mismatch");
    expect(hashOf(dir, "beta", "examples/guide.md")).toBeUndefined();
    expect(hashOf(dir, "beta", "references/extra.md")).toMatch(/^[0-9a-f]{64}$/);
    expect(fileRecords(dir)).not.toContain("skills/beta/examples/guide.md");
  });

  it("a file replaced by a link out of the root: its folder is listed again, symlink-escape as on a cold build, the target never read", async () => {
    const dir = settled[5]!;
    rmSync(join(dir, "skills/beta/references/guide.md"));
    symlinkSync(join(dir, "outside/SKILL.md"), join(dir, "skills/beta/references/guide.md"));
    const after = await run(dir);
    expect(after.diagnostics.map(({ code, file }) => ({ code, file }))).toEqual([{ code: "symlink-escape", file: "skills/beta/references/guide.md" }]);
    expect(hashOf(dir, "beta", "references/guide.md")).toBeUndefined();
    expect(manifest(dir)).not.toContain("outside-the-roots");
  });

  it("an unchanged SKILL.md swapped for a link out of the root during the build: the body is never read from it, the build fails in one line", async () => {
    const dir = settled[6]!;
    await writeFile(join(dir, "skills.config.json"), JSON.stringify({ location: "absolute", agents: { main: { skills: [{ root: "skills" }] } } }));
    const loaded = await loadConfig(undefined, dir);
    const cache = BuildCache.open(loaded);
    const swap = () => {
      rmSync(join(dir, "skills/alpha/SKILL.md"));
      symlinkSync(join(dir, "outside/SKILL.md"), join(dir, "skills/alpha/SKILL.md"));
    };
    const result = await compile(loaded, { cache, afterDiscovery: swap });
    expect(cache.fileStats).toEqual({ hashed: 0, unchanged: 4 });
    expect(() => bundleTexts(bundleOf(result))).toThrow("cannot read skills/alpha/SKILL.md: it changed during the build; build again");

    // Edited in place instead (same file, new bytes): its signature no longer matches, so its body is not taken.
    const edit = () => writeFileSync(join(dir, "skills/beta/SKILL.md"), skillMd("beta", "Runs beta checks.", "Edited during the build."));
    const edited = await compile(loaded, { cache: BuildCache.open(loaded), afterDiscovery: edit });
    expect(() => bundleTexts(bundleOf(edited))).toThrow("cannot read skills/beta/SKILL.md: it changed during the build; build again");
  });
});

describe("build cache: the racily clean rule", () => {
  it("a file whose ctime is recent gets no signature, however old its mtime (an edit that put the mtime back)", async () => {
    const dir = await project();
    const loaded = await loadConfig(undefined, dir);
    const file = join(dir, "skills/beta/references/guide.md");
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(file, hourAgo, hourAgo); // the mtime an hour back; the ctime now, as utimes sets it
    const stats = lstatSync(file, { bigint: true });
    expect(stats.mtimeNs < stats.ctimeNs - 3_000_000_000n).toBe(true);
    const cache = BuildCache.open(loaded);
    cache.recordFile("skills/beta/references/guide.md", stats, 8, "0".repeat(64));
    cache.nextBuild();
    expect(cache.knownFile("skills/beta/references/guide.md", stats)).toBeUndefined();
  });

  it("a file with both times old enough keeps its signature (the rule's other side)", async () => {
    const dir = await project();
    const loaded = await loadConfig(undefined, dir);
    const file = join(dir, "skills/beta/references/guide.md");
    const stats = { ...lstatSync(file, { bigint: true }), mtimeNs: 1n, ctimeNs: 1n };
    const cache = BuildCache.open(loaded);
    cache.recordFile("skills/beta/references/guide.md", stats, 8, "0".repeat(64));
    cache.nextBuild();
    expect(cache.knownFile("skills/beta/references/guide.md", stats)).toEqual({ size: 8, sha256: "0".repeat(64) });
  });
});

describe("build cache: entries copied from the bundle replaced", () => {
  it("FIFOs in place of the files the last build wrote: not read, nothing hangs", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ location: "relative", agents: { one: { skills: [{ root: "skills" }] }, two: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
      "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks."),
    });
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    await run(dir);
    // A reader that opened one of them without O_NONBLOCK would wait for a writer for ever.
    for (const path of ["index.js", "agents/one.js", "agents/two.js"]) {
      rmSync(join(dir, "dist/skills", path));
      execFileSync("mkfifo", [join(dir, "dist/skills", path)]);
    }
    writeFileSync(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited."));
    const after = await run(dir);
    expect(after.written).toBe(true);
    // beta's entries and body come from the manifest, the one file still as written; the modules make them anew.
    expect(after.agents[0]!.skills.map(bodyRead)).toEqual([true, true]);
    for (const path of ["index.js", "agents/one.js", "agents/two.js"]) {
      expect(lstatSync(join(dir, "dist/skills", path)).isFile()).toBe(true);
      expect(readFileSync(join(dir, "dist/skills", path), "utf8")).toContain("Runs beta checks.");
    }
  });

  it("a `frontmatter` schema's transform edited: each entry shows the fields it outputs now, though no SKILL.md changed", async () => {
    const dir = await tempDir();
    const config = (transform: string) => `import { defineConfig, z } from "skillbake";
export default defineConfig({ location: "relative", frontmatter: z.object({ owner: z.string().transform((owner) => owner.${transform}()) }), agents: { main: { skills: [{ root: "skills" }] } } });
`;
    await writeTree(dir, {
      "skills.config.ts": config("toUpperCase"),
      "skills/alpha/SKILL.md": "---\nname: alpha\ndescription: Drafts alpha reports.\nowner: Platform\n---\n\n# alpha\n",
    });
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const entries = () => readFileSync(join(dir, "dist/skills/manifest.json"), "utf8") + readFileSync(join(dir, "dist/skills/index.js"), "utf8");
    await run(dir);
    expect(entries()).toContain('"owner":"PLATFORM"');
    await writeFile(join(dir, "skills.config.ts"), config("toLowerCase"));
    const after = await run(dir);
    expect(after.written).toBe(true);
    expect(entries()).not.toContain("PLATFORM");
    expect(entries()).toContain('"owner":"platform"');
  });
});

describe("build cache: racily clean files", () => {
  it("a file or folder changed within 2 s of the build's start gets no signature: the next build reads or lists it again", async () => {
    const dir = await project();
    expect((await run(dir)).cache).toMatchObject({ hashed: 4, unchanged: 0, listed: 5, unlisted: 0 });
    expect(fileRecords(dir)).toEqual([]);
    // Were their signatures recorded, this build would take hashes and listings from them: a same-size edit, or a
    // file renamed over another, within the same timestamp (a coarse one: FAT, HFS+, ext3) keeps size, mtime
    // and ctime, and would be missed. (Without the last build's snapshot, which compares such files by contents.)
    rmSync(join(dir, "node_modules/.cache/skillbake/skills.config.json.inputs.json"));
    expect((await run(dir)).cache).toMatchObject({ hashed: 4, unchanged: 0, listed: 5, unlisted: 0 });
  });

  it("a same-size edit in the same second, mtime put back, is built (the CLI, end to end)", async () => {
    const dir = await project();
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    await sameSizeEdit(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts ALPHA reports."));
    const after = await runCli(["build"], { cwd: dir });
    expect(after.stderr).toContain("Wrote dist/skills");
    expect(manifest(dir)).toContain("Drafts ALPHA reports.");
  });

  it("settled files are not read again by the CLI; a skill added afterwards is built", async () => {
    const dir = await project();
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect(fileRecords(dir)).toHaveLength(4);
    expect((await runCli(["build"], { cwd: dir })).stderr).toContain("Bundle is up to date");
    await mkdir(join(dir, "skills/delta"));
    await writeFile(join(dir, "skills/delta/SKILL.md"), skillMd("delta"));
    expect((await runCli(["build"], { cwd: dir })).stderr).toContain("Wrote dist/skills (1 agent, 3 skills)");
  });
});
