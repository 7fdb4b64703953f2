import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { CLI, holdLock, runCli, sameSizeEdit, skillMd, tempDir, writeTree } from "./helpers.js";
import { isAtOrBelow } from "../src/cli/watch.js";

/** A `skills build --watch` subprocess whose output is collected as it comes. */
function startWatch(cwd: string): { child: ChildProcess; output: () => string; exited: Promise<number | null> } {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: "1" };
  delete env.FORCE_COLOR;
  delete env.GITHUB_ACTIONS;
  const child = spawn(process.execPath, [CLI, "build", "--watch"], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
  let text = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  return { child, output: () => text, exited };
}

/** Polls until `condition` holds: generous, since a loaded machine can be slow to deliver a change. */
async function waitFor(condition: () => boolean | Promise<boolean>, what: string, output: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; the watch printed:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Waits until the watch has printed nothing for `ms`: a build can read a file while the test's write of it is half
 * done (a read takes no lock against a write) and build again once the write's last event comes.
 */
async function quiet(output: () => string, ms = 400): Promise<void> {
  for (let length = -1; length !== output().length; ) {
    length = output().length;
    await new Promise((resolve) => setTimeout(resolve, ms));
  }
}

const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) child.kill("SIGKILL");
});

/** A project with one skill, alpha (at `skill`, under the root `skills`), watched through its first build. */
async function watchedProject(skill = "skills/alpha/SKILL.md") {
  const dir = await tempDir();
  await writeTree(dir, {
    "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }),
    [skill]: skillMd("alpha", "Drafts alpha reports."),
  });
  const watch = startWatch(dir);
  running.push(watch.child);
  await waitFor(() => watch.output().includes("Watching"), "the first build", watch.output);
  const prompt = () => readFile(join(dir, "dist/skills/prompts/main.txt"), "utf8").catch(() => "");
  return { dir, watch, output: watch.output, prompt };
}

describe("skills build --watch", () => {
  it("removes the bundle a rebuild replaced once the rebuild is reported", async () => {
    const { dir, output, prompt } = await watchedProject();
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha and beta reports."));
    await waitFor(async () => (await prompt()).includes("Drafts alpha and beta reports."), "the edit in the bundle", output);
    await waitFor(() => /Built in \d+ ms[^]*Built in \d+ ms/.test(output()), "the rebuild's report", output);
    await waitFor(async () => (await readdir(join(dir, "dist"))).every((name) => name === "skills" || name === ".skills.lock"), "the replaced bundle removed", output);
    expect(await readdir(join(dir, "dist"))).toContain("skills");
  });

  it("rebuilds on edits, keeps the last good bundle while a skill is broken, and picks up new skills and config edits", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
    });
    const prompt = () => readFile(join(dir, "dist/skills/prompts/main.txt"), "utf8").catch(() => "");
    const watch = startWatch(dir);
    running.push(watch.child);
    const { output } = watch;
    /** Output printed since the last step began. */
    let mark = 0;
    const since = () => output().slice(mark);
    const step = () => {
      mark = output().length;
    };

    await waitFor(() => output().includes("Watching"), "the first build", output);
    expect(output()).toContain("Wrote dist/skills (1 agent, 1 skill)");
    expect(await prompt()).toContain("<description>Drafts alpha reports.</description>");

    // An edit: rebuilt, and the output names the file.
    step();
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha and omega reports."));
    await waitFor(async () => (await prompt()).includes("Drafts alpha and omega reports."), "the edit in the bundle", output);
    await waitFor(() => /Built in \d+ ms/.test(since()), "the rebuild's report", output);
    expect(since()).toContain("Changed: skills/alpha/SKILL.md");

    // A break: the error is reported and the last good bundle stays as it was.
    step();
    const good = await prompt();
    await writeFile(join(dir, "skills/alpha/SKILL.md"), "---\nname: alpha\n---\nNo description any more.\n");
    await waitFor(() => since().includes("the last good bundle stays"), "the failed rebuild", output);
    expect(since()).toContain("[description-missing]");
    expect(since()).toContain("nothing written");
    expect(await prompt()).toBe(good);

    // The fix: rebuilt again.
    step();
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, fixed."));
    await waitFor(async () => (await prompt()).includes("Drafts alpha reports, fixed."), "the fixed skill in the bundle", output);
    // The bundle is swapped in before its report is printed: wait for the report, or the next step counts it.
    await waitFor(() => /Built in \d+ ms/.test(since()), "the fixed build's report", output);

    // A file discovery does not read (a log beside the skills) changes nothing: no build for it.
    step();
    await writeFile(join(dir, "skills/notes.log"), "a log line\n");
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, once more."));
    await waitFor(async () => (await prompt()).includes("Drafts alpha reports, once more."), "the edit after the log", output);
    await waitFor(() => /Built in \d+ ms/.test(since()), "the rebuild's report", output);
    expect(since().match(/Built in/g)).toHaveLength(1);
    expect(since()).not.toContain("notes.log");

    // A new skill folder, then its SKILL.md: watched as soon as it exists.
    step();
    await mkdir(join(dir, "skills/beta"));
    await waitFor(() => /Built in \d+ ms/.test(since()), "the rebuild for the new folder", output);
    await writeFile(join(dir, "skills/beta/SKILL.md"), skillMd("beta", "Runs beta checks."));
    await waitFor(async () => (await prompt()).includes("<name>beta</name>"), "the new skill in the bundle", output);

    // The config: inline beta.
    step();
    await writeFile(join(dir, "skills.config.json"), JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills", inline: ["beta"], available: ["alpha"] }] } } }));
    await waitFor(async () => (await prompt()).includes('<skill name="beta" location="skills/beta/SKILL.md">'), "the config edit in the bundle", output);
    await waitFor(() => since().includes("Changed: skills.config.json"), "the config named as changed", output);

    // A broken config: reported, the bundle kept, watching goes on.
    step();
    const beforeBadConfig = await prompt();
    await writeFile(join(dir, "skills.config.json"), "{ not json");
    await waitFor(() => since().includes("nothing written, the last good bundle stays"), "the config error", output);
    expect(since()).toContain("invalid JSON");
    expect(await prompt()).toBe(beforeBadConfig);

    watch.child.kill("SIGINT");
    expect(await watch.exited).toBe(0);
  }, 120_000);

  it("prints a rebuild's new diagnostics only, and how many stay as they were", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
      "skills/beta/SKILL.md": skillMd("beta-renamed", "Runs beta checks."),
    });
    const watch = startWatch(dir);
    running.push(watch.child);
    const { output } = watch;
    await waitFor(() => output().includes("Watching"), "the first build", output);
    expect(output()).toContain("[name-mismatch]");

    // An edit that adds no warning: the old one is counted, not printed again.
    let mark = output().length;
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited."));
    await waitFor(() => /Built in \d+ ms/.test(output().slice(mark)), "the rebuild's report", output);
    expect(output().slice(mark)).not.toContain("[name-mismatch]");
    expect(output().slice(mark)).toContain("1 diagnostic as before.");
    expect(output().slice(mark)).toContain("0 errors, 1 warning");

    // A new warning is printed; the old one, gone, is counted.
    mark = output().length;
    await writeFile(join(dir, "skills/beta/SKILL.md"), skillMd("beta", "Runs beta checks."));
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha-two", "Drafts alpha reports, edited."));
    await waitFor(() => /Built in \d+ ms/.test(output().slice(mark)), "the rebuild's report", output);
    await quiet(output);
    expect(output().slice(mark)).toContain("skills/alpha/SKILL.md");
    expect(output().slice(mark)).toMatch(/alpha-two[\s\S]*\[name-mismatch\]/);
    expect(output().slice(mark)).toContain("gone.");

    watch.child.kill("SIGINT");
    expect(await watch.exited).toBe(0);
  }, 120_000);

  it("a skills root moved away and back (a branch switch): the last good bundle stays, the return is built, later edits too", async () => {
    const { dir, watch, output, prompt } = await watchedProject();
    const good = await prompt();

    let mark = output().length;
    await rename(join(dir, "skills"), join(dir, "skills-away"));
    await waitFor(() => output().slice(mark).includes("the last good bundle stays"), "the root's absence", output);
    expect(output().slice(mark)).toContain("Changed: skills\nWaiting for skills to come back (moved or deleted); nothing built, the last good bundle stays.");
    expect(await prompt()).toBe(good);

    // Back, as a new folder (as `git checkout` makes it), with a changed skill: built.
    mark = output().length;
    await writeTree(dir, { "skills-new/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports, on the other branch.") });
    await rename(join(dir, "skills-new"), join(dir, "skills"));
    await waitFor(async () => (await prompt()).includes("on the other branch"), "the returned root in the bundle", output);
    expect(output().slice(mark)).not.toContain("skills/skills");

    // And an edit after that is seen.
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited after the switch."));
    await waitFor(async () => (await prompt()).includes("edited after the switch"), "a later edit in the bundle", output);

    watch.child.kill("SIGINT");
    expect(await watch.exited).toBe(0);
  }, 120_000);

  it("a folder made in a root, then a skill written in it once all is quiet: built", async () => {
    const { dir, watch, output, prompt } = await watchedProject();
    const mark = output().length;
    await mkdir(join(dir, "skills/beta"));
    await waitFor(() => /Built in \d+ ms/.test(output().slice(mark)), "the rebuild for the new folder", output);
    // Past the check for changes made while a build ran: only a watch on the new folder sees this write.
    await quiet(output);
    await writeFile(join(dir, "skills/beta/SKILL.md"), skillMd("beta", "Runs beta checks."));
    await waitFor(async () => (await prompt()).includes("<name>beta</name>"), "the new skill in the bundle", output);

    watch.child.kill("SIGINT");
    expect(await watch.exited).toBe(0);
  }, 120_000);

  it("a folder of skills replaced by another of the same name: its skills are built, and edits in the new folders seen", async () => {
    const { dir, watch, output, prompt } = await watchedProject("skills/area/group/alpha/SKILL.md");

    // The new folders have the old ones' names, not their identities: the old watches follow the folders moved away.
    await writeTree(dir, { "area-new/group/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports, replaced.") });
    await rename(join(dir, "skills/area"), join(dir, "area-old"));
    await rename(join(dir, "area-new"), join(dir, "skills/area"));
    await waitFor(async () => (await prompt()).includes("replaced."), "the replaced folder in the bundle", output);

    await writeFile(join(dir, "skills/area/group/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited in the new folder."));
    await waitFor(async () => (await prompt()).includes("edited in the new folder"), "an edit in the new folder in the bundle", output);
    await quiet(output);
    // The old folder, moved out of the root, is not watched: an edit there builds nothing.
    const mark = output().length;
    await writeFile(join(dir, "area-old/group/alpha/SKILL.md"), skillMd("alpha", "Edited where nobody looks."));
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(output().slice(mark)).not.toContain("Changed:");

    watch.child.kill("SIGINT");
    expect(await watch.exited).toBe(0);
  }, 120_000);

  it("a dot folder made in a root, and a skill in it that the source's include names: built", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills", include: ["**", ".curated/**"] }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
    });
    const watch = startWatch(dir);
    running.push(watch.child);
    await waitFor(() => watch.output().includes("Watching"), "the first build", watch.output);
    await writeTree(dir, { "skills/.curated/beta/SKILL.md": skillMd("beta", "Drafts beta reports.") });
    const prompt = () => readFile(join(dir, "dist/skills/prompts/main.txt"), "utf8").catch(() => "");
    await waitFor(async () => (await prompt()).includes("Drafts beta reports."), "the skill in the dot folder in the bundle", watch.output);
    watch.child.kill("SIGINT");
    expect(await watch.exited).toBe(0);
  }, 120_000);

  it("a rebuild refused by another build's lock is tried again", async () => {
    const { dir, watch, output, prompt } = await watchedProject();

    // A lock held by a running process (this test's): the rebuild is refused until it is gone.
    const lock = await holdLock(dir, process.pid);
    const mark = output().length;
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, while locked."));
    await waitFor(() => output().slice(mark).includes("Trying again in 1 s."), "the refused rebuild", output);
    expect(output().slice(mark)).toContain(`another skills build (process ${process.pid}) is writing`);
    await rm(lock);
    await waitFor(async () => (await prompt()).includes("while locked"), "the retried rebuild in the bundle", output);

    watch.child.kill("SIGINT");
    expect(await watch.exited).toBe(0);
  }, 120_000);

  it("loads the config again only when it changed, and writes the build cache when it stops", async () => {
    const dir = await tempDir();
    const log = join(dir, "loads.log");
    // Trusted code with a side effect: each load of a JavaScript config imports it anew and leaves a line. (A
    // TypeScript config is bundled by esbuild first; its imports are among the files whose signatures are kept.)
    const config = (agents: string) => `import { appendFileSync } from "node:fs";\nappendFileSync(${JSON.stringify(log)}, "load\\n");\nexport default { location: "relative", agents: ${agents} };\n`;
    await writeTree(dir, {
      "skills.config.mjs": config(`{ main: { skills: [{ root: "skills" }] } }`),
      "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
    });
    // Files changed within 2 s of a load are loaded again by the next build (the cache's racy rule): let them settle.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    const loads = async () => (await readFile(log, "utf8")).split("\n").filter(Boolean).length;
    const watch = startWatch(dir);
    running.push(watch.child);
    const { output } = watch;
    await waitFor(() => output().includes("Watching"), "the first build", output);
    expect(await loads()).toBe(1);

    const prompt = (agent: string) => readFile(join(dir, `dist/skills/prompts/${agent}.txt`), "utf8").catch(() => "");
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited."));
    await waitFor(async () => (await prompt("main")).includes("edited"), "the edit in the bundle", output);
    expect(await loads()).toBe(1);

    await writeFile(join(dir, "skills.config.mjs"), config(`{ main: { skills: [{ root: "skills" }] }, other: { skills: [{ root: "skills" }] } }`));
    await waitFor(async () => (await prompt("other")).includes("alpha"), "the config edit in the bundle", output);
    expect(await loads()).toBe(2);

    // An edit of the same size, its mtime put back, once the config has settled (a load within 2 s of its last
    // change keeps no signature, so the next build loads it again whatever it is). It is loaded again: a file
    // changed within 2 s of the check counts as changed, and its ctime differs besides.
    await new Promise((resolve) => setTimeout(resolve, 2100));
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited twice."));
    await waitFor(async () => (await prompt("main")).includes("edited twice"), "the second edit in the bundle", output);
    const settledLoads = await loads();
    await sameSizeEdit(join(dir, "skills.config.mjs"), config(`{ main: { skills: [{ root: "skills" }] }, extra: { skills: [{ root: "skills" }] } }`));
    await waitFor(async () => (await prompt("extra")).includes("alpha"), "the same-size config edit in the bundle", output);
    expect(await loads()).toBe(settledLoads + 1);

    watch.child.kill("SIGINT");
    expect(await watch.exited).toBe(0);
    const cache = await readFile(join(dir, "node_modules/.cache/skillbake/skills.config.mjs.json"), "utf8");
    expect(cache).toContain('"skills/alpha/SKILL.md"');
  }, 120_000);

  it("answers its first build with the last compilation when nothing changed since it (not compiling), then rebuilds edits", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
      "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks."),
    });
    await new Promise((resolve) => setTimeout(resolve, 2100)); // settled: the build keeps its compilation
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    // Without the build cache, compiling would parse both SKILL.md files again; the kept compilation parses none.
    await rm(join(dir, "node_modules/.cache/skillbake/skills.config.json.json"));
    const watch = startWatch(dir);
    running.push(watch.child);
    const { output } = watch;
    await waitFor(() => output().includes("Watching"), "the first build", output);
    expect(output()).toContain("Bundle is up to date (1 agent, 2 skills)");
    expect(output()).toMatch(/Built in \d+ ms \(0 of 2 SKILL\.md parsed\)/);

    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Drafts alpha reports, edited."));
    const prompt = () => readFile(join(dir, "dist/skills/prompts/main.txt"), "utf8").catch(() => "");
    await waitFor(async () => (await prompt()).includes("Drafts alpha reports, edited."), "the edit in the bundle", output);
    expect(await prompt()).toContain("Runs beta checks.");
  }, 60_000);

  it("exits 2 when the first build cannot load the config", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": "{ not json" });
    const watch = startWatch(dir);
    running.push(watch.child);
    expect(await watch.exited).toBe(2);
    expect(watch.output()).toContain("invalid JSON");
  });
});

describe("which watched folders a change can have replaced", () => {
  it("a folder at or below a changed path, not a sibling that shares its prefix", () => {
    const changed = new Set(["/p/skills/alpha", "/p/other/file.md"]);
    expect(isAtOrBelow("/p/skills/alpha", changed)).toBe(true);
    expect(isAtOrBelow("/p/skills/alpha/references", changed)).toBe(true);
    expect(isAtOrBelow("/p/skills/alphabet", changed)).toBe(false);
    expect(isAtOrBelow("/p/skills", changed)).toBe(false);
    expect(isAtOrBelow("/p/other", changed)).toBe(false);
  });

  it("a branch switch that changes 20,000 paths, against 20,000 watched folders: lookups by depth, not pairs", () => {
    // Each folder against each changed path took ~2.3 s for 12,000 folders and 10,000 paths.
    const folders = Array.from({ length: 20_000 }, (_, index) => `/p/skills/area-${index % 40}/skill-${index}`);
    const changed = new Set(folders.map((folder) => `${folder}x/SKILL.md`));
    const start = performance.now();
    expect(folders.filter((folder) => isAtOrBelow(folder, changed))).toEqual([]);
    expect(performance.now() - start).toBeLessThan(1_000);
  });
});
