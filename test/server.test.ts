import { spawn, type ChildProcess } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

let server: ChildProcess | undefined;
let base: string;
let out: string;

beforeAll(async () => {
  const dir = await tempDir();
  await writeTree(dir, {
    // A CommonJS project: the bundle is still loaded as ES modules.
    "package.json": JSON.stringify({ name: "app", type: "commonjs" }),
    "skills.config.json": JSON.stringify({ agents: { coding: { skills: [{ root: "skills", available: ["*"], inline: ["commit"] }] } } }),
    "skills/commit/SKILL.md": skillMd("commit", "Write a commit message.", "Commit: $ARGUMENTS"),
    "skills/test/SKILL.md": skillMd("test", "Write tests for a file.", "Test $0 with $1."),
  });
  expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
  out = join(dir, "dist/skills");
  // The server runs on the bundle alone: no skill folder, no config beside it.
  await rm(join(dir, "skills"), { recursive: true });

  const child = spawn(process.execPath, [join(REPO, "examples/server/server.mjs")], {
    env: { ...process.env, SKILLS_BUNDLE: join(out, "index.js"), PORT: "0", HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  server = child;
  base = await new Promise<string>((resolve, reject) => {
    let output = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      output += chunk;
      const listening = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
      if (listening) resolve(listening[1]!);
    });
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.on("exit", (code) => reject(new Error(`the server exited (${code}) before listening:\n${output}`)));
  });
});

afterAll(() => {
  server?.kill();
});

describe("examples/server", () => {
  it("serves the agent's system prompt, byte for byte prompts/<agent>.txt", async () => {
    const response = await fetch(`${base}/agents/coding/prompt`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe(await readFile(join(out, "prompts/coding.txt"), "utf8"));
  });

  it("serves the use_skill tool definition", async () => {
    const tool = await (await fetch(`${base}/agents/coding/tool`)).json();
    expect(tool).toMatchObject({ name: "use_skill", parameters: { properties: { skill: { enum: ["commit", "test"] } }, required: ["skill"] } });
  });

  it("answers a use_skill call with the skill's block, arguments applied", async () => {
    const response = await fetch(`${base}/agents/coding/use_skill`, { method: "POST", body: JSON.stringify({ skill: "test", args: `"src/a b.ts" vitest` }) });
    expect(response.status).toBe(200);
    expect(await response.text()).toMatch(/^<skill name="test" location="skills\/test\/SKILL\.md">\nReferences are relative to skills\/test\.\n\nTest src\/a b\.ts with vitest\.\n<\/skill>$/);
  });

  it("answers 404 naming the valid skills for an unknown one, 400 for a bad request", async () => {
    const unknown = await fetch(`${base}/agents/coding/use_skill`, { method: "POST", body: JSON.stringify({ skill: "deploy" }) });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: 'Unknown skill "deploy" for agent "coding". Its skills are: commit, test.' });
    expect((await fetch(`${base}/agents/nope/prompt`)).status).toBe(404);
    expect((await fetch(`${base}/agents/coding/use_skill`, { method: "POST", body: "{not json" })).status).toBe(400);
    expect((await fetch(`${base}/agents/coding/use_skill`, { method: "POST", body: "{}" })).status).toBe(400);
  });
});
