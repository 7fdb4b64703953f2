import { existsSync, readFileSync } from "node:fs";
import { mkdir, rename, rm, symlink, truncate, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { build, type BuildResult } from "../src/api.js";
import { writeCacheFile } from "../src/compile/cache-file.js";
import { BuildCache } from "../src/compile/cache.js";
import { compile } from "../src/compile/compile.js";
import { loadConfig } from "../src/compile/config.js";
import type { StatsTaken } from "../src/compile/discover.js";
import { lastBuild } from "../src/compile/snapshot.js";
import { runCli, sameSizeEdit, skillMd, tempDir, writeTree } from "./helpers.js";

// The last build kept for a rebuild where nothing changed (src/compile/snapshot.ts): each test edits what such a
// rebuild could miss, and checks that the bundle shows it.

const CACHE = "node_modules/.cache/skillbake/skills.config.json";
const INPUTS = `${CACHE}.inputs.json`;
const MAIN_CACHE = `${CACHE}.json`;
/** Longer than the cache's racy window: files older than this get a signature. */
const SETTLE_MS = 2100;

const CONFIG = { location: "relative", agents: { main: { skills: [{ root: "skills" }] } } };

/** Two skills, one with a reference file, a .gitignore at the root; and a file outside the root. */
async function project(config: object = CONFIG): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, {
    "skills.config.json": JSON.stringify(config),
    "skills/.gitignore": "drafts/\n",
    "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
    "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks."),
    "skills/beta/references/guide.md": "# Guide\n",
    "outside/SKILL.md": skillMd("alpha", "outside-the-roots"),
  });
  return dir;
}

const run = (dir: string) => build({ cwd: dir });
const manifest = (dir: string) => readFileSync(join(dir, "dist/skills/manifest.json"), "utf8");
const skillNames = (dir: string) => (JSON.parse(manifest(dir)) as { skills: { name: string }[] }).skills.map((skill) => skill.name);
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
/** The inputs file's lines, each its kind and path. */
const inputLines = (dir: string) => (JSON.parse(readFileSync(join(dir, INPUTS), "utf8").split("\n")[1]!) as { inputs: string }).inputs.split("\n").map((line) => line.split("\t").slice(0, 2).join("\t"));

/**
 * `path`, compared by its contents while its times were too recent, is signed by its stats (`line`) once they are
 * settled: a rebuild with nothing changed, after which no line of the inputs file is compared by contents.
 */
async function expectSignedOnceSettled(dir: string, path: string, line: string): Promise<void> {
  const earlier = new Date(Date.now() - 10_000);
  await utimes(path, earlier, earlier);
  await settle();
  expect((await run(dir)).written).toBe(false);
  expect(inputLines(dir)).toContain(line);
  expect(inputLines(dir).filter((input) => /^[Dh]\t/.test(input))).toEqual([]);
}

describe("a rebuild where nothing changed", () => {
  // Projects made up front and left to settle once, then built: each build keeps its compilation.
  const settled: string[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 13; i++) settled.push(await project());
    await settle();
    for (const dir of settled) expect((await run(dir)).written).toBe(true);
  }, 60_000);

  it("answers with the last compilation, reading no SKILL.md and not the build cache; its bodies are read on demand", async () => {
    const dir = settled[0]!;
    expect(existsSync(join(dir, INPUTS))).toBe(true);
    await rm(join(dir, INPUTS));
    const full = await run(dir); // compiled, with the build cache, and kept again
    expect(existsSync(join(dir, INPUTS))).toBe(true);
    await rm(join(dir, MAIN_CACHE)); // the compiling path would parse every SKILL.md again without it
    const again = await run(dir);
    expect(again.written).toBe(false);
    expect(again.cache).toEqual({ parsed: 0, reused: 2, hashed: 0, unchanged: 3, listed: 0, unlisted: 4 });
    expect(full.cache).toEqual(again.cache);
    expect(JSON.stringify(again.agents)).toBe(JSON.stringify(full.agents));
    expect(again.diagnostics).toEqual(full.diagnostics);
    expect(again.agents[0]!.skills.map((skill) => skill.body)).toEqual(["# alpha\n\nSteps for alpha.", "# beta\n\nSteps for beta."]);
  });

  it("a same-size SKILL.md edit with its mtime put back (the CLI, end to end)", async () => {
    const dir = settled[1]!;
    // The CLI is a build of its own (its version names it), so it keeps caches of its own: its first build replaces
    // the ones this process wrote (and the bundle), and its second answers from its snapshot.
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect(existsSync(join(dir, INPUTS))).toBe(true);
    expect((await runCli(["build"], { cwd: dir })).stderr).toContain("Bundle is up to date");
    await sameSizeEdit(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts ALPHA reports."));
    const after = await runCli(["build"], { cwd: dir });
    expect(after.stderr).toContain("Wrote dist/skills");
    expect(manifest(dir)).toContain("Drafts ALPHA reports.");
  });

  it("a .gitignore edited to hide a skill", async () => {
    const dir = settled[2]!;
    await writeFile(join(dir, "skills/.gitignore"), "drafts/\nbeta/\n");
    expect((await run(dir)).written).toBe(true);
    expect(skillNames(dir)).toEqual(["alpha"]);
  });

  it("a resource file edited in place: its new sha256 is in the manifest", async () => {
    const dir = settled[3]!;
    const before = manifest(dir);
    await writeFile(join(dir, "skills/beta/references/guide.md"), "# Guide, edited\n");
    expect((await run(dir)).written).toBe(true);
    expect(manifest(dir)).not.toBe(before);
    expect(manifest(dir)).not.toContain(JSON.parse(before).skills[1].files[1].sha256);
  });

  it("a skill folder renamed, and one added", async () => {
    const dir = settled[4]!;
    await rename(join(dir, "skills/beta"), join(dir, "skills/gamma"));
    await mkdir(join(dir, "skills/delta"));
    await writeFile(join(dir, "skills/delta/SKILL.md"), skillMd("delta"));
    const after = await run(dir);
    expect(after.written).toBe(true);
    expect(after.diagnostics.map((diagnostic) => diagnostic.code)).toContain("name-mismatch");
    expect(skillNames(dir)).toEqual(["alpha", "delta", "beta"]); // path order: gamma/ holds beta
  });

  it("a file replaced by a link out of the root: symlink-escape, the target never read", async () => {
    const dir = settled[5]!;
    await rm(join(dir, "skills/alpha/SKILL.md"));
    await symlink(join(dir, "outside/SKILL.md"), join(dir, "skills/alpha/SKILL.md"));
    const after = await run(dir);
    expect(after.diagnostics.map((diagnostic) => diagnostic.code)).toContain("symlink-escape");
    expect(manifest(dir)).not.toContain("outside-the-roots");
  });

  it("the environment's budget set", async () => {
    const dir = settled[6]!;
    process.env.SKILLS_PROMPT_CHAR_BUDGET = "300";
    try {
      const after = await run(dir);
      expect(after.written).toBe(true);
      expect(after.agents[0]!.budget).toMatchObject({ limit: 300, unit: "characters" });
      // Another budget than the last build's: set both times, so the key tells the two numbers apart, not set from unset.
      process.env.SKILLS_PROMPT_CHAR_BUDGET = "400";
      const other = await run(dir);
      expect(other.written).toBe(true);
      expect(other.agents[0]!.budget).toMatchObject({ limit: 400, unit: "characters" });
    } finally {
      delete process.env.SKILLS_PROMPT_CHAR_BUDGET;
    }
  });

  it("the config edited, and the bundle's own files tampered with", async () => {
    const dir = settled[7]!;
    await writeFile(join(dir, "skills.config.json"), JSON.stringify({ ...CONFIG, location: "absolute" }));
    expect((await run(dir)).written).toBe(true);
    expect(manifest(dir)).toContain(join(dir, "skills/alpha/SKILL.md"));
    await writeFile(join(dir, "dist/skills/prompts/main.txt"), "tampered");
    expect((await run(dir)).written).toBe(true);
    expect(readFileSync(join(dir, "dist/skills/prompts/main.txt"), "utf8")).toContain("<available_skills>");
  });

  it("another outDir (`--out`) is built, not answered from the last build's", async () => {
    const dir = settled[8]!;
    const other = await build({ cwd: dir, outDir: "elsewhere" });
    expect(other.written).toBe(true);
    expect(existsSync(join(dir, "elsewhere/manifest.json"))).toBe(true);
  });

  it("a build right after an edit keeps the edited file by its sha256 (racily clean), signed once it is settled", async () => {
    const dir = settled[9]!;
    const alpha = join(dir, "skills/alpha/SKILL.md");
    await writeFile(alpha, skillMd("alpha", "Drafts alpha reports, edited."));
    expect((await run(dir)).written).toBe(true);
    expect(inputLines(dir)).toContain("h\tskills/alpha/SKILL.md");
    // Answered at once, the file read and hashed again (its times changed: its contents tell), and left unsigned while
    // its times are too recent (an hour ahead here).
    const inAnHour = new Date(Date.now() + 3_600_000);
    await utimes(alpha, inAnHour, inAnHour);
    const again = await run(dir);
    expect([again.written, again.agents[0]!.skills[0]!.description]).toEqual([false, "Drafts alpha reports, edited."]);
    expect(inputLines(dir)).toContain("h\tskills/alpha/SKILL.md");
    // A same-size edit with its mtime put back is seen.
    await sameSizeEdit(alpha, skillMd("alpha", "Drafts ALPHA reports, edited."));
    expect((await run(dir)).written).toBe(true);
    expect(manifest(dir)).toContain("Drafts ALPHA reports, edited.");
    // Settled, it is signed by its stats: the rebuild after that stats it rather than reading it.
    await expectSignedOnceSettled(dir, alpha, "f\tskills/alpha/SKILL.md");
    expect((await run(dir)).written).toBe(false);
  }, 10_000);

  it("links: kept, and a link that leads somewhere new (a broken link whose target appears) is walked again", async () => {
    const dir = settled[10]!;
    // A link into a folder no build lists (git-ignored: `drafts/`): only where the link leads can tell that it changed.
    await mkdir(join(dir, "skills/drafts"));
    await symlink("drafts/epsilon", join(dir, "skills/linked"));
    await symlink("alpha", join(dir, "skills/also-alpha"));
    await settle();
    expect((await run(dir)).cache.listed).toBeGreaterThan(0); // the root's folder changed: walked again
    expect(existsSync(join(dir, INPUTS))).toBe(true);
    expect((await run(dir)).cache).toMatchObject({ parsed: 0, listed: 0 });

    await writeTree(dir, { "skills/drafts/epsilon/SKILL.md": skillMd("epsilon") });
    expect((await run(dir)).written).toBe(true);
    expect(skillNames(dir)).toEqual(["alpha", "beta", "epsilon"]);
  }, 10_000);

  it("a check that finds a change hands the stats it takes after it to the walk: what changes after them is in the next build", async () => {
    const dir = settled[11]!;
    const loaded = await loadConfig(undefined, dir);
    const outDir = join(dir, "dist/skills");
    // Alpha's SKILL.md is the first file the check stats after the folders and the .gitignore; beta's SKILL.md and guide come after it.
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited."));
    const taken: StatsTaken = { folders: new Map(), files: new Map() };
    expect(lastBuild(loaded, outDir, taken)).toHaveProperty("listings"); // only a skill's file changed
    expect([...taken.files.keys()].map((file) => file.slice(dir.length + 1)).sort()).toEqual(["skills/beta/SKILL.md", "skills/beta/references/guide.md"]);
    // After those stats: beta edited (same size).
    await writeFile(join(dir, "skills/beta/SKILL.md"), skillMd("beta", "Runs BETA checks."));
    const during = await compile(loaded, { cache: BuildCache.open(loaded), statsTaken: taken });
    // This build is of the tree as stat'ed: alpha as the check found it, beta as it was.
    expect(during.agents[0]!.skills.map((skill) => [skill.name, skill.description])).toEqual([["alpha", "Drafts alpha reports, edited."], ["beta", "Runs beta checks."]]);
    expect([taken.folders.size, taken.files.size]).toEqual([0, 0]); // each stat used once
    // The next build sees the edit.
    expect((await run(dir)).written).toBe(true);
    expect(manifest(dir)).toContain("Runs BETA checks.");
  });

  it("a check keeps nothing it stat'ed before the first change (nor anything, when nothing changed)", async () => {
    const dir = settled[12]!;
    const loaded = await loadConfig(undefined, dir);
    const taken: StatsTaken = { folders: new Map(), files: new Map() };
    expect(lastBuild(loaded, join(dir, "dist/skills"), taken)).toBeDefined();
    expect([taken.folders.size, taken.files.size]).toEqual([0, 0]);
    // The guide is the last file the check stats: every folder and file was stat'ed before it.
    await writeFile(join(dir, "skills/beta/references/guide.md"), "# Guide, edited\n");
    expect(lastBuild(loaded, join(dir, "dist/skills"), taken)).toHaveProperty("listings");
    expect([taken.folders.size, taken.files.size]).toEqual([0, 0]);
  });
});

/**
 * A project built settled, then built again right after a skill was added: the root's folder and the new skill's
 * are compared by their entries (too recent to sign), as the inputs file says.
 */
async function builtRightAfterASkillWasAdded(): Promise<string> {
  const dir = await project();
  await settle();
  expect((await run(dir)).written).toBe(true);
  await writeTree(dir, { "skills/gamma/SKILL.md": skillMd("gamma", "Runs gamma checks.") });
  expect((await run(dir)).written).toBe(true);
  expect(inputLines(dir)).toEqual(expect.arrayContaining(["D\tskills", "D\tskills/gamma"]));
  return dir;
}

/** Plants a finding in the listings file: a build that goes by the file reports it, one that walks does not (`planted`). */
function plantFinding(dir: string): void {
  const file = join(dir, `${CACHE}.listings.json`);
  const [header, payload] = readFileSync(file, "utf8").split("\n") as [string, string];
  const { format, key } = JSON.parse(header) as { format: number; key: string };
  const listings = JSON.parse(payload) as { findings: object[] }[];
  listings[0]!.findings.push({ code: "name-mismatch", file: "skills/planted", message: "planted in the listings file" });
  writeCacheFile(file, format, key, listings);
}

const planted = (result: BuildResult) => result.diagnostics.some((diagnostic) => diagnostic.message === "planted in the listings file");

describe("a rebuild after a skill's files were edited", () => {
  it("goes by the last build's listings instead of walking while only skill files' contents changed; walks once a folder changed", async () => {
    const dir = await project();
    await settle();
    expect((await run(dir)).written).toBe(true);
    plantFinding(dir);

    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited."));
    await writeFile(join(dir, "skills/beta/references/guide.md"), "# Guide, edited\n");
    const edited = await run(dir);
    expect([edited.written, planted(edited)]).toEqual([true, true]);
    expect(manifest(dir)).toContain("Drafts alpha reports, edited.");
    expect(edited.agents[0]!.skills.find((skill) => skill.name === "beta")!.files.find((guide) => guide.path === "references/guide.md")!.size).toBe(16);

    // That build kept the listings it went by (the planted finding with them) for the next edit's build.
    await writeFile(join(dir, "skills/beta/SKILL.md"), skillMd("beta", "Runs beta checks, edited."));
    expect(planted(await run(dir))).toBe(true);
    await writeTree(dir, { "skills/gamma/SKILL.md": skillMd("gamma") });
    const walked = await run(dir);
    expect([planted(walked), skillNames(dir)]).toEqual([false, ["alpha", "beta", "gamma"]]);
  }, 15_000);

  it("does not go by listings whose folders the last build compared by their entries (listed too recently to sign), settled since", async () => {
    const dir = await builtRightAfterASkillWasAdded();
    plantFinding(dir);
    await settle();
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited."));
    const edited = await run(dir);
    expect([edited.written, planted(edited)]).toEqual([true, false]);
    expect(manifest(dir)).toContain("Drafts alpha reports, edited.");
  }, 15_000);
});

describe("a rebuild after a skill's file grew past the skill folder's byte limit", () => {
  it("walks, and leaves out the files a walk leaves out (the listings kept them all)", async () => {
    const dir = await project();
    // A sparse file: its size costs no disk.
    const padding = join(dir, "skills/beta/padding.bin");
    await writeFile(padding, "");
    await truncate(padding, 60 * 2 ** 20);
    await settle();
    expect((await run(dir)).written).toBe(true);
    await truncate(padding, 70 * 2 ** 20);
    const grown = await run(dir);
    expect(grown.diagnostics.map((diagnostic) => diagnostic.code)).toEqual(["skill-files-too-large"]);
    expect(grown.agents[0]!.skills.find((skill) => skill.name === "beta")!.files.map((file) => file.path)).not.toContain("padding.bin");
  }, 20_000);
});

describe("a rebuild where nothing changed, right after a folder changed", () => {
  it("keeps the folder by its entries while it is too recent to sign (an mtime an hour ahead), then signs it", async () => {
    const dir = await builtRightAfterASkillWasAdded();
    expect(inputLines(dir)).toContain("h\tskills/gamma/SKILL.md");
    const root = join(dir, "skills");
    const inAnHour = new Date(Date.now() + 3_600_000);
    await utimes(root, inAnHour, inAnHour);
    expect((await run(dir)).written).toBe(false); // the same entries
    expect(inputLines(dir)).toContain("D\tskills");
    await expectSignedOnceSettled(dir, root, "d\tskills");
  }, 15_000);
});

describe("a rebuild where nothing changed, roots", () => {
  it("an optional root that was missing and is there now is walked", async () => {
    const dir = await project({ agents: { main: { skills: [{ root: "skills" }, { root: "later", optional: true }] } } });
    await settle();
    expect((await run(dir)).diagnostics).toEqual([]);
    expect(existsSync(join(dir, INPUTS))).toBe(true);
    await mkdir(join(dir, "later/zeta"), { recursive: true });
    await writeFile(join(dir, "later/zeta/SKILL.md"), skillMd("zeta"));
    expect((await run(dir)).written).toBe(true);
    expect(skillNames(dir)).toEqual(["zeta", "alpha", "beta"]); // path order: later/ before skills/
  }, 10_000);

  it("the config's own folder as a root, with folders named __proto__ and constructor: a skill added in either is built", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ outDir: "out", agents: { main: { skills: [{ root: "." }] } } }),
      "__proto__/x/SKILL.md": skillMd("x"),
      "constructor/y/SKILL.md": skillMd("y"),
    });
    const names = () => (JSON.parse(readFileSync(join(dir, "out/manifest.json"), "utf8")) as { skills: { name: string }[] }).skills.map((skill) => skill.name);
    await settle();
    expect((await run(dir)).written).toBe(true);
    expect((await run(dir)).written).toBe(false);
    // The records of a folder whose path is `__proto__` were assigned to a plain object, which made them its
    // prototype: never saved, so the inputs file did not sign the folder, and this rebuild said "up to date".
    for (const [folder, name] of [["__proto__", "z"], ["constructor", "w"]] as const) {
      await mkdir(join(dir, folder, name));
      await writeFile(join(dir, folder, name, "SKILL.md"), skillMd(name));
      await settle();
      expect((await run(dir)).written).toBe(true);
      expect(names()).toContain(name);
    }
  }, 20_000);

  it("a root outside the config's folder (`../shared`) is compared as any other: nothing changed, nothing parsed", async () => {
    const dir = await project();
    await writeTree(dir, {
      "app/skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "../skills" }, { root: "../outside-root" }] } } }),
      "outside-root/gamma/SKILL.md": skillMd("gamma"),
    });
    const app = join(dir, "app");
    await settle();
    expect((await build({ cwd: app })).written).toBe(true);
    await rm(join(app, MAIN_CACHE)); // the compiling path would parse every SKILL.md again without it
    const again = await build({ cwd: app });
    expect(again.written).toBe(false);
    expect(again.cache).toMatchObject({ parsed: 0, reused: 3 });
    expect(again.agents[0]!.skills.map((skill) => skill.body)).toEqual(["# alpha\n\nSteps for alpha.", "# beta\n\nSteps for beta.", "# gamma\n\nSteps for gamma."]);
  }, 10_000);
});

describe("configs a rebuild cannot compare keep nothing", () => {
  it("a path with a tab or a line break (the inputs file's separators)", async () => {
    const dir = await project();
    await writeTree(dir, { "skills/tab\tname/SKILL.md": skillMd("tab-name") });
    await settle();
    expect((await run(dir)).written).toBe(true);
    expect(existsSync(join(dir, INPUTS))).toBe(false);
  }, 10_000);


  it("context globs (they can match new files anywhere)", async () => {
    const dir = await project({ agents: { main: { skills: [{ root: "skills" }], context: ["*.md"] } } });
    await writeFile(join(dir, "AGENTS.md"), "# Team rules\n");
    await settle();
    expect((await run(dir)).written).toBe(true);
    expect(existsSync(join(dir, INPUTS))).toBe(false);
  }, 10_000);

  it("a format function (what code does cannot be compared)", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.mjs": "export default { format: (agent) => agent.skills.map((skill) => skill.name).join(','), agents: { main: { skills: [{ root: 'skills' }] } } };\n",
      "skills/alpha/SKILL.md": skillMd("alpha"),
    });
    await settle();
    expect((await run(dir)).written).toBe(true);
    expect(existsSync(join(dir, "node_modules/.cache/skillbake/skills.config.mjs.inputs.json"))).toBe(false);
    expect(readFileSync(join(dir, "dist/skills/prompts/main.txt"), "utf8")).toBe("alpha");
  }, 10_000);
});
