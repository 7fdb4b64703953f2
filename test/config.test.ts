import { spawn } from "node:child_process";
import { chmod, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { importsPackage } from "../src/compile/config.js";
import { ConfigError, loadConfig } from "../src/index.js";
import { CLI, REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

describe("loadConfig", () => {
  it("finds the first of skills.config.{ts,mts,js,mjs,json} in cwd and applies defaults", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { other: { skills: [{ root: "x" }] } } }),
      "skills.config.mjs": "export default { agents: { chosen: { skills: [{ root: 'skills' }] } } };",
    });
    const loaded = await loadConfig(undefined, dir);
    expect(loaded.file).toBe(join(dir, "skills.config.mjs"));
    expect(loaded.config).toEqual({
      outDir: "dist/skills",
      location: "relative",
      format: "pi",
      yaml: "strict",
      rules: {},
      agents: { chosen: { skills: [{ root: "skills" }] } },
    });
  });

  it("loads TypeScript through esbuild: types, relative imports, `skillbake` imports; no temp file left", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "agents.ts": "export const roots: string[] = ['skills'];\n",
      "skills.config.ts": [
        'import { defineConfig } from "skillbake";',
        'import { roots } from "./agents";',
        "const location: 'relative' = 'relative';",
        "export default defineConfig({ location, agents: { coding: { skills: roots.map((root) => ({ root })) } } });",
      ].join("\n"),
    });
    const loaded = await loadConfig(undefined, dir);
    expect(loaded.config.location).toBe("relative");
    expect(loaded.config.agents.coding!.skills).toEqual([{ root: "skills" }]);
    expect(loaded.inputs).toEqual([join(dir, "agents.ts"), join(dir, "skills.config.ts")]);
    // Only the transpiled config and what it resolved to are written, each by a rename.
    expect((await readdir(dir)).sort()).toEqual(["agents.ts", "node_modules", "skills.config.ts"]);
    expect((await readdir(join(dir, "node_modules/.cache/skillbake/config"))).sort()).toEqual(["skills.config.ts.json", "skills.config.ts.validated.json"]);
  });

  it("loads an ES module JavaScript config as a TypeScript one (bundled: `skillbake` needs no install, and the bundle is cached); a CommonJS one through Node", async () => {
    const config = 'import { defineConfig, z } from "skillbake";\nexport default defineConfig({ frontmatter: z.object({ team: z.string() }), agents: { coding: { skills: [{ root: "skills" }] } } });\n';
    for (const [name, tree] of [
      ["skills.config.js", { "package.json": '{ "type": "module" }' }],
      // No type: Node runs a .js with module syntax as an ES module.
      ["skills.config.js", { "package.json": '{ "name": "site" }' }],
      ["skills.config.mjs", {}],
    ] as const) {
      const dir = await tempDir();
      // No skillbake installed beside it: Node could not import the package, so the config ran bundled.
      await writeTree(dir, { ...tree, [name]: config });
      const loaded = await loadConfig(undefined, dir);
      expect(Object.keys(loaded.config.frontmatter!.shape)).toEqual(["team"]);
      expect(await readdir(join(dir, "node_modules/.cache/skillbake/config"))).toContain(`${name}.json`);
    }
    const dir = await tempDir();
    await writeTree(dir, { "package.json": '{ "type": "commonjs" }', "skills.config.js": 'module.exports = { agents: { main: { skills: [{ root: require("node:path").join(__dirname, "skills") }] } } };\n' });
    const loaded = await loadConfig(undefined, dir);
    expect(loaded.config.agents.main!.skills).toEqual([{ root: join(dir, "skills") }]);
    expect(await readdir(join(dir, "node_modules/.cache/skillbake/config")).catch(() => [])).not.toContain("skills.config.js.json");
  });

  it("gives a config that imports more of skillbake than defineConfig and z the installed package", async () => {
    for (const name of ["skills.config.ts", "skills.config.mjs"]) {
      const dir = await tempDir();
      await writeTree(dir, {
        [name]: 'import { defineConfig, manifestSchema } from "skillbake";\nexport default defineConfig({ agents: { main: { description: typeof manifestSchema.parse, skills: [{ root: "skills" }] } } });\n',
        "node_modules/skillbake": { link: REPO },
      });
      expect((await loadConfig(undefined, dir)).config.agents.main!.description, name).toBe("function");
    }
  });

  it("loads TypeScript as from beside the config: packages resolve from its folder; import.meta is the config's, in the files it imports too", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "node_modules/esm-only/package.json": JSON.stringify({ name: "esm-only", type: "module", exports: { import: "./index.js" } }),
      "node_modules/esm-only/index.js": "export const root = 'skills';\n",
      "lib/where.ts": "export const here: string = import.meta.url;\n",
      "skills.config.ts": [
        'import { root } from "esm-only";',
        'import { here } from "./lib/where";',
        'import { fileURLToPath } from "node:url";',
        "export default { outDir: fileURLToPath(new URL('./out', import.meta.url)), agents: { main: { description: import.meta.dirname, skills: [{ root }] }, lib: { description: here, skills: [{ root }] } } };",
      ].join("\n"),
    });
    const loaded = await loadConfig(undefined, dir);
    expect(loaded.config.outDir).toBe(join(dir, "out"));
    expect(loaded.config.agents.main).toEqual({ description: dir, skills: [{ root: "skills" }] });
    expect(loaded.config.agents.lib!.description).toBe(pathToFileURL(join(dir, "skills.config.ts")).href);
  });

  it("check and build --check work in a folder the user cannot write: loading a TypeScript config writes nothing", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.ts": `export default { agents: { main: { skills: [{ root: "skills" }] } } };\n`, "skills/alpha/SKILL.md": skillMd("alpha") });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    // Permissions do not stop root: as root, the CLI runs as the unprivileged user "nobody" in a folder of root's.
    const asRoot = process.getuid?.() === 0;
    const folders = [dir, ...(await readdir(dir, { recursive: true, withFileTypes: true })).filter((entry) => entry.isDirectory()).map((entry) => join(entry.parentPath, entry.name))];
    await Promise.all(folders.map((folder) => chmod(folder, asRoot ? 0o755 : 0o555)));
    try {
      for (const args of [["check"], ["build", "--check"]]) {
        const run = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
          const child = spawn(process.execPath, [CLI, ...args], { cwd: dir, env: { ...process.env, NO_COLOR: "1", GITHUB_ACTIONS: "" }, ...(asRoot ? { uid: 65534, gid: 65534 } : {}), stdio: ["ignore", "ignore", "pipe"] });
          let stderr = "";
          child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
          child.on("error", reject).on("close", (code) => resolve({ code, stderr }));
        });
        expect(run, args.join(" ")).toMatchObject({ code: 0 });
      }
    } finally {
      await Promise.all(folders.map((folder) => chmod(folder, 0o755)));
    }
  });

  it("an unknown key of megabytes is refused at once, in a line of hundreds of characters", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": JSON.stringify({ [`s${"x".repeat(2_000_000)}`]: 1, agents: { a: { skills: [{ root: "a" }] } } }) });
    const started = performance.now();
    const error = (await loadConfig(undefined, dir).catch((caught: unknown) => caught)) as ConfigError;
    // Measured against each setting's name for a suggestion, it took 16 s and 1.3 GB.
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(error.detail).toMatch(/^sx+… \(\d+ characters left out\) …x+: unknown setting\.$/);
  });

  it("names at most 20 problems, and how many more there are: a config's keys are any a pull request writes", async () => {
    const dir = await tempDir();
    const unknown = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`setting${i}`, true]));
    await writeTree(dir, { "skills.config.json": JSON.stringify({ ...unknown, agents: { a: { skills: [{ root: "a" }] } } }) });
    const error = (await loadConfig(undefined, dir).catch((caught: unknown) => caught)) as ConfigError;
    const lines = error.detail.split("\n");
    expect(lines).toHaveLength(21);
    expect(lines[0]).toMatch(/^setting0: unknown setting/);
    expect(lines[20]).toBe("… and 80 more");
  });

  it.each([
    [{ agents: { coding: { skills: [{ root: "a" }, { root: 1 }] } } }, "agents.coding.skills[1].root: expected string, received number"],
    [{ agents: {} }, "agents: define at least one agent"],
    [{ agents: { Coding: { skills: [{ root: "a" }] } } }, "agents.Coding: agent ids are lowercase letters, digits and hyphens, starting with a letter"],
    [{ agents: { a: { skills: [{ root: "a", availble: ["*"] }] } } }, "agents.a.skills[0].availble: unknown setting"],
    [{ location: "somewhere", agents: { a: { skills: [{ root: "a" }] } } }, 'location: expected "absolute", "relative" or { base: "/where/the/app/runs" }'],
    [{ yaml: "lenient", agents: { a: { skills: [{ root: "a" }] } } }, 'yaml: expected one of "strict"|"recover"'],
    [{ rules: { "no-such-rule": "warn" }, agents: { a: { skills: [{ root: "a" }] } } }, "rules.no-such-rule:"],
  ])("rejects %j naming the field path", async (config, message) => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": JSON.stringify(config) });
    const error = await loadConfig(undefined, dir).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toContain(`${join(dir, "skills.config.json")}: ${message}`);
  });

  it("runs a TypeScript config that imports only its own files as a script, any other as an ES module, to the same effect", async () => {
    const kindOf = async (dir: string) => {
      const entry = await readFile(join(dir, "node_modules/.cache/skillbake/config/skills.config.ts.json"), "utf8");
      return (JSON.parse(entry.split("\n")[1]!) as { kind: string }).kind;
    };
    const load = async (body: string, tree: Record<string, string> = {}) => {
      const dir = await tempDir();
      await writeTree(dir, { ...tree, "skills.config.ts": `${body}\nexport default { agents: { main: { description: String(described), skills: [{ root: "skills" }] } } };\n` });
      const { config } = await loadConfig(undefined, dir);
      return { description: config.agents.main!.description, kind: await kindOf(dir) };
    };
    // A module's top-level `this` is undefined, and so is a script's; `arguments` and CommonJS's names are not there.
    expect(await load('import { root } from "./root";\nconst described = [root, this, typeof arguments, typeof exports, typeof module, typeof __dirname].join(" ");', { "root.ts": 'export const root: string = "mine";\n' })).toEqual({
      description: "mine  undefined undefined undefined undefined",
      kind: "script",
    });
    // Strict, as a module is: an assignment to an undeclared name throws.
    await expect(load("undeclared = 1;\nconst described = 1;")).rejects.toThrow(/skills\.config\.ts:1:1: the config failed to load: undeclared is not defined/);
    expect(await load('import { sep } from "node:path";\nconst described = sep;')).toEqual({ description: "/", kind: "module" });
    expect(await load("const described = await Promise.resolve(7);")).toEqual({ description: "7", kind: "module" });
    expect(await load('const described = import.meta.resolve("node:path");')).toEqual({ description: "node:path", kind: "module" });
    expect(await load('const path = "node:path";\nconst described = typeof (await import(path)).join;')).toEqual({ description: "function", kind: "module" });
    expect(await load('const path = "node:path";\nconst load = () => import(path);\nconst described = typeof load;')).toEqual({ description: "function", kind: "module" });
  });

  it("tells a config that imports a package (bundled at every build, so never tried as a script first) by its text", () => {
    for (const text of ['import { root } from "shared-roots";', "import 'polyfill';", 'export { root } from "@scope/roots";', 'const roots = await import("roots");', 'import{x}from"pkg/sub"'])
      expect(importsPackage(text), text).toBe(true);
    for (const text of ['import { defineConfig } from "skillbake";', 'import { join } from "node:path";', 'import fs from "fs";', 'import { roots } from "./roots";', 'import x from "/abs/roots.ts";', 'const from = "pkg";'])
      expect(importsPackage(text), text).toBe(false);
  });

  it("reports a TypeScript syntax error with file:line:col, exit 2 from the CLI", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.ts": "export default {\n  agents: {,\n};\n" });
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(new RegExp(`^skills: ${join(dir, "skills.config.ts")}:2:\\d+: `));
    expect((await readdir(dir)).sort()).toEqual(["skills.config.ts"]);
  });

  it("--config names a file elsewhere; roots resolve against its folder", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "conf/skills.config.json": JSON.stringify({ location: "relative", agents: { a: { skills: [{ root: "../skills" }] } } }),
      "skills/one/SKILL.md": skillMd("one"),
    });
    const run = await runCli(["build", "--config", "conf/skills.config.json", "--format", "json"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: true, outDir: "conf/dist/skills", agents: [{ id: "a", skills: 1 }] });
  });
});
