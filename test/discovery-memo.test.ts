import { readdirSync, readFileSync } from "node:fs";
import { mkdir, rename, symlink, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { BuildSession, buildInSession, type BuildResult } from "../src/api.js";
import { bundleOf, bundleTexts } from "../src/bundle/bundle.js";
import { compile } from "../src/compile/compile.js";
import { loadConfig } from "../src/compile/config.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

/**
 * A watching session's discovery (see `DiscoveryMemo`): a rebuild after files' contents changed goes by the last
 * listing instead of walking; anything else walks; and what its watcher did not report, `missedChanges` finds.
 * Files here are fresh (unless a test moves time on), so the build cache vouches for no folder: a build that walks
 * lists every folder again.
 */

async function project(): Promise<{ dir: string; session: BuildSession; rebuild: (reported: string[]) => Promise<BuildResult> }> {
  const dir = await tempDir("skillbake-memo-");
  await writeTree(dir, {
    "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }),
    "skills/alpha/SKILL.md": skillMd("alpha"),
    "skills/beta/SKILL.md": skillMd("beta"),
    "skills/beta/references/guide.md": "# Guide\n",
  });
  const session = new BuildSession({ watched: true });
  await buildInSession({ cwd: dir }, session);
  const rebuild = async (reported: string[]) => {
    session.noteChanges(reported);
    const result = await buildInSession({ cwd: dir }, session);
    await expectClean(dir, result);
    return result;
  };
  return { dir, session, rebuild };
}

/**
 * `project()` with alpha/guide.md a link to beta's references/guide.md, built, and every file settled (ten seconds
 * on, as the clock says): the build cache records them, so a stale identity would reuse a record.
 */
async function linkedGuide(): Promise<{ guide: string; rebuild: (reported: string[]) => Promise<BuildResult> }> {
  const now = Date.now.bind(Date);
  vi.spyOn(Date, "now").mockImplementation(() => now() + 10_000);
  const { dir, rebuild } = await project();
  await symlink("../beta/references/guide.md", join(dir, "skills/alpha/guide.md"));
  await rebuild([join(dir, "skills/alpha/guide.md")]);
  return { guide: join(dir, "skills/beta/references/guide.md"), rebuild };
}

/** The bundle on disk is what a compilation without any cache makes. */
async function expectClean(dir: string, result: BuildResult): Promise<void> {
  const clean = await compile(await loadConfig(undefined, dir));
  expect(result.diagnostics).toEqual(clean.diagnostics);
  const texts = bundleTexts(bundleOf(clean));
  for (const [path, text] of texts) expect(readFileSync(join(dir, "dist/skills", path), "utf8"), path).toBe(text);
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("a watching session's discovery", () => {
  it("a SKILL.md edited: no folder is listed again, and the bundle has the edit", async () => {
    const { dir, rebuild } = await project();
    const file = join(dir, "skills/alpha/SKILL.md");
    await writeFile(file, skillMd("alpha", "Edited alpha."));
    expect((await rebuild([file])).cache).toMatchObject({ listed: 0, parsed: 1 });
  });

  it("an editor's save (a new file renamed over the old one, its temporary file gone): no folder listed again", async () => {
    const { dir, rebuild } = await project();
    const file = join(dir, "skills/alpha/SKILL.md");
    const temporary = join(dir, "skills/alpha/SKILL.md.tmp-1234");
    await writeFile(temporary, skillMd("alpha", "Saved by rename."));
    await rename(temporary, file);
    expect((await rebuild([temporary, file])).cache).toMatchObject({ listed: 0, parsed: 1 });
  });

  it("a file reached through a link: editing the file it leads to updates the skill that links to it", async () => {
    const { guide, rebuild } = await linkedGuide();
    await writeFile(guide, "# Guide, longer now\n");
    expect((await rebuild([guide])).cache.listed).toBe(0);
  });

  it("a linked file saved by rename, build after build: each save updates the skill that links to it (the index follows its new identity)", async () => {
    const { guide, rebuild } = await linkedGuide();
    for (const text of ["# Guide, saved once\n", "# Guide, saved twice\n", "# Guide, saved three times\n"]) {
      await writeFile(`${guide}.tmp`, text);
      await rename(`${guide}.tmp`, guide);
      const result = await rebuild([`${guide}.tmp`, guide]);
      expect(result.cache.listed).toBe(0);
      const alpha = result.agents[0]!.skills.find((skill) => skill.name === "alpha")!;
      expect(alpha.files.find((file) => file.path === "guide.md")!.size).toBe(Buffer.byteLength(text));
    }
  });

  it("a skill of thousands of links to one file: an edit of that file is found through each of them in linear time", { timeout: 60_000 }, async () => {
    const { dir, session, rebuild } = await project();
    const links = 8000;
    await Promise.all(Array.from({ length: links }, (_, index) => symlink("references/guide.md", join(dir, `skills/beta/link-${index}.md`))));
    await rebuild([join(dir, "skills/beta")]);
    const guide = join(dir, "skills/beta/references/guide.md");
    // Each build after an edit finds the file again at every link: copying the skill's identities (or the list of
    // paths of that identity) once per link would cost links² (64 million entries copied, seconds), not links.
    for (const text of ["# Guide, saved once\n", "# Guide, saved twice\n"]) {
      await writeFile(`${guide}.tmp`, text);
      await rename(`${guide}.tmp`, guide);
      session.noteChanges([`${guide}.tmp`, guide]);
      const started = performance.now();
      const result = await buildInSession({ cwd: dir }, session);
      expect(performance.now() - started).toBeLessThan(5_000);
      await expectClean(dir, result);
      expect(result.cache.listed).toBe(0);
      const beta = result.agents[0]!.skills.find((skill) => skill.name === "beta")!;
      expect(beta.files.filter((file) => file.size === Buffer.byteLength(text))).toHaveLength(links + 1);
    }
  });

  it("a file that grows or shrinks across the skill folder's byte limit: the files kept are the ones a walk keeps", { timeout: 60_000 }, async () => {
    const { dir, session, rebuild } = await project();
    // Sparse files: 64 MiB of sizes cost no disk. a.bin comes first in path order, so z.bin is the one left out.
    const [first, last] = [join(dir, "skills/beta/a.bin"), join(dir, "skills/beta/z.bin")];
    await writeFile(first, "");
    await writeFile(last, "");
    await truncate(first, 40 * 2 ** 20);
    await truncate(last, 20 * 2 ** 20);
    await rebuild([first, last]);
    const files = (result: BuildResult) => result.agents[0]!.skills.find((skill) => skill.name === "beta")!.files.map((file) => file.path);
    // Past the limit the build fails (the bundle stays as it was), as a build without a session does.
    await truncate(first, 50 * 2 ** 20);
    session.noteChanges([first]);
    const grown = await buildInSession({ cwd: dir }, session);
    expect(grown.diagnostics).toEqual((await compile(await loadConfig(undefined, dir))).diagnostics);
    expect(grown.diagnostics.map((diagnostic) => diagnostic.code)).toEqual(["skill-files-too-large"]);
    expect(files(grown)).not.toContain("z.bin");
    await truncate(first, 40 * 2 ** 20);
    expect(files(await rebuild([first]))).toContain("z.bin");
  });

  it("a build that took the last listings and threw before it remembered its own: the next one walks, and is right", async () => {
    const { dir, session, rebuild } = await project();
    const alpha = join(dir, "skills/alpha/SKILL.md");
    await writeFile(alpha, skillMd("alpha", "Edited alpha."));
    session.discovery!.noteChanges([alpha]);
    expect(session.discovery!.takeListings().size).toBe(1); // what a build takes first; this one then threw
    const beta = join(dir, "skills/beta/SKILL.md");
    await writeFile(beta, skillMd("beta", "Edited beta."));
    const result = await rebuild([beta]);
    expect(result.cache.listed).toBeGreaterThan(0);
    expect(result.agents[0]!.skills.map((skill) => skill.description)).toEqual(["Edited alpha.", "Edited beta."]);
  });

  it("a root the config adds is walked, and an edit there is seen by the next build (the index covers the new root)", async () => {
    const now = Date.now.bind(Date);
    vi.spyOn(Date, "now").mockImplementation(() => now() + 10_000);
    const { dir, rebuild } = await project();
    await writeTree(dir, { "more/delta/SKILL.md": skillMd("delta") });
    const config = join(dir, "skills.config.json");
    await writeFile(config, JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills" }, { root: "more" }] } } }));
    expect((await rebuild([config])).agents[0]!.skills.map((skill) => skill.name)).toEqual(["alpha", "beta", "delta"]);
    const delta = join(dir, "more/delta/SKILL.md");
    await writeFile(delta, skillMd("delta", "Edited delta."));
    expect((await rebuild([delta])).agents[0]!.skills.find((skill) => skill.name === "delta")!.description).toBe("Edited delta.");
  });

  it("a skill added, a folder renamed, a .gitignore written: walked again", async () => {
    const { dir, rebuild } = await project();
    await writeTree(dir, { "skills/gamma/SKILL.md": skillMd("gamma") });
    expect((await rebuild([join(dir, "skills/gamma")])).agents[0]!.skills.map((skill) => skill.name)).toEqual(["alpha", "beta", "gamma"]);
    await rename(join(dir, "skills/beta"), join(dir, "skills/delta"));
    expect((await rebuild([join(dir, "skills/beta"), join(dir, "skills/delta")])).cache.listed).toBeGreaterThan(0);
    await writeFile(join(dir, "skills/.gitignore"), "gamma/\n");
    expect((await rebuild([join(dir, "skills/.gitignore")])).agents[0]!.skills.map((skill) => skill.name)).toEqual(["alpha", "beta"]);
  });

  it("a dot folder made, or a skill added in one: walked again, as discovery names what only they hold", async () => {
    const { dir, rebuild } = await project();
    await writeTree(dir, { "skills/.curated/gamma/SKILL.md": skillMd("gamma") });
    const hidden = await rebuild([join(dir, "skills/.curated")]);
    expect(hidden.diagnostics.map((diagnostic) => [diagnostic.code, diagnostic.file])).toEqual([["hidden-skill", "skills/.curated/gamma/SKILL.md"]]);
    await writeTree(dir, { "skills/.experimental/delta/SKILL.md": skillMd("delta") });
    expect((await rebuild([join(dir, "skills/.experimental")])).diagnostics).toHaveLength(2);
    // A skill added inside a dot folder the last build listed.
    await writeTree(dir, { "skills/.curated/epsilon/SKILL.md": skillMd("epsilon") });
    expect((await rebuild([join(dir, "skills/.curated/epsilon")])).diagnostics).toHaveLength(3);
  });

  it("what the watcher did not report, `missedChanges` finds: an edit, a new entry, a .gitignore edited in place", async () => {
    const { dir, session, rebuild } = await project();
    expect(session.missedChanges()).toEqual([]);
    await writeFile(join(dir, "skills/beta/references/guide.md"), "# Guide, edited unseen\n");
    expect(session.missedChanges()).toEqual([join(dir, "skills/beta/references/guide.md")]);
    await rebuild(session.missedChanges());

    await mkdir(join(dir, "skills/beta/scripts"));
    expect(session.missedChanges()).toEqual([join(dir, "skills/beta")]);
    await writeTree(dir, { "skills/beta/scripts/run.sh": "echo\n", "skills/.gitignore": "scripts/\n" });
    await rebuild(session.missedChanges());
    expect(readdirSync(join(dir, "dist/skills"))).toContain("manifest.json");

    await writeFile(join(dir, "skills/.gitignore"), "nothing/\n");
    expect(session.missedChanges()).toEqual([join(dir, "skills/.gitignore")]);
    await rebuild(session.missedChanges());
  });

  it("a temporary file that came and went, and entries discovery skips (dot files, node_modules): nothing to walk", async () => {
    const { dir, rebuild } = await project();
    await writeFile(join(dir, "skills/alpha/.SKILL.md.swp"), "swap");
    await mkdir(join(dir, "skills/alpha/node_modules"));
    const reported = ["skills/alpha/.SKILL.md.swp", "skills/alpha/node_modules", "skills/alpha/gone.tmp"].map((path) => join(dir, path));
    expect((await rebuild(reported)).cache.listed).toBe(0);
  });
});
