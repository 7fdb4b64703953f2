import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_LOAD_TIMEOUT_MS } from "../src/compile/config.js";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const VALID = `export default { agents: { main: { skills: [{ root: "skills" }] } } };\n`;

/** Runs `skills check` on a project whose config is `name` with `text`; the run must fail with one line, no stack. */
async function failingConfig(name: string, text: string, tree: Record<string, string> = {}) {
  const dir = await tempDir();
  await writeTree(dir, { [name]: text, "skills/alpha/SKILL.md": skillMd("alpha"), ...tree });
  const run = await runCli(["check"], { cwd: dir });
  expect(run.code).toBe(2);
  expect(run.stderr.trim().split("\n"), run.stderr).toHaveLength(1);
  expect(run.stderr).not.toMatch(/\n\s+at /);
  // Loading writes nothing beside the config, whatever happened.
  expect((await readdir(dir)).filter((entry) => entry.startsWith("."))).toEqual([]);
  return { dir, message: run.stderr.trim() };
}

describe("a config that throws: exit 2 naming the file and line that threw", () => {
  it("TypeScript, at the top level (mapped back through the source map)", async () => {
    const { dir, message } = await failingConfig("skills.config.ts", `const limit: number = 1;\n\nthrow new Error("no skills today");\n${VALID}`);
    expect(message).toBe(`skills: ${join(dir, "skills.config.ts")}:3:7: the config failed to load: no skills today`);
  });

  it("TypeScript, inside a local file it imports", async () => {
    const { dir, message } = await failingConfig("skills.config.ts", `import { roots } from "./roots";\n\nroots();\n${VALID}`, {
      "roots.ts": `export function roots(): string[] {\n  throw new TypeError("roots are not set");\n}\n`,
    });
    expect(message).toBe(`skills: ${join(dir, "roots.ts")}:2:9: the config failed to load: roots are not set`);
  });

  it("JavaScript", async () => {
    const { dir, message } = await failingConfig("skills.config.mjs", `const limit = 1;\nthrow new Error("no skills today");\n${VALID}`);
    expect(message).toBe(`skills: ${join(dir, "skills.config.mjs")}:2:7: the config failed to load: no skills today`);
  });

  it("JavaScript with a syntax error: an ES module where esbuild finds it, CommonJS where Node does", async () => {
    const { dir, message } = await failingConfig("skills.config.mjs", `const limit = 1;\nconst roots = ;\n${VALID}`);
    expect(message).toBe(`skills: ${join(dir, "skills.config.mjs")}:2:15: Unexpected ";"`);
    const commonJs = await failingConfig("skills.config.js", `const limit = 1;\nconst roots = ;\nmodule.exports = {};\n`);
    expect(commonJs.message).toBe(`skills: ${join(commonJs.dir, "skills.config.js")}:2:15: the config failed to load: Unexpected token ';'`);
  });

  it("JavaScript beside a package.json that cannot be read: loaded by Node, which names it", async () => {
    const { dir, message } = await failingConfig("skills.config.js", VALID, { "package.json": "{ not json" });
    expect(message).toMatch(new RegExp(`^skills: ${join(dir, "skills.config.js")}: the config failed to load: Invalid package config ${join(dir, "package.json")}`));
  });

  it("a default export whose getter throws while the config is validated", async () => {
    const { dir, message } = await failingConfig("skills.config.ts", `export default {\n  get agents() { throw new Error("getter boom"); },\n};\n`);
    expect(message).toBe(`skills: ${join(dir, "skills.config.ts")}:2:24: the config failed to load: getter boom`);
  });

  it("a default export that is a rejected promise", async () => {
    const { dir, message } = await failingConfig("skills.config.ts", `// the config comes from elsewhere\nexport default Promise.reject(new Error("offline"));\n`);
    expect(message).toBe(`skills: ${join(dir, "skills.config.ts")}:2:31: the config failed to load: offline`);
  });

  it("a thrown value that is not an error: shown as written (no stack, so no line)", async () => {
    const thrownObject = await failingConfig("skills.config.mjs", `throw { code: 42, reason: "nope" };\n${VALID}`);
    expect(thrownObject.message).toBe(`skills: ${join(thrownObject.dir, "skills.config.mjs")}: the config failed to load: { code: 42, reason: 'nope' }`);
    const thrownString = await failingConfig("skills.config.ts", `throw "no config today";\n${VALID}`);
    expect(thrownString.message).toBe(`skills: ${join(thrownString.dir, "skills.config.ts")}: the config failed to load: no config today`);
  });
});

describe("a config that imports what is not there: exit 2 at the import", () => {
  it("TypeScript importing a package that is not installed", async () => {
    const { dir, message } = await failingConfig("skills.config.ts", `// packages stay external\nimport shared from "@acme/skills-shared";\nexport default { agents: { main: { skills: [{ root: shared }] } } };\n`);
    expect(message).toBe(`skills: ${join(dir, "skills.config.ts")}:2:20: the config failed to load: Cannot find package '@acme/skills-shared'`);
  });

  it("JavaScript importing a package that is not installed, and a file that does not exist", async () => {
    const missingPackage = await failingConfig("skills.config.mjs", `\nimport shared from "@acme/skills-shared";\n${VALID}`);
    expect(missingPackage.message).toBe(`skills: ${join(missingPackage.dir, "skills.config.mjs")}:2:20: the config failed to load: Cannot find package '@acme/skills-shared'`);
    const missingFile = await failingConfig("skills.config.mjs", `\n\nimport { roots } from "./roots.js";\n${VALID}`);
    expect(missingFile.message).toBe(`skills: ${join(missingFile.dir, "skills.config.mjs")}:3:23: Could not resolve "./roots.js"`);
    const commonJs = await failingConfig("skills.config.js", `\n\nconst { roots } = require("./roots.js");\nmodule.exports = {};\n`);
    expect(commonJs.message).toBe(`skills: ${join(commonJs.dir, "skills.config.js")}:3:27: the config failed to load: Cannot find module './roots.js'`);
  });

  it("TypeScript importing a local file that does not exist (esbuild reports it)", async () => {
    const { dir, message } = await failingConfig("skills.config.ts", `\nimport { roots } from "./roots";\nexport default { agents: { main: { skills: roots } } };\n`);
    expect(message).toBe(`skills: ${join(dir, "skills.config.ts")}:2:23: Could not resolve "./roots"`);
  });
});

describe("a config that exports the wrong shape: exit 2 at the export", () => {
  it.each([
    ["a number", "skills.config.ts", `const count = 3;\nexport default count;\n`, ":2:1: the default export is a number, not a config object; write `export default defineConfig({ agents: { … } })`"],
    ["a function", "skills.config.mjs", `\nexport default function config() {\n  return {};\n}\n`, ":2:1: the default export is a function, not a config object; write `export default defineConfig({ agents: { … } })`"],
    ["a list", "skills.config.json", `[{ "agents": {} }]\n`, `:1:1: the config is a list, not a config object; write \`{ "agents": { … } }\``],
  ])("%s", async (_shape, name, text, expected) => {
    const { dir, message } = await failingConfig(name, text);
    expect(message).toBe(`skills: ${join(dir, name)}${expected}`);
  });

  it("no default export", async () => {
    const { dir, message } = await failingConfig("skills.config.ts", `export const config = {};\n`);
    expect(message).toBe(`skills: ${join(dir, "skills.config.ts")}: the config has no default export; write \`export default defineConfig({ … })\``);
  });
});

describe(`a config that never finishes loading: exit 2 after ${CONFIG_LOAD_TIMEOUT_MS / 1000} s`, () => {
  it.concurrent("a top-level await that never settles (it used to end the run silently with exit 0)", async () => {
    const { dir, message } = await failingConfig("skills.config.ts", `// waits for nothing\nconst roots = await new Promise<string[]>(() => {});\n${VALID}`);
    expect(message).toBe(`skills: ${join(dir, "skills.config.ts")}:2:1: the config did not finish loading within 10 s: a top-level \`await\` never settles`);
  });

  it.concurrent("a default export that is a promise that never settles", async () => {
    const { dir, message } = await failingConfig("skills.config.mjs", `// waits for nothing\nexport default new Promise(() => {});\n`);
    expect(message).toBe(`skills: ${join(dir, "skills.config.mjs")}:2:1: the config did not finish loading within 10 s: its default export is a promise that never settles`);
  });

  it.concurrent("a config that leaves a timer running does not keep the CLI alive", async () => {
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.ts": `setInterval(() => {}, 1000);\n${VALID}`, "skills/alpha/SKILL.md": skillMd("alpha") });
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(0);
    expect(run.stderr).toContain("Checked 1 agent, 1 skill");
  });
});
