import { readdirSync, readFileSync } from "node:fs";
import { mkdir, readFile, readlink, rename, rm, symlink, unlink, utimes, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import fc from "fast-check";
import { afterEach, describe, expect, it, vi } from "vitest";
import { build, BuildSession, buildInSession, check, type BuildResult } from "../src/api.js";
import { bundledSkills, bundleOf, bundleTexts } from "../src/bundle/bundle.js";
import { devModules } from "../src/bundle/module.js";
import { compile } from "../src/compile/compile.js";
import { loadConfig } from "../src/compile/config.js";
import { VirtualSkills } from "../src/plugins/virtual-modules.js";
import { sameSizeEdit, skillMd, tempDir, writeTree } from "./helpers.js";

setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc") as () => void;

/**
 * Whether `ref`'s target is collected once nothing holds it. A WeakRef holds its target until the task that made
 * it ends, and a collection may leave what a pending task holds: up to ten collections, a task apart.
 */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let tries = 0; tries < 10 && ref.deref() !== undefined; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    collectGarbage();
  }
  return ref.deref() === undefined;
}

/**
 * Differential tests of every cache a build goes by (the build cache's records, the rebuild where nothing changed,
 * the bundle copied from, a watching session's discovery, a dev server's record modules): random sequences of edits, each followed by a build
 * through the caches, whose bundle (or a dev server's modules) must be byte for byte what a compilation without any
 * cache makes.
 */

/** One edit; `pick` chooses among what is there when it is made, so a sequence applies to any state. */
type Edit =
  | { kind: "body" | "description" | "undescribed" | "break" | "resource" | "remove" | "rename" | "link-file"; pick: number; sameSize: boolean }
  | { kind: "add"; pick: number; withResource: boolean }
  | { kind: "bundle"; pick: number }
  | { kind: "link-folder" | "link-root" | "gitignore" | "config" | "parse-setting" | "environment" | "ci" | "cache-lost" | "changes-lost" | "nothing" };

// Edits of contents (what a rebuild sees most) are drawn three times as often as the others.
const edit: fc.Arbitrary<Edit> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constantFrom("body", "description", "undescribed", "resource", "link-file"), pick: fc.nat(), sameSize: fc.boolean() }), weight: 3 },
  fc.record({ kind: fc.constantFrom("break", "remove", "rename"), pick: fc.nat(), sameSize: fc.boolean() }),
  fc.record({ kind: fc.constant("add"), pick: fc.nat(), withResource: fc.boolean() }),
  fc.record({ kind: fc.constant("bundle"), pick: fc.nat() }),
  fc.record({ kind: fc.constantFrom("link-folder", "link-root", "gitignore", "config", "parse-setting", "environment", "ci", "cache-lost", "changes-lost", "nothing") }),
) as fc.Arbitrary<Edit>;

/**
 * A TypeScript config (transpiled, and its output cached) that imports its `location` from one file and its
 * `descriptionFallback` (a parse setting: the same SKILL.md bytes give another description) from another.
 */
// `linked` reaches some skills through two sources: a root, and a link into it (re-pointed by `link-root`).
const CONFIG = `import { location } from "./location.ts";\nimport { descriptionFallback } from "./parsing.ts";\n\nexport default { location, descriptionFallback, agents: { main: { skills: [{ root: "skills" }] }, other: { skills: [{ root: "more" }, { root: "skills" }] }, linked: { skills: [{ root: "skills" }, { root: "alias", optional: true, inline: ["beta"] }] } } };\n`;
const LOCATION = (location: "relative" | "absolute") => `export const location = "${location}";\n`;
const PARSING = (fallback: boolean) => `export const descriptionFallback = ${fallback ? '"first-paragraph"' : "undefined"};\n`;

async function project(): Promise<string> {
  const dir = await tempDir("skillbake-differential-");
  await writeTree(dir, {
    "skills.config.ts": CONFIG,
    "location.ts": LOCATION("relative"),
    "parsing.ts": PARSING(false),
    "skills/area/alpha/SKILL.md": skillMd("alpha"),
    "skills/area/beta/SKILL.md": skillMd("beta"),
    "skills/area/beta/references/guide.md": "# Guide\n",
    "skills/gamma/SKILL.md": skillMd("gamma"),
    "more/delta/SKILL.md": skillMd("delta"),
    "mirror/alpha/SKILL.md": skillMd("alpha"),
  });
  await symlink(join("skills", "area"), join(dir, "alias"));
  return dir;
}

/** Skill folders there now (relative to the project), in path order. */
function skillFolders(dir: string): string[] {
  const found: string[] = [];
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(dir, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = `${rel}/${entry.name}`;
      if (entry.name === "SKILL.md" && entry.isFile()) found.push(rel);
      else if (entry.isDirectory()) walk(path);
    }
  };
  for (const root of ["skills", "more"]) walk(root);
  return found;
}

let counter = 0;

/**
 * Makes `edit` in the project; returns the paths a watcher of each folder the walk lists would report: a file
 * under the folder `alias` links to is also seen through the link, the second source's root.
 */
async function apply(dir: string, edit: Edit): Promise<string[]> {
  const paths = await applyEdit(dir, edit);
  const target = await readlink(join(dir, "alias")).catch(() => undefined);
  if (target === undefined) return paths;
  const through = paths.flatMap((path) => {
    const inside = relative(join(dir, target), path);
    return inside === "" || inside.startsWith("..") ? [] : [join(dir, "alias", inside)];
  });
  return [...paths, ...through];
}

async function applyEdit(dir: string, edit: Edit): Promise<string[]> {
  const folders = skillFolders(dir);
  const folder = "pick" in edit && folders.length > 0 ? folders[edit.pick % folders.length]! : undefined;
  const at = (rel: string) => join(dir, rel);
  switch (edit.kind) {
    case "body":
    case "description":
    case "undescribed":
    case "break": {
      if (!folder) return [];
      const file = at(`${folder}/SKILL.md`);
      const text = await readFile(file, "utf8");
      // Same size: one letter's case swapped (its mtime put back), which only the ctime tells.
      const swapped = text.replace(/([a-z])(?=[^\n]*\n*$)/, (letter) => letter.toUpperCase());
      if (edit.kind === "body" && edit.sameSize && swapped !== text) await sameSizeEdit(file, swapped);
      else if (edit.kind === "body") await writeFile(file, `${text}More steps ${counter++}.\n`);
      else if (edit.kind === "description") await writeFile(file, text.replace(/^description: .*$/m, `description: Edited ${counter++} times. Use when needed.`));
      // No description: an error, or the body's first paragraph under descriptionFallback.
      else if (edit.kind === "undescribed") await writeFile(file, text.replace(/^description: .*\n/m, ""));
      else await writeFile(file, text.replace(/^description: .*$/m, "description: [broken"));
      return [file];
    }
    case "resource": {
      if (!folder) return [];
      const file = at(`${folder}/references/notes.md`);
      const existing = await readFile(file, "utf8").catch(() => undefined);
      if (existing === undefined) {
        const created = await mkdir(dirname(file), { recursive: true });
        await writeFile(file, "notes 0\n");
        return [created ?? file];
      }
      if (edit.sameSize) await sameSizeEdit(file, existing === "notes 0\n" ? "notes 1\n" : "notes 0\n");
      else await unlink(file);
      return [file];
    }
    case "remove":
      if (!folder) return [];
      await rm(at(folder), { recursive: true });
      return [at(folder)];
    case "rename": {
      if (!folder) return [];
      const renamed = `${folder}-${counter++}`;
      await rename(at(folder), at(renamed));
      return [at(folder), at(renamed)];
    }
    case "link-file": {
      // A resource file that is a link to another skill's SKILL.md (inside the root), made or removed.
      if (!folder) return [];
      const file = at(`${folder}/references/linked.md`);
      if (await unlink(file).then(() => true, () => false)) return [file];
      const created = await mkdir(dirname(file), { recursive: true });
      await symlink(relative(dirname(file), at(`${folders[(edit.pick + 1) % folders.length]}/SKILL.md`)), file);
      return [created ?? file];
    }
    case "add": {
      const parent = ["skills/area", "skills", "more"][edit.pick % 3]!;
      const name = `new-${counter++}`;
      const created = await mkdir(at(parent), { recursive: true });
      await writeTree(dir, { [`${parent}/${name}/SKILL.md`]: skillMd(name), ...(edit.withResource ? { [`${parent}/${name}/scripts/run.sh`]: "echo run\n" } : {}) });
      return [created ?? at(`${parent}/${name}`)];
    }
    case "bundle": {
      // A file of the bundle edited in place, the same size, its mtime put back: the next build may neither copy
      // from it nor, in a session, go by the hash states it kept of it (src/bundle/prefix-hash.ts).
      const file = at(`dist/skills/${["index.js", "manifest.json"][edit.pick % 2]}`);
      const text = await readFile(file, "utf8").catch(() => undefined);
      const swapped = text?.replace(/([a-z])(?=[^a-z]*$)/, (letter) => letter.toUpperCase());
      if (text !== undefined && swapped !== text) await sameSizeEdit(file, swapped!);
      return []; // a watcher leaves the outDir out
    }
    case "link-folder": {
      const link = at("skills/linked");
      if (await unlink(link).then(() => true, () => false)) return [link];
      if (folders.includes("skills/gamma")) await symlink("gamma", link);
      else await symlink("area", link);
      return [link];
    }
    case "link-root": {
      // The second source's root: a link to a folder of the first (the same files twice), to a copy, or gone.
      const link = at("alias");
      const target = await readlink(link).catch(() => undefined);
      await unlink(link).catch(() => {});
      if (target === undefined) await symlink(join("skills", "area"), link);
      else if (target === join("skills", "area")) await symlink("mirror", link);
      return [link];
    }
    case "gitignore": {
      const file = at("skills/.gitignore");
      const rules = await readFile(file, "utf8").catch(() => undefined);
      if (rules === undefined) await writeFile(file, "beta/\n");
      else if (rules === "beta/\n") await writeFile(file, "new-*/\n");
      else await unlink(file);
      return [file];
    }
    case "config": {
      // The same size, its mtime put back: what the transpiled config's cache tells by the file's digest.
      const file = at("location.ts");
      await sameSizeEdit(file, LOCATION((await readFile(file, "utf8")).includes('"relative"') ? "absolute" : "relative"));
      return [file];
    }
    case "parse-setting": {
      const file = at("parsing.ts");
      await writeFile(file, PARSING((await readFile(file, "utf8")).includes("undefined")));
      return [file];
    }
    case "environment":
      if (process.env.SKILLS_PROMPT_CHAR_BUDGET === undefined) process.env.SKILLS_PROMPT_CHAR_BUDGET = "400";
      else delete process.env.SKILLS_PROMPT_CHAR_BUDGET;
      return [];
    case "ci": // in CI a build writes a cache only where it found one
      process.env.CI = process.env.CI === "true" ? "" : "true";
      return [];
    case "cache-lost": // a fresh checkout
      await rm(join(dir, "node_modules"), { recursive: true, force: true });
      return [];
    case "changes-lost": // the build cache's file of changes: the cache file alone is an earlier build's cache
      await rm(join(dir, "node_modules/.cache/skillbake/skills.config.ts.changes.json"), { force: true });
      return [];
    case "nothing":
      return [];
  }
}

/** Every file under `dir`, by path relative to it. */
function filesUnder(dir: string, prefix = ""): Map<string, string> {
  const files = new Map<string, string>();
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) for (const [inner, text] of filesUnder(dir, path)) files.set(inner, text);
    else files.set(path, readFileSync(join(dir, path), "utf8"));
  }
  return files;
}

/** The build's outcome matches a compilation without any cache: its diagnostics, and the bundle on disk byte for byte. */
async function expectClean(dir: string, result: BuildResult): Promise<void> {
  const clean = await compile(await loadConfig(undefined, dir));
  expect(result.diagnostics).toEqual(clean.diagnostics);
  if (clean.diagnostics.some((diagnostic) => diagnostic.severity === "error")) {
    expect(result.ok).toBe(false);
    return;
  }
  expect(filesUnder(join(dir, "dist/skills"))).toEqual(bundleTexts(bundleOf(clean)));
}

/** The dev modules a compilation without any cache makes, by virtual id; undefined when it has an error. */
async function cleanDevModules(dir: string): Promise<Map<string, string> | undefined> {
  const clean = await compile(await loadConfig(undefined, dir));
  if (clean.diagnostics.some((diagnostic) => diagnostic.severity === "error")) return undefined;
  const modules = devModules(clean, bundledSkills(clean), (records) => `virtual:skills/~records/${records}`);
  const idOf = (path: string) => (path === "index.js" ? "virtual:skills" : path.startsWith("records/") ? `virtual:skills/~${path}` : `virtual:skills/${path.slice("agents/".length, -".js".length)}`);
  return new Map([...modules].map(([path, module]) => [idOf(path), module.text]));
}

/** Every module a dev server's `VirtualSkills` serves, by virtual id (its record modules found by number). */
function servedModules(virtual: VirtualSkills): Map<string, string> {
  const ids = [...virtual.ids(), ...Array.from({ length: 64 }, (_, records) => `virtual:skills/~records/${records}`)];
  return new Map(ids.flatMap((id) => (virtual.module(id) === undefined ? [] : [[id, virtual.module(id)!] as const])));
}

type State = { session?: BuildSession; virtual?: VirtualSkills };

/**
 * Runs random edit sequences, each step built and checked by `step`. Each build after an edit runs at a clock moved
 * 10 s ahead (every file past the racy window: the caches are used as after a pause) or at the real time (what the
 * test just wrote is racily clean: signed by its contents, or not at all). A build is followed by a pause longer
 * than a timestamp tick, so the next edit cannot share its times with what the build recorded.
 */
async function differential(step: (dir: string, reported: string[], state: State) => Promise<void>, edits = edit): Promise<void> {
  const now = Date.now.bind(Date);
  let ahead = 10_000;
  vi.spyOn(Date, "now").mockImplementation(() => now() + ahead);
  await fc.assert(
    fc.asyncProperty(fc.array(fc.record({ change: edits, settled: fc.boolean() }), { minLength: 1, maxLength: 10 }), async (steps) => {
      const dir = await project();
      const state: State = {};
      delete process.env.SKILLS_PROMPT_CHAR_BUDGET;
      process.env.CI = "";
      ahead = 10_000;
      await step(dir, [], state);
      for (const { change, settled } of steps) {
        const reported = await apply(dir, change);
        ahead = settled ? 10_000 : 0;
        await new Promise((resolve) => setTimeout(resolve, 15));
        await step(dir, reported, state);
        await new Promise((resolve) => setTimeout(resolve, 15));
      }
    }),
    { numRuns: Number(process.env.DIFF_RUNS ?? 12) },
  );
}

afterEach(() => {
  vi.restoreAllMocks();
  delete process.env.SKILLS_PROMPT_CHAR_BUDGET;
  process.env.CI = "";
});

// A running process's environment does not change: a session's edits are the files'.
const fileEdits = edit.filter((change) => change.kind !== "environment" && change.kind !== "ci");

describe("caches against a clean build, over random edit sequences", () => {
  it("`skills build` and `skills check`: the build cache, the rebuild where nothing changed, the bundle copied from", async () => {
    await differential(async (dir) => {
      const built = await build({ cwd: dir });
      await expectClean(dir, built);
      // `skills check` answers from the cache that build left, and records nothing of its own.
      expect((await check({ cwd: dir })).diagnostics).toEqual(built.diagnostics);
    });
  }, 300_000);

  it("a watching session: its last discovery, with the changes a watcher reports, or those `missedChanges` finds", async () => {
    let reports = 0;
    await differential(async (dir, reported, state) => {
      state.session ??= new BuildSession({ watched: true });
      // Half the time the watcher tells nothing: the check after the last build must find what changed.
      state.session.noteChanges(reports++ % 2 === 0 ? reported : state.session.missedChanges());
      await expectClean(dir, await buildInSession({ cwd: dir }, state.session));
    }, fileEdits);
  }, 300_000);

  it("a dev server: its record modules kept while their skills show the same, over the build cache in memory", async () => {
    let reports = 0;
    await differential(async (dir, reported, state) => {
      state.virtual ??= new VirtualSkills({}, dir, true);
      state.virtual.noteChanges(reports++ % 2 === 0 ? reported : state.virtual.missedChanges());
      const update = await state.virtual.update();
      const clean = await cleanDevModules(dir);
      // A compilation with an error keeps the last good modules: only a clean one must show the same.
      expect(update.failure === undefined).toBe(clean !== undefined);
      if (clean) expect(servedModules(state.virtual)).toEqual(clean);
    }, fileEdits);
  }, 300_000);
});

describe("a watching session's skills, kept from one build to the next", () => {
  /** A session past its first build, whose skills were made as it parsed them: the second's are those it keeps. */
  async function settledSession(dir: string): Promise<{ session: BuildSession; result: BuildResult }> {
    const now = Date.now.bind(Date);
    vi.spyOn(Date, "now").mockImplementation(() => now() + 10_000);
    const session = new BuildSession({ watched: true });
    await buildInSession({ cwd: dir }, session);
    return { session, result: await buildInSession({ cwd: dir }, session) };
  }

  const skillsOf = (result: BuildResult) => new Map(result.agents.flatMap((agent) => agent.skills.map((skill) => [`${agent.id}:${skill.file}`, skill] as const)));

  it("gives each skill nothing changed for as the same object, and the edited one anew", async () => {
    const dir = await project();
    const { session, result: before } = await settledSession(dir);
    const edited = join(dir, "skills/area/alpha/SKILL.md");
    await writeFile(edited, skillMd("alpha", "Edited. Use when needed."));
    session.noteChanges([edited]);
    const after = await buildInSession({ cwd: dir }, session);
    await expectClean(dir, after);
    const kept = [...skillsOf(after)].filter(([key, skill]) => skillsOf(before).get(key) === skill).map(([key]) => key);
    expect(kept.sort()).toEqual([
      "linked:skills/area/beta/SKILL.md",
      "linked:skills/gamma/SKILL.md",
      "main:skills/area/beta/SKILL.md",
      "main:skills/gamma/SKILL.md",
      "other:more/delta/SKILL.md",
      "other:skills/area/beta/SKILL.md",
      "other:skills/gamma/SKILL.md",
    ]);
  });

  it("makes a skill anew when a file of its folder changes in place (same size, mtime put back) or is added", async () => {
    const dir = await project();
    const guide = join(dir, "skills/area/beta/references/guide.md");
    const { session } = await settledSession(dir);
    await sameSizeEdit(guide, "# GUIDE\n");
    session.noteChanges([guide]);
    await expectClean(dir, await buildInSession({ cwd: dir }, session));
    await writeFile(join(dir, "skills/area/beta/references/more.md"), "More\n");
    session.noteChanges([join(dir, "skills/area/beta/references/more.md")]);
    await expectClean(dir, await buildInSession({ cwd: dir }, session));
  });

  it("selects again where an inlined skill's body changed, and finds what the new body holds", async () => {
    const dir = await project();
    await writeFile(join(dir, "skills.config.ts"), `export default { agents: { main: { skills: [{ root: "skills", inline: ["gamma"] }] } } };\n`);
    const { session } = await settledSession(dir);
    const inlined = join(dir, "skills/gamma/SKILL.md");
    await writeFile(inlined, skillMd("gamma", undefined, "# gamma\n\nEnds early: </skill>"));
    session.noteChanges([inlined]);
    const result = await buildInSession({ cwd: dir }, session);
    expect(result.diagnostics.map((diagnostic) => diagnostic.code)).toContain("body-closes-tag");
    await expectClean(dir, result);
  });

  it("selects again when an edit renames a skill: its place in name order, a name taken twice", async () => {
    const dir = await project();
    const { session } = await settledSession(dir);
    const renamed = join(dir, "skills/area/alpha/SKILL.md");
    for (const name of ["zeta", "beta"]) {
      await writeFile(renamed, skillMd(name));
      session.noteChanges([renamed]);
      await expectClean(dir, await buildInSession({ cwd: dir }, session));
    }
  });

  it("keeps nothing of a build that read its skills (their bodies would be held through the next build)", async () => {
    const dir = await project();
    const session = new BuildSession({ watched: true });
    const parsed = new WeakRef((await buildInSession({ cwd: dir }, session)).agents[0]!.skills[0]!);
    // Until the build is reported the session holds its compilation, whose bundle's fingerprint it takes then.
    await session.afterReport();
    expect(await collected(parsed)).toBe(true);
  });

  it("lets each build's prompt and agents go: a skill kept from a build holds nothing else of it", async () => {
    const dir = await project();
    const { session } = await settledSession(dir);
    const edited = join(dir, "skills/area/alpha/SKILL.md");
    await writeFile(edited, skillMd("alpha", "Edited. Use when needed."));
    session.noteChanges([edited]);
    await buildInSession({ cwd: dir }, session);
    // The edited skill was read in that build; this one makes it anew from the cache, and the next keeps it.
    const agent = new WeakRef((await buildInSession({ cwd: dir }, session)).agents[0]!);
    await buildInSession({ cwd: dir }, session);
    expect(await collected(agent)).toBe(true);
  });

  it("reads a kept skill's body from its SKILL.md as it is now, after a touch changed only its times", async () => {
    const dir = await project();
    const { session } = await settledSession(dir);
    const touched = join(dir, "skills/gamma/SKILL.md");
    const later = new Date(Date.now() + 5_000);
    await utimes(touched, later, later);
    session.noteChanges([touched]);
    // Without the last bundle to copy from, every body is read again.
    await rm(join(dir, "dist"), { recursive: true });
    await expectClean(dir, await buildInSession({ cwd: dir }, session));
  });
});
