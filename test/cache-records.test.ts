import { rmSync, statSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { build, buildInSession, BuildSession, check } from "../src/api.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

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
/** The cache file's inode: a rewrite replaces it (by a rename), so a new inode. */
const cacheInode = (dir: string) => statSync(join(dir, CACHE)).ino;
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
