/**
 * The package as a user gets it: `npm pack` (whose `prepack` builds dist/), the tarball installed into a new
 * project, `skills init` + `skills build` there, and the user's TypeScript over the config and a server that
 * imports the bundle, under the settings users have: strict + nodenext, strict + bundler, and what `tsc --init`
 * writes, each checking the libraries' declarations too (`skipLibCheck: false`). The project has no @types/node,
 * and is an ES module project, as `tsc --init`'s `verbatimModuleSyntax` needs for `import` in a .ts file.
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { cp, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { CLI, REPO, skillMd, tempDir, writeTree } from "./helpers.js";
import { internalReferences } from "./internal-references.js";

const run = promisify(execFile);
const TSC = join(REPO, "node_modules/typescript/bin/tsc");
/** npm without this machine's settings, quiet, and from its cache where it can (the registry otherwise). */
const NPM_ENV = { ...process.env, npm_config_userconfig: "/dev/null", npm_config_update_notifier: "false", npm_config_fund: "false", npm_config_audit: "false" };

/** What packing needs: the sources of the build, what the package ships besides dist/, and the example catalogue. */
const PACK_INPUTS = ["package.json", "README.md", "LICENSE", "docs", "src", "scripts", "types", "tsconfig.json", "tsconfig.build.json", "skills"];

/** The product: the CLI, the API and the plugins, their declarations, the manifest's schema, the docs. */
const PRODUCT = /^package\/(LICENSE|README\.md|package\.json|dist\/(launch\.cjs|cli\.cjs|zod\.cjs|index\.js|vite\.js|esbuild\.js|manifest\.schema\.json)|dist\/(?!skills\/)[\w/-]+\.d\.ts|docs\/[\w/-]+\.md|types\/[\w-]+\.d\.ts)$/;

const SERVER = `import { agents, getPrompt, renderSkill, skillTool, type AgentId, type SkillToolInput } from "./dist/skills/index.js";

const agent: AgentId = "assistant";
const system: string = \`You are helpful.\\n\\n\${getPrompt(agent)}\`;
const tool = skillTool(agent, "anthropic");
const input: SkillToolInput<typeof agent> = { skill: "explain-code", args: "src/main.ts" };
const result: string = renderSkill(agent, input.skill, input.args);
console.log(system.length, tool?.input_schema.required, result, agents.assistant.skills.length);
`;

const TSCONFIGS: Record<string, object> = {
  "strict + nodenext": { compilerOptions: { strict: true, module: "nodenext", target: "es2022", noEmit: true, skipLibCheck: false } },
  "strict + bundler": { compilerOptions: { strict: true, module: "esnext", moduleResolution: "bundler", target: "es2022", noEmit: true, skipLibCheck: false } },
  "tsc --init": { extends: "./tsconfig.json", compilerOptions: { noEmit: true, skipLibCheck: false } },
};

let tarball = "";
let files: string[] = [];
let unpacked = "";
let project = "";
/** What `npm install` of the tarball printed. */
let installed = "";

beforeAll(async () => {
  // Packed from a copy, so its build never rewrites the dist/launch.cjs other tests are running.
  const source = await tempDir("skillbake-pack-");
  for (const input of PACK_INPUTS) await cp(join(REPO, input), join(source, input), { recursive: true });
  await symlink(join(REPO, "node_modules"), join(source, "node_modules"), "dir");
  // A developer's checkout after `npx skills build`: the example catalogue's bundle in dist/skills.
  await writeFile(join(source, "skills.config.json"), JSON.stringify({ agents: { coding: { skills: [{ root: "skills" }] } } }));
  await run(process.execPath, [CLI, "build"], { cwd: source });
  await run("npm", ["pack", "--silent", "--pack-destination", source], { cwd: source, env: NPM_ENV });
  tarball = join(source, (await readdir(source)).find((name) => name.endsWith(".tgz"))!);
  files = (await run("tar", ["-tzf", tarball])).stdout.trim().split("\n").sort();
  unpacked = await tempDir("skillbake-unpacked-");
  await run("tar", ["-xzf", tarball, "-C", unpacked]);

  project = await tempDir("skillbake-user-");
  await writeFile(join(project, "package.json"), `${JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module" }, null, 2)}\n`);
  const install = await run("npm", ["install", "--prefer-offline", "--save-dev", tarball], { cwd: project, env: NPM_ENV });
  installed = install.stdout + install.stderr;
  await run("npx", ["skills", "init"], { cwd: project, env: NPM_ENV });
  await run("npx", ["skills", "build"], { cwd: project, env: NPM_ENV });
  await writeFile(join(project, "server.ts"), SERVER);
  await run(process.execPath, [TSC, "--init"], { cwd: project });
}, 300_000);

describe("the packed package", () => {
  it("ships the built CLI, the API and its declarations, docs and LICENSE; not the sources", () => {
    expect(files).toEqual(expect.arrayContaining(["package/LICENSE", "package/README.md", "package/dist/launch.cjs", "package/dist/cli.cjs", "package/dist/zod.cjs", "package/dist/index.js", "package/dist/index.d.ts", "package/dist/manifest.schema.json", "package/docs/runtime.md"]));
    expect(files.filter((file) => file.startsWith("package/src/") || file.startsWith("package/test/"))).toEqual([]);
    // The packer's code cache is for its own Node: each install makes its own.
    expect(files.filter((file) => file.endsWith(".cache"))).toEqual([]);
  });

  it("ships only the product: no example bundle, no scripts (they build and test the repository, which it is not)", async () => {
    expect(existsSync(join(tarball, "../dist/skills/index.d.ts")), "the packed checkout had an example bundle").toBe(true);
    expect(files.filter((file) => !PRODUCT.test(file))).toEqual([]);
    const manifest = JSON.parse(await readFile(join(unpacked, "package/package.json"), "utf8"));
    expect(manifest.scripts).toBeUndefined();
    // Packing put the repository's own package.json back as it was.
    expect(await readFile(join(tarball, "../package.json"), "utf8")).toBe(await readFile(join(REPO, "package.json"), "utf8"));
  });

  it("installs with no install script of its own for the user to approve (npm 11.16+ lists them); esbuild's is explained in the README", async () => {
    const listed = [...installed.matchAll(/install-scripts +(@?[\w./-]+)@[\d.]+ \(/g)].map((match) => match[1]);
    // esbuild's postinstall is the one the README explains; an npm before 11.16 lists none.
    const [major, minor] = (await run("npm", ["--version"], { env: NPM_ENV })).stdout.split(".").map(Number);
    expect(listed).toEqual(major! > 11 || (major === 11 && minor! >= 16) ? ["esbuild"] : []);
  });

  it("names no design note, issue or round in any file it ships but the bundled code (scanned at its source)", async () => {
    const found: string[] = [];
    for (const file of files.filter((name) => !/\.c?js$/.test(name))) {
      found.push(...internalReferences(await readFile(join(unpacked, file), "utf8")).map((hit) => `${file}:${hit}`));
    }
    expect(files.filter((name) => name.endsWith(".d.ts")).length).toBeGreaterThan(5);
    expect(found).toEqual([]);
  });

  it("installs both bins, and `skills init` + `skills build` work in the new project", async () => {
    const version = (await run("npx", ["skillbake", "--version"], { cwd: project, env: NPM_ENV })).stdout;
    expect((await run("npx", ["skills", "-v"], { cwd: project, env: NPM_ENV })).stdout).toBe(version);
    expect(await readdir(join(project, "dist/skills"))).toEqual(expect.arrayContaining(["index.js", "index.d.ts", "manifest.json"]));
    // The manifest's $schema is the installed package's schema file, found from the manifest as an editor finds it.
    const { $schema } = JSON.parse(await readFile(join(project, "dist/skills/manifest.json"), "utf8"));
    expect(existsSync(resolve(project, "dist/skills", $schema))).toBe(true);
    // The CLI left its code cache beside itself for the next start (see launch.ts).
    expect(await readdir(join(project, "node_modules/skillbake/dist"))).toContain("cli.cjs.cache");
  });

  it("publishes a skill of several files as an archive, the compressor loaded from the installed package when first needed", async () => {
    const site = join(project, "site");
    await writeTree(site, {
      "skills.config.json": JSON.stringify({ agents: { site: { skills: [{ root: "skills" }], publish: { wellKnown: "public" } } } }),
      "skills/report/SKILL.md": skillMd("report"),
      "skills/report/scripts/run.sh": "echo run\n",
    });
    await run("npx", ["skills", "build"], { cwd: site, env: NPM_ENV });
    const listed = await run("tar", ["-tzf", join(site, "public/.well-known/agent-skills/report.tar.gz")]);
    expect(listed.stdout.trim().split("\n").sort()).toEqual(["SKILL.md", "scripts/run.sh"]);
  });

  it.each(Object.keys(TSCONFIGS))("type-checks the config and a server under %s, libraries included", async (name) => {
    const config = join(project, `tsconfig.${name.replace(/\W+/g, "-")}.json`);
    await writeFile(config, JSON.stringify({ ...TSCONFIGS[name], files: ["skills.config.ts", "server.ts"] }));
    const checked = await run(process.execPath, [TSC, "-p", config], { cwd: project }).catch((error: { stdout: string }) => ({ stdout: error.stdout }));
    expect(checked.stdout).toBe("");
  }, 120_000);
});
