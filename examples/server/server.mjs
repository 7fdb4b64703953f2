// A minimal agent server on the skill bundle: no framework, no skill folders, no YAML at run time.
//
//   npx skills build                  # writes dist/skills/ from the repo's skills.config.ts
//   node examples/server/server.mjs   # then:
//   curl localhost:3000/agents/coding/prompt
//   curl localhost:3000/agents/coding/tool
//   curl -X POST localhost:3000/agents/coding/use_skill -d '{"skill":"write-tests","args":"src/parse.ts"}'
//
// SKILLS_BUNDLE points at another bundle's index.js; PORT (default 3000, 0 for any free port) and HOST
// (default 127.0.0.1) say where to listen.
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";

const bundle = process.env.SKILLS_BUNDLE ? pathToFileURL(process.env.SKILLS_BUNDLE) : new URL("../../dist/skills/index.js", import.meta.url);
// A server that knows its bundle at build time writes `import { getPrompt, … } from "./dist/skills/index.js"`.
const { agents, getPrompt, renderSkill, skillTool } = await import(bundle.href);

/** Routes: method and path pattern → handler(params, body) → [status, body]. */
const routes = [
  ["GET", /^\/agents$/, () => [200, Object.keys(agents)]],
  // The system-prompt fragment, byte for byte prompts/<agent>.txt.
  ["GET", /^\/agents\/([^/]+)\/prompt$/, ([agent]) => [200, getPrompt(agent)]],
  // The tool definition to pass to the model API (Anthropic input_schema / OpenAI parameters); null if none.
  ["GET", /^\/agents\/([^/]+)\/tool$/, ([agent]) => [200, skillTool(agent)]],
  // What the server answers when the model calls use_skill: the skill's instructions, arguments applied.
  [
    "POST",
    /^\/agents\/([^/]+)\/use_skill$/,
    ([agent], body) => {
      const input = JSON.parse(body);
      if (typeof input?.skill !== "string") return [400, { error: 'expected JSON {"skill": "<name>", "args"?: "<text>"}' }];
      return [200, renderSkill(agent, input.skill, typeof input.args === "string" ? input.args : "")];
    },
  ],
];

const server = createServer(async (request, response) => {
  let body = "";
  for await (const chunk of request) body += chunk;
  const path = new URL(request.url, "http://localhost").pathname;
  const route = routes.find(([method, pattern]) => method === request.method && pattern.test(path));
  let status;
  let result;
  try {
    [status, result] = route ? route[2](route[1].exec(path).slice(1).map(decodeURIComponent), body) : [404, { error: `no route ${request.method} ${path}` }];
  } catch (error) {
    // The bundle throws "Unknown agent …" / "Unknown skill …", naming the valid ones.
    status = error instanceof SyntaxError ? 400 : error.message.startsWith("Unknown ") ? 404 : 500;
    result = { error: error.message };
  }
  const text = typeof result === "string";
  response.writeHead(status, { "content-type": text ? "text/plain; charset=utf-8" : "application/json" });
  response.end(text ? result : JSON.stringify(result));
});

server.listen(Number(process.env.PORT ?? 3000), process.env.HOST ?? "127.0.0.1", () => {
  const { address, port } = server.address();
  console.log(`skills server listening on http://${address}:${port}`);
});
