import { readFile, realpath } from "node:fs/promises";
import { basename, dirname, join, sep } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { build } from "../src/api.js";
import { systemCallPath } from "../src/compile/system-path.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

const startedIn = process.cwd();
afterEach(() => process.chdir(startedIn));

async function project(): Promise<string> {
  const dir = await realpath(await tempDir());
  await writeTree(dir, {
    "skills.config.json": JSON.stringify({ location: "relative", agents: { main: { skills: [{ root: "skills" }, { root: "linked" }] } } }),
    "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
    "skills/alpha/references/guide.md": "# Guide\n",
    "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks."),
    "elsewhere/gamma/SKILL.md": skillMd("gamma", "Explains gamma."),
    linked: { link: "elsewhere" },
  });
  return dir;
}

describe("paths given to system calls", () => {
  it("are relative to the working folder for a path below it, and as they are otherwise", async () => {
    const dir = await realpath(await tempDir());
    process.chdir(dir);
    expect(systemCallPath(join(dir, "skills", "alpha", "SKILL.md"))).toBe(join("skills", "alpha", "SKILL.md"));
    expect(systemCallPath(dir)).toBe(dir);
    expect(systemCallPath(`${dir}-sibling${sep}SKILL.md`)).toBe(`${dir}-sibling${sep}SKILL.md`);
    expect(systemCallPath(join(dirname(dir), "other", "SKILL.md"))).toBe(join(dirname(dir), "other", "SKILL.md"));
    process.chdir(dirname(dir));
    expect(systemCallPath(join(dir, "SKILL.md"))).toBe(join(basename(dir), "SKILL.md"));
  });

  it("a build run in its project's folder writes what one run elsewhere writes, and its rebuild finds nothing changed", async () => {
    const [inside, outside] = [await project(), await project()];
    process.chdir(inside);
    const built = await build({ config: join(inside, "skills.config.json") });
    process.chdir(startedIn);
    await build({ config: join(outside, "skills.config.json") });
    for (const file of ["manifest.json", "index.js", "prompts/main.txt"]) {
      expect(await readFile(join(inside, "dist/skills", file), "utf8")).toBe(await readFile(join(outside, "dist/skills", file), "utf8"));
    }
    expect(built.agents[0]!.skills.map((skill) => skill.name)).toEqual(["alpha", "beta", "gamma"]);

    process.chdir(inside);
    const again = await build({ config: join(inside, "skills.config.json") });
    expect(again.written).toBe(false);
    expect(again.cache).toMatchObject({ parsed: 0, hashed: 0, listed: 0 });
  });
});
