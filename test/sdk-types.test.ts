/**
 * docs/runtime.md's snippet for each SDK (a fenced block after `<!-- sdk: NAME -->`), compiled with tsc against
 * a real build's .d.ts and the SDK's own types (devDependencies): the tools `skillTool` gives fit each SDK's type
 * without a cast, under strict settings.
 */
import { execFile } from "node:child_process";
import { readFile, symlink } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { beforeAll, describe, expect, it } from "vitest";
import { REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const TSC = join(REPO, "node_modules/typescript/bin/tsc");
const SDKS = ["anthropic", "openai", "mcp", "ai"];

const docs = await readFile(join(REPO, "docs/runtime.md"), "utf8");
const snippets = new Map([...docs.matchAll(/<!-- sdk: ([\w-]+) -->\n```ts\n([\s\S]*?)^```$/gm)].map((match) => [match[1]!, match[2]!]));
/** The MCP server of "Serve skills over MCP", type-checked as TypeScript too: the module's types fit the SDK's. */
const serveSnippet = /<!-- serve: server -->\n```js\n([\s\S]*?)^```$/m.exec(docs)?.[1] ?? "";

let dir = "";
/** tsc's report over every snippet and the control file, in one run (each run loads the SDKs' types anew). */
let report = "";

const READONLY_SCHEMA = `import type { Tool } from "@anthropic-ai/sdk/resources/messages";
const schema = { type: "object", properties: {}, required: ["skill"] } as const;
export const tool: Tool = { name: "use_skill", input_schema: schema };
`;

beforeAll(async () => {
  dir = await tempDir("skillbake-sdk-");
  await writeTree(dir, {
    "package.json": JSON.stringify({ type: "module" }),
    "skills.config.json": JSON.stringify({ agents: { coding: { skills: [{ root: "skills" }], files: "embed" } } }),
    "skills/release-notes/SKILL.md": skillMd("release-notes"),
    "skills/review/SKILL.md": skillMd("review"),
  });
  expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
  // The SDKs resolve from the repository's devDependencies (node_modules itself holds the build cache).
  for (const name of ["@anthropic-ai", "@modelcontextprotocol", "@types", "ai", "openai"]) await symlink(join(REPO, "node_modules", name), join(dir, "node_modules", name), "dir");
  await writeTree(dir, { ...Object.fromEntries(SDKS.map((sdk) => [`${sdk}.ts`, snippets.get(sdk) ?? ""])), "serve.ts": serveSnippet, "readonly.ts": READONLY_SCHEMA });
  const args = ["--noEmit", "--strict", "--exactOptionalPropertyTypes", "--module", "nodenext", "--target", "es2022", "--skipLibCheck", "--types", "node"];
  report = await promisify(execFile)(process.execPath, [TSC, ...args, ...SDKS.map((sdk) => `${sdk}.ts`), "serve.ts", "readonly.ts"], { cwd: dir }).then(
    () => "",
    (error: { stdout: string }) => error.stdout,
  );
}, 120_000);

/** tsc's errors in one file. */
function errorsIn(file: string): string {
  return report
    .split(/\n(?=\S)/)
    .filter((error) => error.startsWith(`${file}(`))
    .join("\n");
}

describe("docs/runtime.md's SDK snippets type-check against each SDK", () => {
  it("has a snippet for each SDK, none with a cast of the tool", () => {
    expect([...snippets.keys()].sort()).toEqual([...SDKS].sort());
    for (const snippet of snippets.values()) expect(snippet).not.toMatch(/skillTool\([^)]*\)\s*(as\b|!)/);
  });

  it.each(SDKS)("%s", (sdk) => {
    expect(errorsIn(`${sdk}.ts`)).toBe("");
  });

  it("the MCP server of Serve skills over MCP", () => {
    expect(serveSnippet).toContain("mcpSkills");
    expect(errorsIn("serve.ts")).toBe("");
  });

  it("and a read-only schema, as the tool's type was before, fails (the check is real)", () => {
    expect(errorsIn("readonly.ts")).toContain("readonly");
  });
});

describe("the Anthropic snippet's model", () => {
  it("is one the installed SDK names, and not one it warns is deprecated", async () => {
    const model = /model: "([^"]+)"/.exec(snippets.get("anthropic") ?? "")?.[1];
    const sdk = join(REPO, "node_modules/@anthropic-ai/sdk/resources/messages");
    const known = /export type Model = ([^;]*);/.exec(await readFile(join(sdk, "messages.d.ts"), "utf8"))![1]!;
    const deprecated = /const DEPRECATED_MODELS = \{([^}]*)\}/.exec(await readFile(join(sdk, "messages.js"), "utf8"))![1]!;
    expect(known).toContain(`'${model}'`);
    expect(deprecated).toContain("'claude-"); // the list is still where this test reads it
    expect(deprecated).not.toContain(`'${model}'`);
  });
});
