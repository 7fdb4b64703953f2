import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { build, buildInSession, BuildSession, check } from "../src/api.js";
import { readCacheFile } from "../src/compile/cache-file.js";
import { BuildCache, settledSignatures, signatureOf } from "../src/compile/cache.js";
import { compile } from "../src/compile/compile.js";
import { loadConfig } from "../src/compile/config.js";
import { rewriteCache, skillMd, tempDir, writeTree } from "./helpers.js";

// What the build cache records, as later builds see it: the statistics each build reports, what the next build (in
// a watch session or not) reuses, whether the cache file is rewritten, and when the last build is kept whole for a
// rebuild where nothing changed (src/compile/snapshot.ts). Time is moved on (`Date.now`) rather than waited for:
// a file changed within 2 s of a build's start gets no record (the racy rule).

const CACHE = "node_modules/.cache/skillbake/skills.config.json.json";
const INPUTS = "node_modules/.cache/skillbake/skills.config.json.inputs.json";
const CONFIG = { location: "relative", agents: { main: { skills: [{ root: "skills" }] } } };

/** Two skills, one with a reference file: four folders (skills, alpha, beta, references) and three files. */
async function project(config: object = CONFIG): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, {
    "skills.config.json": JSON.stringify(config),
    "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
    "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks."),
    "skills/beta/references/guide.md": "# Guide\n",
  });
  return dir;
}

const realNow = Date.now.bind(Date);
/** Builds from now on start 10 s later than they do: every file changed so far (and until then) is settled. */
const settledClock = () => vi.spyOn(Date, "now").mockImplementation(() => realNow() + 10_000);
afterEach(() => vi.restoreAllMocks());

const run = (dir: string) => build({ cwd: dir });
/** A build that compiles, with the build cache, whatever the last build kept: it reads the cache and writes nothing. */
const compiled = (dir: string) => check({ cwd: dir });
/** The build cache as written: its file's inode and its file of changes' (each written anew, under a new inode), if any. */
const cacheInode = (dir: string) => `${statSync(join(dir, CACHE)).ino}:${statSync(join(dir, CACHE.replace(/\.json$/, ".changes.json")), { throwIfNoEntry: false })?.ino ?? "-"}`;
const alpha = (dir: string) => join(dir, "skills/alpha/SKILL.md");

describe("a watch session's builds", () => {
  it("each report their own statistics, and reuse what the build before recorded", async () => {
    const dir = await project();
    settledClock();
    await run(dir);
    await rm(join(dir, INPUTS)); // else the session's first build is the last build, kept whole
    const session = new BuildSession();
    const first = await buildInSession({ cwd: dir }, session);
    expect(first.cache).toEqual({ parsed: 0, reused: 2, hashed: 0, unchanged: 3, listed: 0, unlisted: 4 });
    await writeFile(alpha(dir), skillMd("alpha", "Drafts alpha reports, edited."));
    const edited = await buildInSession({ cwd: dir }, session);
    expect(edited.cache).toEqual({ parsed: 1, reused: 1, hashed: 1, unchanged: 2, listed: 0, unlisted: 4 });
    expect(edited.written).toBe(true);
    const again = await buildInSession({ cwd: dir }, session);
    expect(again.cache).toEqual({ parsed: 0, reused: 2, hashed: 0, unchanged: 3, listed: 0, unlisted: 4 });
    expect(again.written).toBe(false);
  });

  it("take the fingerprint of a bundle after it was written, and only to compare bundles of the same inputs", async () => {
    const dir = await project();
    settledClock();
    await run(dir);
    await rm(join(dir, INPUTS));
    const session = new BuildSession();
    await buildInSession({ cwd: dir }, session);
    await writeFile(alpha(dir), skillMd("alpha", "Drafts alpha reports, edited."));
    expect((await buildInSession({ cwd: dir }, session)).written).toBe(true);
    // Saved without the session's `afterReport`: the cache still holds the bundle's fingerprint, so a build in
    // another process finds the bundle current.
    session.save();
    expect((await run(dir)).written).toBe(false);

    const loaded = await loadConfig(undefined, dir);
    const cache = BuildCache.open(loaded);
    const { inputsHash } = cache.bundle!;
    expect(inputsHash).toMatch(/^[0-9a-f]{64}$/);
    const never = () => expect.unreachable("a fingerprint taken for a bundle of other inputs");
    expect(cache.bundleIsCurrent(join(dir, "dist/skills"), never, "0".repeat(64))).toBe(false);
    expect(cache.bundleIsCurrent(join(dir, "dist/skills"), () => cache.bundle!.fingerprint, inputsHash!)).toBe(true);
  });

  it("keep no record of a file changed just before one of them: the next reads it again", async () => {
    const dir = await project();
    const clock = settledClock();
    await run(dir);
    await rm(join(dir, INPUTS));
    const session = new BuildSession();
    await buildInSession({ cwd: dir }, session);
    clock.mockRestore(); // from here on, builds start when they start
    await writeFile(alpha(dir), skillMd("alpha", "Drafts alpha reports, edited."));
    expect((await buildInSession({ cwd: dir }, session)).cache).toMatchObject({ parsed: 1, hashed: 1, unchanged: 2 });
    // Were the edited file recorded, a same-size edit within its timestamp would keep its signature, and be missed.
    expect((await buildInSession({ cwd: dir }, session)).cache).toMatchObject({ parsed: 0, reused: 2, hashed: 1, unchanged: 2 });
  });

  it("leave the cache file alone when they changed no record, and write what any of them recorded when the session ends", async () => {
    const dir = await project();
    settledClock();
    await run(dir);
    await rm(join(dir, INPUTS));
    const written = cacheInode(dir);
    const unchanged = new BuildSession();
    await buildInSession({ cwd: dir }, unchanged);
    await buildInSession({ cwd: dir }, unchanged);
    unchanged.save();
    expect(cacheInode(dir)).toBe(written);

    // A session on a fresh checkout: its first build records everything, its second nothing new.
    rmSync(join(dir, "node_modules"), { recursive: true });
    const fresh = new BuildSession();
    expect((await buildInSession({ cwd: dir }, fresh)).cache).toMatchObject({ parsed: 2, hashed: 3, listed: 4 });
    expect((await buildInSession({ cwd: dir }, fresh)).cache).toMatchObject({ parsed: 0, hashed: 0, listed: 0 });
    fresh.save();
    expect((await compiled(dir)).cache).toEqual({ parsed: 0, reused: 2, hashed: 0, unchanged: 3, listed: 0, unlisted: 4 });
    // Saved again (a bundler's dev server saves after each build, and when it closes): nothing new to write.
    const saved = cacheInode(dir);
    fresh.save();
    expect(cacheInode(dir)).toBe(saved);
  });

  it("take the listings of a watched session's unchanged folders from memory, and keep those folders' records", async () => {
    const dir = await project();
    const clock = settledClock();
    await run(dir);
    await rm(join(dir, INPUTS));
    clock.mockRestore();
    // A file added to references/ just now: the folder is listed, and too recent to be recorded.
    await writeFile(join(dir, "skills/beta/references/extra.md"), "# Extra\n");
    const session = new BuildSession({ watched: true });
    const first = await buildInSession({ cwd: dir }, session);
    expect(first.cache).toMatchObject({ listed: 1, unlisted: 3 });
    expect(session.missedChanges()).toEqual([]);
    await writeFile(alpha(dir), skillMd("alpha", "Drafts alpha reports, edited."));
    session.noteChanges([alpha(dir)]);
    // Only a file's contents changed: no folder is listed, and the three recorded are counted as taken from the cache.
    const edited = await buildInSession({ cwd: dir }, session);
    expect(edited.cache).toMatchObject({ parsed: 1, hashed: 2, listed: 0, unlisted: 3 }); // alpha, and extra.md (recorded by none)
    expect(edited.written).toBe(true);
    session.save();
    // The next process finds those three folders' records, and lists the one that had none.
    expect((await compiled(dir)).cache).toMatchObject({ listed: 1, unlisted: 3 });
  });
});

describe("a build's records", () => {
  it("a folder added: the folders listed again are recorded (the cache written for them alone), and not listed by the next build", async () => {
    const dir = await project();
    settledClock();
    await run(dir);
    const written = cacheInode(dir);
    await mkdir(join(dir, "skills/empty"));
    const added = await run(dir);
    expect(added).toMatchObject({ written: false, cache: { parsed: 0, hashed: 0, listed: 2, unlisted: 3 } });
    expect(cacheInode(dir)).not.toBe(written);
    expect((await compiled(dir)).cache).toMatchObject({ listed: 0, unlisted: 5 });
  });
});

describe("a build kept whole for a rebuild where nothing changed: only when every read has a record", () => {
  it("a skill whose outcome JSON cannot carry (NaN) is parsed by every build, none answered from the last", async () => {
    const dir = await project();
    await writeFile(alpha(dir), "---\nname: alpha\ndescription: Drafts alpha reports.\nratio: .nan\n---\n\n# alpha\n");
    settledClock();
    expect((await run(dir)).cache).toMatchObject({ parsed: 2, reused: 0 });
    expect((await run(dir)).cache).toMatchObject({ parsed: 1, reused: 1 });
    expect(existsSync(join(dir, INPUTS))).toBe(false);
  });

  it("a folder holding a FIFO is listed by every build", async () => {
    const dir = await project();
    execFileSync("mkfifo", [join(dir, "skills/alpha/pipe")]);
    settledClock();
    await run(dir);
    expect((await run(dir)).cache).toMatchObject({ parsed: 0, reused: 2, listed: 1, unlisted: 3 });
    expect(existsSync(join(dir, INPUTS))).toBe(false);
  });

  it("a file that changed between the walk and its read is in no record (the build that read it cannot tell what it read)", async () => {
    const dir = await project();
    settledClock();
    const loaded = await loadConfig(undefined, dir);
    const control = BuildCache.open(loaded);
    await compile(loaded, { cache: control });
    expect(control.unchangedInputs(dir)).toContain("f\tskills/beta/references/guide.md\t");
    const guide = join(dir, "skills/beta/references/guide.md");
    const swap = () => {
      writeFileSync(`${guide}.new`, "# Guide, replaced\n");
      renameSync(`${guide}.new`, guide); // another file (inode) in its place
    };
    const swapped = BuildCache.open(loaded);
    const result = await compile(loaded, { cache: swapped, afterDiscovery: swap });
    expect(result.diagnostics.map((d) => d.file)).toContain("skills/beta/references/guide.md");
    expect(swapped.unchangedInputs(dir)).toBeUndefined();
  });

  it("a build that read folders and files too recent to sign keeps them by contents; the next, all settled, by signature", async () => {
    const dir = await project();
    const loaded = await loadConfig(undefined, dir);
    const cache = BuildCache.open(loaded);
    await compile(loaded, { cache });
    // Every file written just now: each folder by its sorted entries, each file by its size and sha256.
    const racy = cache.unchangedInputs(dir)!.split("\n");
    expect(racy).toContain("D\tskills\tdalpha/dbeta");
    expect(racy).toContain("D\tskills/beta\tdreferences/fSKILL.md");
    expect(racy).toContain(`h\tskills/beta/references/guide.md\t8:${createHash("sha256").update("# Guide\n").digest("hex")}`);
    expect(racy.filter((line) => /^[df]\t/.test(line))).toEqual([]);
    settledClock();
    cache.nextBuild();
    await compile(loaded, { cache });
    const settled = cache.unchangedInputs(dir)!.split("\n");
    expect(settled).toContain(`f\tskills/alpha/SKILL.md\t${signatureOf(statSync(alpha(dir), { bigint: true }))}`);
    expect(settled.filter((line) => /^[Dh]\t/.test(line))).toEqual([]);
  });

  it("a .gitignore changed after the walk read it (too recent to tell), or gone, leaves nothing to keep", async () => {
    const dir = await project();
    await writeFile(join(dir, "skills/.gitignore"), "drafts/\n");
    settledClock();
    const loaded = await loadConfig(undefined, dir);
    const inputsAfter = async (change: () => void) => {
      const cache = BuildCache.open(loaded);
      await compile(loaded, { cache, afterDiscovery: change });
      return cache.unchangedInputs(dir);
    };
    expect(await inputsAfter(() => {})).toContain("f\tskills/.gitignore\t");
    const ignoreFile = join(dir, "skills/.gitignore");
    const inAnHour = new Date(realNow() + 3_600_000);
    expect(await inputsAfter(() => utimesSync(ignoreFile, inAnHour, inAnHour))).toBeUndefined();
    expect(await inputsAfter(() => rmSync(ignoreFile))).toBeUndefined();
  });

  it("a folder, link or file whose path holds a tab or a line break (the inputs file's separators)", async () => {
    const trees: Record<string, string | { link: string }>[] = [{ "skills/tab\tfolder/empty.txt": "" }, { "skills/beta/line\nlink": { link: "nowhere" } }, { "skills/beta/references/tab\tfile.md": "# Tab\n" }];
    for (const tree of trees) {
      const dir = await project();
      await writeTree(dir, tree);
      if (Object.keys(tree)[0]!.includes("folder")) rmSync(join(dir, "skills/tab\tfolder/empty.txt")); // an empty folder: no file below it
      settledClock();
      expect((await run(dir)).written, Object.keys(tree)[0]).toBe(true);
      expect(existsSync(join(dir, INPUTS)), Object.keys(tree)[0]).toBe(false);
      vi.restoreAllMocks();
    }
  });

  it("a link whose target changes kind (a FIFO, then a file: a link further on retargeted, in a folder no build lists) is walked again", async () => {
    const dir = await project();
    await writeTree(dir, {
      "skills/.gitignore": "drafts/\n",
      "skills/drafts/notes.md": "# Notes\n",
      "skills/alpha/notes.md": { link: "../drafts/current" },
    });
    execFileSync("mkfifo", [join(dir, "skills/drafts/pipe")]);
    symlinkSync("pipe", join(dir, "skills/drafts/current"));
    settledClock();
    const files = (result: { agents: { skills: { name: string; files: { path: string }[] }[] }[] }) => result.agents[0]!.skills.find((skill) => skill.name === "alpha")!.files.map((file) => file.path);
    expect(files(await run(dir))).toEqual(["SKILL.md"]);
    expect((await run(dir)).cache).toMatchObject({ parsed: 0, listed: 0 });
    rmSync(join(dir, "skills/drafts/current"));
    symlinkSync("notes.md", join(dir, "skills/drafts/current"));
    const moved = await run(dir);
    expect(moved.written).toBe(true);
    expect(files(moved)).toEqual(["SKILL.md", "notes.md"]);
  });

  it("a broken link is kept as broken: the next build is answered from the last", async () => {
    const dir = await project();
    symlinkSync("nowhere", join(dir, "skills/beta/broken"));
    settledClock();
    expect((await run(dir)).written).toBe(true);
    expect(existsSync(join(dir, INPUTS))).toBe(true);
    rmSync(join(dir, CACHE)); // a build that compiles would parse every SKILL.md again without it
    expect((await run(dir)).cache).toMatchObject({ parsed: 0, reused: 2, listed: 0 });
  });
});

describe("the bundle recorded", () => {
  it("a record that names no file (a cache file of the wrong shape) finds no bundle current: the build writes it", async () => {
    for (const paths of [{}, null]) {
      const dir = await project();
      await run(dir);
      rmSync(join(dir, "dist"), { recursive: true });
      rewriteCache(join(dir, CACHE), (contents) => (contents.bundle.paths = paths));
      const built = await run(dir);
      expect(built.written, JSON.stringify(paths)).toBe(true);
      expect(existsSync(join(dir, "dist/skills/manifest.json"))).toBe(true);
    }
  });
});

describe("token counts kept for the next build", () => {
  const tokens = (encoding: string, location = "relative") => ({ ...CONFIG, location, tokens: { encoding } });

  it("write the cache only when they changed: another encoding, or other text counted", async () => {
    const dir = await project(tokens("o200k_base"));
    // A warning in each build, so that a strict build fails: it writes no bundle (nor records one), only the cache.
    await writeTree(dir, { "skills/gamma/SKILL.md": skillMd("other-name") });
    settledClock();
    expect((await run(dir)).agents[0]!.tokens?.encoding).toBe("o200k_base");
    rmSync(join(dir, INPUTS));
    let written = cacheInode(dir);
    expect((await run(dir)).written).toBe(false);
    expect(cacheInode(dir)).toBe(written);

    await writeFile(join(dir, "skills.config.json"), JSON.stringify(tokens("cl100k_base")));
    const strict = await build({ cwd: dir, strict: true });
    expect(strict).toMatchObject({ ok: false, written: false, cache: { parsed: 0 } });
    expect(cacheInode(dir)).not.toBe(written);
    written = cacheInode(dir);
    expect((await build({ cwd: dir, strict: true })).ok).toBe(false);
    expect(cacheInode(dir)).toBe(written);

    await writeFile(join(dir, "skills.config.json"), JSON.stringify(tokens("cl100k_base", "absolute")));
    expect((await build({ cwd: dir, strict: true })).ok).toBe(false);
    expect(cacheInode(dir)).not.toBe(written);
  });
});

describe("the racy rule's edges", () => {
  it("a file whose mtime is later than its ctime (set ahead) goes by its mtime: not recorded while that is recent", async () => {
    const dir = await project();
    const inAMinute = new Date(realNow() + 60_000);
    utimesSync(alpha(dir), inAMinute, inAMinute);
    settledClock(); // past the ctime, not past the mtime
    await run(dir);
    expect((await compiled(dir)).cache).toMatchObject({ hashed: 1, unchanged: 2 });
  });

  it("a file changed exactly at the window's edge is not recorded; a nanosecond before it is", async () => {
    const dir = await project();
    const loaded = await loadConfig(undefined, dir);
    const now = 1_800_000_000_000;
    vi.spyOn(Date, "now").mockReturnValue(now);
    const edge = BigInt(now) * 1_000_000n - 2_000_000_000n;
    const recorded = (changed: bigint) => {
      const stats = { ...statSync(alpha(dir), { bigint: true }), mtimeNs: changed, ctimeNs: changed };
      const cache = BuildCache.open(loaded);
      cache.recordFile("skills/alpha/SKILL.md", stats, 1, "0".repeat(64));
      cache.nextBuild();
      return cache.knownFile("skills/alpha/SKILL.md", stats) !== undefined;
    };
    expect(recorded(edge)).toBe(false);
    expect(recorded(edge - 1n)).toBe(true);
  });

  it("a config file whose ctime is recent has no settled signature, however old its mtime", async () => {
    const dir = await tempDir();
    const file = join(dir, "skills.config.json");
    await writeFile(file, "{}");
    const hourAgo = new Date(realNow() - 3_600_000);
    utimesSync(file, hourAgo, hourAgo);
    const stats = statSync(file, { bigint: true });
    expect(settledSignatures([file], stats.ctimeNs + 2_000_000_000n)).toBeUndefined();
    expect(settledSignatures([file], stats.ctimeNs + 2_000_000_001n)).toBe(signatureOf(stats));
  });
});

describe("a cache file that cannot be used", () => {
  it("is replaced even by a build that records nothing", async () => {
    const dir = await project({ agents: { main: { skills: [{ root: "missing" }] } } });
    await mkdir(join(dir, "node_modules/.cache/skillbake"), { recursive: true });
    await writeFile(join(dir, CACHE), "not a cache file\n");
    const failed = await run(dir);
    expect(failed.ok).toBe(false);
    expect(readCacheFile(join(dir, CACHE), 2, BuildCache.keyOf(await loadConfig(undefined, dir)))).toEqual({ skills: {}, folders: {}, files: {} });
  });
});
