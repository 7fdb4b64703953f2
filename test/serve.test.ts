/**
 * Serving a real catalogue (test/fixtures/catalogue: anthropics/skills, text and binary files, nested folders) over
 * MCP with the real SDK: the server docs/runtime.md shows, run as written, and `skills serve` over stdio and HTTP.
 * The SDK's own client (`SkillsClient`) lists, gets and reads every file, verifying each against its entry.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { cp, readFile, symlink } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { join } from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { SkillsClient } from "@modelcontextprotocol/client/ext/skills";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLI, REPO, runCli, tempDir, writeTree } from "./helpers.js";

const CATALOGUE = join(REPO, "test/fixtures/catalogue/skills");
const docs = await readFile(join(REPO, "docs/runtime.md"), "utf8");
const serverSnippet = /<!-- serve: server -->\n```js\n([\s\S]*?)^```$/m.exec(docs)?.[1] ?? "";

/** Every file of the fixture catalogue, by skill and path. */
const EXPECTED: Record<string, string[]> = {
  "doc-coauthoring": ["SKILL.md"],
  "internal-comms": ["LICENSE.txt", "SKILL.md", "examples/3p-updates.md", "examples/company-newsletter.md", "examples/faq-answers.md", "examples/general-comms.md"],
  "web-artifacts-builder": ["LICENSE.txt", "SKILL.md", "scripts/bundle-artifact.sh", "scripts/init-artifact.sh", "scripts/shadcn-components.tar.gz"],
};

let project = "";
const clients: Client[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  project = await tempDir("skillbake-serve-");
  await cp(CATALOGUE, join(project, "skills"), { recursive: true });
  await writeTree(project, {
    "package.json": JSON.stringify({ type: "module" }),
    "skills.config.json": JSON.stringify({
      agents: { coding: { skills: [{ root: "skills" }], files: "embed" }, chat: { skills: [{ root: "skills", available: ["internal-comms"] }] } },
    }),
    "server.mjs": serverSnippet,
  });
  const built = await runCli(["build"], { cwd: project });
  expect(built.stderr).toContain("0 errors");
  // The SDK resolves from the repository's devDependencies, as from the project's own node_modules.
  await symlink(join(REPO, "node_modules/@modelcontextprotocol"), join(project, "node_modules/@modelcontextprotocol"), "dir");
  for (const name of ["zod", "ajv", "ajv-formats"]) await symlink(join(REPO, "node_modules", name), join(project, "node_modules", name), "dir");
}, 120_000);

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => {})));
  for (const child of children) child.kill();
});

async function connect(transport: StdioClientTransport | StreamableHTTPClientTransport): Promise<Client> {
  const client = new Client({ name: "skillbake-test", version: "1.0.0" });
  await client.connect(transport);
  clients.push(client);
  return client;
}

/** The status of a POST of `{}` to `url` with `headers` (node:http, which sends a Host header as given). */
function statusOf(url: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { method: "POST", headers: { "content-type": "application/json", ...headers } }, (response) => {
      response.resume();
      resolve(response.statusCode!);
    });
    request.once("error", reject);
    request.end("{}");
  });
}

const stdio = (args: string[]) => new StdioClientTransport({ command: process.execPath, args, cwd: project, stderr: "pipe" });

/** Everything a host does with the skills: every check the SDK's client makes passes, every byte is the file's. */
async function expectServesTheCatalogue(client: Client): Promise<void> {
  const skills = new SkillsClient(client);
  expect(skills.supported).toBe(true);
  expect(skills.directoryRead).toBe(true);
  const { skills: entries, invalid } = await skills.list();
  expect(invalid).toEqual([]);
  expect(entries.map((entry) => entry.uri).sort()).toEqual(Object.keys(EXPECTED).map((name) => `skill://${name}/SKILL.md`));
  for (const listed of entries) {
    const name = listed.frontmatter.name;
    const { skill } = await skills.get(listed.uri);
    expect(skill).toEqual(listed);
    expect(skill.resources).not.toBe("dynamic");
    const resources = skill.resources as { uri: string }[];
    expect(resources.map((resource) => resource.uri).sort()).toEqual(EXPECTED[name]!.map((path) => `skill://${name}/${path}`));
    for (const path of EXPECTED[name]!) {
      const file = await skills.read(skill, path);
      expect(file.verified).toBe(true);
      expect(Buffer.from(file.bytes).equals(await readFile(join(CATALOGUE, name, path))), `${name}/${path}`).toBe(true);
      // Text is sent as text, the binary asset as a blob.
      expect(file.text === undefined).toBe(path.endsWith(".tar.gz"));
    }
  }
  const root = await skills.readDirectory("skill://web-artifacts-builder");
  expect(root.resources.map((resource) => [resource.name, resource.mimeType])).toEqual([
    ["LICENSE.txt", "text/plain"],
    ["SKILL.md", "text/markdown"],
    ["scripts", "inode/directory"],
  ]);
  const scripts = await skills.readDirectory("skill://web-artifacts-builder/scripts");
  expect(scripts.resources.map((resource) => resource.name)).toEqual(["bundle-artifact.sh", "init-artifact.sh", "shadcn-components.tar.gz"]);
}

/** A URI outside the served set, however it is spelled, is JSON-RPC's invalid params. */
async function expectRefusesOtherUris(client: Client): Promise<void> {
  const outside = [
    "skill://web-artifacts-builder/../internal-comms/secret.md",
    "skill://web-artifacts-builder/scripts%2Finit-artifact.sh",
    "skill://Web-Artifacts-Builder/SKILL.md",
    "skill://web-artifacts-builder/skill.md",
    "skill://web-artifacts-builder/scripts",
    "skill://web-artifacts-builder/scripts/missing.sh",
    "skill://chat/SKILL.md",
    "file:///etc/passwd",
  ];
  for (const uri of outside) await expect(client.readResource({ uri }), uri).rejects.toMatchObject({ code: -32602 });
  await expect(new SkillsClient(client).get("skill://nope/SKILL.md")).rejects.toMatchObject({ code: -32602 });
}

/** The skill tool answers a call with the skill and a bad one as an `isError` result; each user-invocable skill is a prompt. */
async function expectToolAndPrompts(client: Client): Promise<void> {
  const { tools } = await client.listTools();
  expect(tools.map((tool) => tool.name)).toEqual(["use_skill"]);
  const called = (await client.callTool({ name: "use_skill", arguments: { skill: "doc-coauthoring", args: "the RFC" } })) as { content: { text: string }[]; isError?: boolean };
  expect(called.isError).toBeFalsy();
  expect(called.content[0]!.text).toMatch(/^<skill name="doc-coauthoring" location="skills\/doc-coauthoring\/SKILL.md">/);
  expect(called.content[0]!.text).toContain("ARGUMENTS: the RFC");
  const refused = (await client.callTool({ name: "use_skill", arguments: { skill: "doc-coauthoring", args: 42 } })) as { isError?: boolean };
  expect(refused.isError).toBe(true);
  const { prompts } = await client.listPrompts();
  expect(prompts.map((prompt) => prompt.name).sort()).toEqual(Object.keys(EXPECTED));
  expect(prompts.find((prompt) => prompt.name === "internal-comms")?.arguments).toEqual([expect.objectContaining({ name: "args", required: false })]);
  const prompt = await client.getPrompt({ name: "internal-comms", arguments: { args: "weekly update" } });
  expect(prompt.messages).toEqual([{ role: "user", content: { type: "text", text: expect.stringMatching(/^<skill name="internal-comms"[^]*ARGUMENTS: weekly update\n<\/skill>$/) } }]);
}

describe("the server docs/runtime.md shows, run as written", () => {
  it("is at most 10 lines of code, importing nothing of skillbake but the bundle", () => {
    expect(serverSnippet.split("\n").filter((line) => line.trim() !== "").length).toBeLessThanOrEqual(10);
    expect(serverSnippet).not.toMatch(/from "skillbake/);
  });

  it("serves every file of every skill, verified by the SDK's client; refuses other URIs; has the tool and the prompts", async () => {
    const client = await connect(stdio(["server.mjs"]));
    await expectServesTheCatalogue(client);
    await expectRefusesOtherUris(client);
    await expectToolAndPrompts(client);
  });
});

describe("skills serve", () => {
  it("over stdio: the same server, from the bundle alone", async () => {
    // The skill folders are gone: everything served comes from the bundle.
    const moved = await tempDir("skillbake-serve-only-");
    await cp(join(project, "dist"), join(moved, "dist"), { recursive: true });
    await symlink(join(project, "node_modules"), join(moved, "node_modules"), "dir");
    const client = await connect(new StdioClientTransport({ command: process.execPath, args: [CLI, "serve", "--agent", "coding", "--out", "dist/skills"], cwd: moved, stderr: "pipe" }));
    await expectServesTheCatalogue(client);
    await expectRefusesOtherUris(client);
    await expectToolAndPrompts(client);
  });

  it("over Streamable HTTP on 127.0.0.1, refusing requests that name another host", async () => {
    const child = spawn(process.execPath, [CLI, "serve", "--agent", "coding", "--http", "0"], { cwd: project, stdio: ["ignore", "ignore", "pipe"] });
    children.push(child);
    const url = await new Promise<string>((resolve, reject) => {
      let stderr = "";
      child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
        stderr += chunk;
        const found = /at (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr);
        if (found) resolve(found[1]!);
      });
      child.once("exit", (code) => reject(new Error(`skills serve exited ${code}: ${stderr}`)));
    });
    const client = await connect(new StreamableHTTPClientTransport(new URL(url)));
    await expectServesTheCatalogue(client);
    await expectToolAndPrompts(client);
    // A page on another site that resolves its own name to 127.0.0.1 (DNS rebinding) sends its own Host.
    expect(await statusOf(url, { host: "attacker.example" })).toBe(403);
    expect(await statusOf(url.replace(/\/mcp$/, "/other"), {})).toBe(404);
  });
});
