import { createRequire } from "node:module";
import { resolve } from "node:path";
import { servedModule } from "../../bundle/served.js";
import { AGENT_ID_PATTERN, importModule, loadConfig } from "../../compile/config.js";
import { PACKAGE_VERSION } from "../../compile/version.js";
import type { McpSkills } from "../../runtime/serve.js";
import { MissingDependencyError, UsageError, write, type Command, type CommandIO, type FlagValues } from "./command.js";

type ServerSdk = typeof import("@modelcontextprotocol/server");
type SkillsSdk = typeof import("@modelcontextprotocol/server/ext/skills");
type StdioSdk = typeof import("@modelcontextprotocol/server/stdio");

/** What the MCP endpoint is under `--http`. */
const HTTP_PATH = "/mcp";
/** Hosts that mean this machine only: there, requests must name it too (no DNS rebinding from a web page). */
const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1"]);

export const serveCommand: Command = {
  name: "serve",
  summary: "serve an agent's skills over MCP from the built bundle (stdio, or HTTP)",
  help: `Usage: skills serve --agent ID [--http PORT [--host HOST]] [--config FILE] [--out DIR]

An MCP server over the built bundle for one agent whose config sets \`files: "embed"\`: the MCP skills
extension (skills/list, skills/get, resources/read of skill://<name>/<path>, resources/directory/read),
the agent's skill tool, and its user-invocable skills as prompts. It reads the bundle only, never the
skill folders: run \`skills build\` (or \`skills build --watch\`) after editing skills.

Needs the MCP SDK in the project: npm install @modelcontextprotocol/server

Options:
  --agent ID       the agent whose skills to serve (required)
  --http PORT      serve Streamable HTTP at http://HOST:PORT${HTTP_PATH} instead of stdio (0: any free port)
  --host HOST      the address to listen on with --http (default 127.0.0.1, this machine only)
  --config FILE    config file whose outDir holds the bundle (default: skills.config.* in the current folder)
  --out DIR        serve the bundle in DIR instead of the config's outDir

Examples:
  skills serve --agent coding                # stdio: what an MCP host starts
  skills serve --agent coding --http 3001    # http://127.0.0.1:3001${HTTP_PATH}`,
  options: { agent: { type: "string" }, http: { type: "string" }, host: { type: "string" }, config: { type: "string" }, out: { type: "string" } },
  maxPositionals: 0,
  run: (values, _positionals, io) => serve(values, io),
};

async function serve(values: FlagValues, io: CommandIO): Promise<number> {
  const agent = values.agent;
  if (typeof agent !== "string") throw new UsageError("--agent ID is required: the agent whose skills to serve");
  if (!AGENT_ID_PATTERN.test(agent)) throw new UsageError("--agent takes an agent id: lowercase letters, digits and hyphens, starting with a letter");
  const port = values.http === undefined ? undefined : portOf(values.http as string);
  if (values.host !== undefined && port === undefined) throw new UsageError("--host goes with --http PORT (stdio listens on no address)");
  const outDir = typeof values.out === "string" ? resolve(io.cwd, values.out) : await configuredOutDir(values.config as string | undefined, io.cwd);
  const { source, served } = servedModule(outDir, agent);
  const sdk = loadSdk();
  // The module as the manifest records it, not the file again: nothing can swap it between the check and the import.
  const module = (await importModule(`data:text/javascript;base64,${source.toString("base64")}`)) as { mcpSkills(agent: string): McpSkills };
  const skills = module.mcpSkills(agent);
  const extension = new sdk.skills.SkillsExtension({ source: skills.source });
  const newServer = () => {
    const server = new sdk.server.McpServer({ name: `${agent}-skills`, version: PACKAGE_VERSION });
    extension.attach(server);
    for (const tool of skills.tools) server.registerTool(tool.name, { description: tool.description, inputSchema: sdk.server.fromJsonSchema(tool.inputSchema) }, tool.call);
    for (const prompt of skills.prompts) server.registerPrompt(prompt.name, { description: prompt.description, argsSchema: sdk.server.fromJsonSchema(prompt.argsSchema) }, prompt.get);
    return server;
  };
  const what = `agent "${agent}": ${served.length} ${served.length === 1 ? "skill" : "skills"}, ${skills.tools.length === 0 ? "no skill tool" : "the skill tool"}, ${skills.prompts.length} ${skills.prompts.length === 1 ? "prompt" : "prompts"}`;
  const stopped = untilStopped(port === undefined ? process.stdin : undefined);
  if (port === undefined) {
    const connection = sdk.stdio.serveStdio(newServer);
    write(io.stderr, `skills serve: ${what}, over stdio`);
    await stopped;
    await connection.close();
    return 0;
  }
  const host = typeof values.host === "string" ? values.host : "127.0.0.1";
  const handler = sdk.server.createMcpHandler(newServer);
  const guard = LOOPBACK.has(host) ? localOnly(sdk.server) : undefined;
  // Loaded here: requiring node:http cost every other command ~5 ms of its start.
  const { listenHttp } = await import("../http.js");
  const listening = await listenHttp((request) => guard?.(request) ?? handler.fetch(request), { host, port, path: HTTP_PATH });
  write(io.stderr, `skills serve: ${what}, at ${listening.url} (Ctrl-C stops)`);
  await stopped;
  await handler.close();
  await listening.close();
  return 0;
}

/** The bundle folder the config names (its `outDir`, relative to the config's folder). */
async function configuredOutDir(config: string | undefined, cwd: string): Promise<string> {
  const loaded = await loadConfig(config, cwd, { readOnly: true });
  return resolve(loaded.dir, loaded.config.outDir);
}

function portOf(text: string): number {
  if (!/^[0-9]{1,5}$/.test(text) || Number(text) > 65535) throw new UsageError(`--http takes a port number from 0 to 65535, not "${text.slice(0, 20)}"`);
  return Number(text);
}

/** A loopback server answers only requests that name this machine, from no web page but a local one (DNS rebinding). */
function localOnly(server: ServerSdk): (request: Request) => Promise<Response> | undefined {
  return (request) => {
    const refused = server.hostHeaderValidationResponse(request, server.localhostAllowedHostnames()) ?? server.originValidationResponse(request, server.localhostAllowedOrigins());
    return refused && Promise.resolve(refused);
  };
}

/** Resolves on SIGINT or SIGTERM, or when `input` ends (a stdio client closed the pipe). */
function untilStopped(input: NodeJS.ReadableStream | undefined): Promise<void> {
  return new Promise((done) => {
    process.once("SIGINT", () => done()).once("SIGTERM", () => done());
    input?.once("end", () => done()).once("close", () => done());
  });
}

/** The MCP SDK, an optional peer dependency, loaded only by this command; a missing or too old one is one line. */
function loadSdk(): { server: ServerSdk; skills: SkillsSdk; stdio: StdioSdk } {
  const require = createRequire(import.meta.url);
  try {
    return {
      server: require("@modelcontextprotocol/server") as ServerSdk,
      skills: require("@modelcontextprotocol/server/ext/skills") as SkillsSdk,
      stdio: require("@modelcontextprotocol/server/stdio") as StdioSdk,
    };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "MODULE_NOT_FOUND" || code === "ERR_PACKAGE_PATH_NOT_EXPORTED") {
      throw new MissingDependencyError("skills serve needs the MCP SDK, @modelcontextprotocol/server 2.4 or later: npm install @modelcontextprotocol/server");
    }
    throw error;
  }
}
