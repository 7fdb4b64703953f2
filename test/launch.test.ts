import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, copyFileSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { REPO, skillMd, tempDir, writeTree } from "./helpers.js";

const execFileAsync = promisify(execFile);
const UNPRIVILEGED = process.getuid?.() === 0 ? 65534 : undefined;

/** The built launcher and CLI, copied to a folder of their own, so that these tests never touch the repo's cache. */
async function copiedCli(): Promise<{ dir: string; launcher: string; cli: string; cache: string }> {
  const dir = await tempDir("skillbake-launch-");
  for (const name of ["cli.js", "cli.cjs"]) copyFileSync(join(REPO, "dist", name), join(dir, name));
  return { dir, launcher: join(dir, "cli.js"), cli: join(dir, "cli.cjs"), cache: join(dir, "cli.cjs.cache") };
}

const run = async (launcher: string, args: string[], options: { cwd?: string; uid?: number } = {}) =>
  (await execFileAsync(process.execPath, [launcher, ...args], { encoding: "utf8", ...options })).stdout;

/** What the launcher puts before V8's cache: a digest of the Node that made it and of the CLI's text. */
const keyOf = (source: string) => createHash("sha256").update(`${process.version}\0${process.arch}\0`).update(source).digest();

describe("the launcher (dist/cli.js) and its code cache", () => {
  it("leaves a cache for the CLI's text beside it, then starts from it without writing it again", async () => {
    const { launcher, cli, cache } = await copiedCli();
    const project = await tempDir();
    await writeTree(project, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha"),
    });
    await run(launcher, ["build"], { cwd: project });
    const bytes = readFileSync(cache);
    expect(bytes.subarray(0, 32).equals(keyOf(readFileSync(cli, "utf8")))).toBe(true);
    const written = statSync(cache);

    await run(launcher, ["build"], { cwd: project });
    // Accepted by V8: a cache it rejected would be made again as the process exits.
    expect(statSync(cache).ino).toBe(written.ino);
    expect(readFileSync(cache).equals(bytes)).toBe(true);
    expect(readFileSync(join(project, "dist/skills/prompts/main.txt"), "utf8")).toContain("<name>alpha</name>");
  });

  it("never runs a cache made for other text, though V8 would take it (it compares lengths): the CLI as it is now runs", async () => {
    const { launcher, cli, cache } = await copiedCli();
    const source = readFileSync(cli, "utf8");
    const version = (await run(launcher, ["--version"])).trim();
    expect(readFileSync(cache).length).toBeGreaterThan(32);

    // Another CLI of the same length: another version number.
    const other = "9".repeat(version.length);
    expect(source.split(JSON.stringify(version)).length).toBeGreaterThan(1);
    writeFileSync(cli, source.replaceAll(JSON.stringify(version), JSON.stringify(other)));
    expect((await run(launcher, ["--version"])).trim()).toBe(other);
    expect(readFileSync(cache).subarray(0, 32).equals(keyOf(readFileSync(cli, "utf8")))).toBe(true);
  });

  it("starts when the cache is garbage under the right key, and replaces it", async () => {
    const { launcher, cli, cache } = await copiedCli();
    writeFileSync(cache, Buffer.concat([keyOf(readFileSync(cli, "utf8")), Buffer.from("not a code cache".repeat(100))]));
    expect((await run(launcher, ["--version"])).trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(readFileSync(cache).includes("not a code cache")).toBe(false);
  });

  it.skipIf(UNPRIVILEGED === undefined)("in a folder it cannot write, starts as well and writes nothing", async () => {
    const { dir, launcher, cache } = await copiedCli();
    chmodSync(dir, 0o755);
    expect((await run(launcher, ["--version"], { cwd: dir, uid: UNPRIVILEGED! })).trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(() => statSync(cache)).toThrow();
  });
});
