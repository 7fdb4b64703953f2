import { execFile, execFileSync } from "node:child_process";
import { isAscii } from "node:buffer";
import { createHash } from "node:crypto";
import { chmodSync, chownSync, copyFileSync, lstatSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { REPO, skillMd, tempDir, writeTree } from "./helpers.js";

const execFileAsync = promisify(execFile);
const UNPRIVILEGED = process.getuid?.() === 0 ? 65534 : undefined;

/** The built launcher and CLI, copied to a folder of their own, so that these tests never touch the repo's cache. */
async function copiedCli(): Promise<{ dir: string; launcher: string; cli: string; cache: string }> {
  const dir = await tempDir("skillbake-launch-");
  for (const name of ["launch.cjs", "cli.cjs", "zod.cjs"]) copyFileSync(join(REPO, "dist", name), join(dir, name));
  return { dir, launcher: join(dir, "launch.cjs"), cli: join(dir, "cli.cjs"), cache: join(dir, "cli.cjs.cache") };
}

const run = async (launcher: string, args: string[], options: { cwd?: string; uid?: number; timeout?: number } = {}) =>
  (await execFileAsync(process.execPath, [launcher, ...args], { encoding: "utf8", ...options })).stdout;

/** What the launcher puts before V8's cache: a digest of the Node that made it and of the CLI's text. */
const keyOf = (source: string) => createHash("sha256").update(`${process.version}\0${process.arch}\0`).update(source).digest();

describe("the launcher (dist/launch.cjs) and its code cache", () => {
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

  it("starts a CLI built as ASCII (copied into a string, not decoded) and one with text past ASCII as written", async () => {
    const { launcher, cli } = await copiedCli();
    expect(isAscii(readFileSync(cli))).toBe(true);
    const project = await tempDir();
    await writeTree(project, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha"),
    });
    const summary = async () => (await execFileAsync(process.execPath, [launcher, "build"], { cwd: project, encoding: "utf8" })).stderr;
    expect(await summary()).toMatch(/^Wrote dist\/skills /);
    writeFileSync(cli, readFileSync(cli, "utf8").replace("return`Wrote ${shownPath(result.outDir", "return`Wrote — café ${shownPath(result.outDir"));
    await writeTree(project, { "skills/alpha/SKILL.md": skillMd("alpha", "Changed.") });
    expect(await summary()).toMatch(/^Wrote — café dist\/skills /);
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

  it("a payload damaged under the right key is not run (V8 would abort, every run): the CLI starts and replaces it", async () => {
    const { launcher, cache } = await copiedCli();
    await run(launcher, ["--version"]);
    const damaged = readFileSync(cache);
    for (const at of [0.3, 0.6, 0.9]) {
      const offset = 64 + Math.floor((damaged.length - 64) * at);
      for (let index = offset; index < offset + 64; index++) damaged[index]! ^= 0xff;
    }
    writeFileSync(cache, damaged);
    expect((await run(launcher, ["--version"])).trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(readFileSync(cache).equals(damaged)).toBe(false);
    const replaced = statSync(cache).ino;
    await run(launcher, ["--version"]);
    expect(statSync(cache).ino).toBe(replaced);
  });

  it("a FIFO or a link to /dev/zero in the cache's place is neither waited on nor read: the CLI starts and puts a cache there", { timeout: 30_000 }, async () => {
    for (const plant of [(cache: string) => execFileSync("mkfifo", [cache]), (cache: string) => symlinkSync("/dev/zero", cache)]) {
      const { launcher, cache } = await copiedCli();
      plant(cache);
      expect((await run(launcher, ["--version"], { timeout: 10_000 })).trim()).toMatch(/^\d+\.\d+\.\d+/);
      expect(lstatSync(cache).isFile()).toBe(true);
    }
  });

  it("writes the cache writable by its owner alone, whatever the umask, and takes it on the next start", async () => {
    const { launcher, cache } = await copiedCli();
    const withUmask = (umask: string) => execFileSync("sh", ["-c", `umask ${umask}; "$0" "$1" --version`, process.execPath, launcher], { encoding: "utf8" });
    withUmask("000");
    expect(statSync(cache).mode & 0o777).toBe(0o644);
    const written = statSync(cache).ino;
    withUmask("000");
    expect(statSync(cache).ino).toBe(written);
  });

  it("a cache anyone else may write is not run, nor one another user owns, though every digest is right: each is replaced", async () => {
    const { dir, launcher, cli, cache } = await copiedCli();
    await run(launcher, ["--version"]);
    chmodSync(cache, 0o666);
    await run(launcher, ["--version"]);
    expect(statSync(cache).mode & 0o777).toBe(0o644);

    if (UNPRIVILEGED === undefined) return;
    // A shared install folder (world-writable and sticky): another user cannot change cli.cjs, but can create the
    // cache, here from another CLI of the same length, which V8 would take, under the right digests.
    const version = (await run(launcher, ["--version"])).trim();
    const other = await copiedCli();
    writeFileSync(other.cli, readFileSync(cli, "utf8").replaceAll(JSON.stringify(version), JSON.stringify("9".repeat(version.length))));
    await run(other.launcher, ["--version"]);
    const planted = Buffer.concat([keyOf(readFileSync(cli, "utf8")), readFileSync(other.cache).subarray(32)]);
    chmodSync(dir, 0o1777);
    rmSync(cache);
    writeFileSync(cache, planted, { mode: 0o644 });
    chownSync(cache, UNPRIVILEGED, UNPRIVILEGED);
    expect((await run(launcher, ["--version"])).trim()).toBe(version);
    expect(statSync(cache).uid).toBe(process.getuid!());
  });

  it("starts when the cache is garbage under the right key, and replaces it", async () => {
    const { launcher, cli, cache } = await copiedCli();
    writeFileSync(cache, Buffer.concat([keyOf(readFileSync(cli, "utf8")), Buffer.from("not a code cache".repeat(100))]));
    expect((await run(launcher, ["--version"])).trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(readFileSync(cache).includes("not a code cache")).toBe(false);
  });

  it("runs esbuild (which transpiles a TypeScript config) from a cache of its own beside the CLI, made and checked as the CLI's", async () => {
    const { dir, launcher } = await copiedCli();
    // Installed as a package's dependencies are: esbuild resolves from the CLI's folder.
    symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"));
    const cache = join(dir, "esbuild.cjs.cache");
    const esbuildMain = join(REPO, "node_modules/esbuild/lib/main.js");
    const project = await tempDir();
    await writeTree(project, {
      "skills.config.ts": 'import { defineConfig } from "skillbake";\nconst root: string = "skills";\nexport default defineConfig({ agents: { main: { skills: [{ root }] } } });\n',
      "skills/alpha/SKILL.md": skillMd("alpha"),
    });
    // Each build transpiles the config again: its transpiled copy is gone.
    const buildAfresh = async () => {
      rmSync(join(project, "node_modules"), { recursive: true, force: true });
      rmSync(join(project, "dist"), { recursive: true, force: true });
      await run(launcher, ["build"], { cwd: project });
      expect(readFileSync(join(project, "dist/skills/prompts/main.txt"), "utf8")).toContain("<name>alpha</name>");
    };
    await buildAfresh();
    const bytes = readFileSync(cache);
    expect(bytes.subarray(0, 32).equals(keyOf(readFileSync(esbuildMain, "utf8")))).toBe(true);
    const written = statSync(cache).ino;
    await buildAfresh();
    expect(statSync(cache).ino).toBe(written);

    const damaged = Buffer.from(bytes);
    for (let index = 64 + (damaged.length >> 1); index < 64 + (damaged.length >> 1) + 64; index++) damaged[index]! ^= 0xff;
    writeFileSync(cache, damaged);
    await buildAfresh();
    expect(readFileSync(cache).equals(damaged)).toBe(false);
    chmodSync(cache, 0o666);
    await buildAfresh();
    expect(statSync(cache).mode & 0o777).toBe(0o644);
  });

  it("loads zod whole (dist/zod.cjs, from a cache of its own) only for a config that imports `z`", async () => {
    const { dir, launcher } = await copiedCli();
    symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"));
    const cache = join(dir, "zod.cjs.cache");
    const project = await tempDir();
    const config = (imports: string, settings = "") => `import { ${imports} } from "skillbake";\nexport default defineConfig({ ${settings}agents: { main: { skills: [{ root: "skills" }] } } });\n`;
    await writeTree(project, { "skills.config.ts": config("defineConfig"), "skills/alpha/SKILL.md": "---\nname: alpha\ndescription: Explains things.\nowner: platform\n---\n\n# Alpha\n" });
    await run(launcher, ["build"], { cwd: project });
    expect(() => statSync(cache)).toThrow();

    await writeTree(project, { "skills.config.ts": config("defineConfig, z", "frontmatter: z.object({ owner: z.enum([\"platform\", \"web\"]) }), ") });
    for (let build = 0; build < 2; build++) {
      await run(launcher, ["build"], { cwd: project });
      expect(readFileSync(join(project, "dist/skills/manifest.json"), "utf8")).toContain('"owner": "platform"');
    }
    expect(readFileSync(cache).subarray(0, 32).equals(keyOf(readFileSync(join(dir, "zod.cjs"), "utf8")))).toBe(true);
  });

  it.skipIf(UNPRIVILEGED === undefined)("in a folder it cannot write, starts as well and writes nothing", async () => {
    const { dir, launcher, cache } = await copiedCli();
    chmodSync(dir, 0o755);
    expect((await run(launcher, ["--version"], { cwd: dir, uid: UNPRIVILEGED! })).trim()).toMatch(/^\d+\.\d+\.\d+/);
    expect(() => statSync(cache)).toThrow();
  });

  it("starts no ES module loader for a TypeScript config that runs as a script; one that imports Node's modules starts it", async () => {
    const project = await tempDir();
    const probe = join(project, "probe.cjs");
    // Node loads its module job (what runs an ES module) only when the first one is imported.
    writeFileSync(probe, `process.on("exit", () => process.stderr.write(String(process.moduleLoadList.includes("NativeModule internal/modules/esm/module_job"))));\n`);
    const loaderStarted = async (config: string) => {
      await writeTree(project, { "skills.config.ts": config, "skills/alpha/SKILL.md": skillMd("alpha") });
      return (await execFileAsync(process.execPath, ["--require", probe, join(REPO, "dist/launch.cjs"), "build"], { cwd: project, encoding: "utf8" })).stderr.trim().split("\n").at(-1);
    };
    const config = 'export default defineConfig({ agents: { main: { skills: [{ root: "skills" }] } } });\n';
    expect(await loaderStarted(`import { defineConfig } from "skillbake";\n${config}`)).toBe("false");
    // From the transpiled-config cache too.
    expect(statSync(join(project, "node_modules/.cache/skillbake/config/skills.config.ts.json")).isFile()).toBe(true);
    expect(await loaderStarted(`import { defineConfig } from "skillbake";\n${config}`)).toBe("false");
    expect(await loaderStarted(`import { defineConfig } from "skillbake";\nimport "node:path";\n${config}`)).toBe("true");
  });
});
