/**
 * `mcpSkills(agent)`, in the bundle modules of agents that serve their skills with the files embedded
 * (`files: "embed"`): what an MCP server built with `@modelcontextprotocol/server` takes to serve them, the skills
 * extension's source (SEP-2640), the agent's skill tool and its user-invocable skills as prompts, shaped for the
 * SDK's `McpServer` without importing it. Like helpers.ts, this file is compiled into text (scripts/embedded-text.mjs)
 * that src/bundle/module.ts copies after the helpers into a module, only one with such an agent: so it imports from
 * nothing but helpers.ts (whose code is already in the module), and uses no Node API and no global beyond the language.
 */
import { deepFreeze, type Runtime, type ServedFile, type SkillToolParameters } from "./helpers.js";

// Type aliases, not interfaces: the SDK's types have index signatures, which an interface is not assignable to.
/** A skill as `skills/list` and `skills/get` carry it: its SKILL.md's URI, its frontmatter as written, and every file with its digest. */
export type McpSkill = {
  uri: string;
  frontmatter: { name: string; description: string; [field: string]: unknown };
  resources: { uri: string; digest: string; size: number }[];
};

/** A file or folder of a skill, as `resources/directory/read` lists it (and `resources/list` each SKILL.md). */
export type McpResource = {
  uri: string;
  name: string;
  mimeType: string;
  size?: number;
  description?: string;
};

/** The skills extension's `SkillSource` over the embedded files: every URI is served exactly as the entries spell it. */
export type McpSkillSource = {
  list(params: { cursor?: string }): Promise<{ skills: McpSkill[]; nextCursor?: string }>;
  get(uri: string): Promise<McpSkill | undefined>;
  read(uri: string): Promise<{ text: string; mimeType: string } | { bytes: Uint8Array; mimeType: string } | undefined>;
  readDirectory(uri: string, params: { cursor?: string }): Promise<{ resources: McpResource[]; nextCursor?: string } | undefined>;
  listResources(): Promise<McpResource[]>;
};

/** A tool call's answer: the text, or the failure as an `isError` result (what the model reads). */
export type McpToolResult = {
  content: { type: "text"; text: string }[];
  isError?: boolean;
};

export type McpTool = {
  name: string;
  description: string;
  inputSchema: SkillToolParameters;
  call(input: unknown): McpToolResult;
};

/** A user-invocable skill as an MCP prompt: `get` renders its inline block with the arguments applied (`renderSkill`). */
export type McpPrompt = {
  name: string;
  description: string;
  argsSchema: { type: "object"; properties: { args: { type: "string"; description: string } }; additionalProperties: false };
  get(args: unknown): { description: string; messages: { role: "user"; content: { type: "text"; text: string } }[] };
};

export type McpSkills = {
  source: McpSkillSource;
  /** The skill tool, when the agent has one (`skillTool`): none, or one. */
  tools: McpTool[];
  prompts: McpPrompt[];
};

/** What `skills/list` and a directory read give at most per page. */
const PAGE_SIZE = 100;
const DIRECTORY = "inode/directory";

/** The agent's served skills, indexed by URI. */
interface Served {
  skills: readonly McpSkill[];
  byUri: ReadonlyMap<string, McpSkill>;
  files: ReadonlyMap<string, ServedFile>;
  folders: ReadonlyMap<string, readonly McpResource[]>;
  listed: readonly McpResource[];
}

/** `mcpSkills` over a module's runtime: a new object each call (yours to extend), over one frozen index per agent. */
export function createMcpSkills(runtime: Runtime): (agent: string) => McpSkills {
  const indexes = new Map<string, Served>();
  return (agent) => {
    let served = indexes.get(agent);
    if (!served) {
      served = indexServed(runtime.servedSkills(agent));
      indexes.set(agent, served);
    }
    const { skills, byUri, files, folders, listed } = served;
    const source: McpSkillSource = {
      list: async ({ cursor }) => {
        const page = pageOf(skills, cursor);
        return page.nextCursor === undefined ? { skills: page.items } : { skills: page.items, nextCursor: page.nextCursor };
      },
      get: async (uri) => byUri.get(uri),
      read: async (uri) => {
        const file = files.get(uri);
        if (!file) return undefined;
        const mimeType = mimeTypeOf(file.path);
        return "text" in file ? { text: file.text, mimeType } : { bytes: decodeBase64(file.base64), mimeType };
      },
      readDirectory: async (uri, { cursor }) => {
        const children = folders.get(uri);
        if (!children) return undefined;
        const page = pageOf(children, cursor);
        return page.nextCursor === undefined ? { resources: page.items } : { resources: page.items, nextCursor: page.nextCursor };
      },
      listResources: async () => [...listed],
    };
    const tool = runtime.skillTool(agent, "mcp");
    const tools: McpTool[] = tool ? [{ ...tool, call: (input) => callTool(runtime, agent, input) }] : [];
    const prompts = runtime.listUserInvocable(agent).map((skill): McpPrompt => {
      const hint = skill.fields["argument-hint"];
      const args = `Arguments, as a user would type them after /${skill.name}${typeof hint === "string" ? ` (${hint})` : ""}; may be empty.`;
      return {
        name: skill.name,
        description: skill.description,
        argsSchema: { type: "object", properties: { args: { type: "string", description: args } }, additionalProperties: false },
        get: (input) => {
          const given = typeof input === "object" && input !== null ? (input as { args?: unknown }).args : undefined;
          const text = runtime.renderSkill(agent, skill.name, typeof given === "string" ? given : "");
          return { description: skill.description, messages: [{ role: "user", content: { type: "text", text } }] };
        },
      };
    });
    return { source, tools, prompts };
  };
}

/** Answers a call of the skill tool; a call it refuses (a name it does not offer, input of the wrong shape) is an `isError` result. */
function callTool(runtime: Runtime, agent: string, input: unknown): McpToolResult {
  try {
    const answer = runtime.callSkillTool(agent, input);
    return { content: [{ type: "text", text: typeof answer === "string" ? answer : JSON.stringify(answer) }] };
  } catch (error) {
    return { content: [{ type: "text", text: error instanceof Error ? error.message : String(error) }], isError: true };
  }
}

/**
 * Each served skill's entry, at `skill://<name>/SKILL.md` with every file below `skill://<name>/` (segments
 * percent-encoded as the SDK encodes them, so each URI is already in the form a URL parser gives it), and each
 * folder's children for directory reads. Everything handed out is deep-frozen.
 */
function indexServed(served: ReturnType<Runtime["servedSkills"]>): Served {
  const skills: McpSkill[] = [];
  const files = new Map<string, ServedFile>();
  const children = new Map<string, Map<string, McpResource>>();
  const listed: McpResource[] = [];
  for (const { entry, frontmatter, files: embedded } of served) {
    const root = `skill://${encodeSegment(entry.name)}`;
    const resources: McpSkill["resources"] = [];
    for (const file of embedded) {
      let folder = root;
      const segments = file.path.split("/");
      segments.forEach((segment, depth) => {
        const uri = `${folder}/${encodeSegment(segment)}`;
        const isFile = depth === segments.length - 1;
        const siblings = children.get(folder) ?? new Map<string, McpResource>();
        children.set(folder, siblings);
        siblings.set(uri, isFile ? { uri, name: segment, mimeType: mimeTypeOf(segment), size: file.size } : { uri, name: segment, mimeType: DIRECTORY });
        if (isFile) {
          files.set(uri, file);
          resources.push({ uri, digest: `sha256:${file.sha256}`, size: file.size });
        }
        folder = uri;
      });
    }
    resources.sort((a, b) => compareUris(a.uri, b.uri));
    const skillMd = `${root}/SKILL.md`;
    skills.push({ uri: skillMd, frontmatter: frontmatter as McpSkill["frontmatter"], resources });
    listed.push({ uri: skillMd, name: entry.name, description: entry.description, mimeType: "text/markdown", size: files.get(skillMd)!.size });
  }
  const folders = new Map([...children].map(([uri, entries]) => [uri, [...entries.values()].sort((a, b) => compareUris(a.uri, b.uri))] as const));
  deepFreeze([skills, listed, [...folders.values()]]);
  return { skills, byUri: new Map(skills.map((skill) => [skill.uri, skill])), files, folders, listed };
}

/**
 * One page of `items` from `cursor` (the offset where it starts, as the last page's `nextCursor` gave it); a cursor
 * that is not one is the caller's mistake, answered as JSON-RPC's invalid params.
 */
function pageOf<T>(items: readonly T[], cursor: string | undefined): { items: T[]; nextCursor?: string } {
  const start = cursor === undefined ? 0 : /^(?:0|[1-9][0-9]{0,8})$/.test(cursor) ? Number(cursor) : Number.NaN;
  if (!(start <= items.length)) throw Object.assign(new Error(`Invalid cursor ${JSON.stringify(cursor)}`), { code: -32602 });
  const end = start + PAGE_SIZE;
  return end < items.length ? { items: items.slice(start, end), nextCursor: String(end) } : { items: items.slice(start) };
}

/** A path segment percent-encoded as the SDK encodes it (WHATWG URL's form, and `%`, `/`, `\` and the dots of `.` and `..`). */
function encodeSegment(segment: string): string {
  if (segment === "." || segment === "..") return segment.replaceAll(".", "%2E");
  return segment.replace(/[^\w!$&'()*+,.:;=@[\]|~-]/gu, (char) => encodeURIComponent(char));
}

/** Code-unit order: the SDK's order of entries and directory children. */
function compareUris(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The media types the SDK's own catalogue gives files, by extension. */
const MIME_TYPES: Record<string, string> = {
  md: "text/markdown",
  markdown: "text/markdown",
  txt: "text/plain",
  json: "application/json",
  yaml: "application/yaml",
  yml: "application/yaml",
  py: "text/x-python",
  sh: "application/x-sh",
  bash: "application/x-sh",
  js: "text/javascript",
  mjs: "text/javascript",
  ts: "text/typescript",
  html: "text/html",
  css: "text/css",
  csv: "text/csv",
  xml: "application/xml",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  pdf: "application/pdf",
};

function mimeTypeOf(path: string): string {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  const extension = dot > 0 ? name.slice(dot + 1).toLowerCase() : "";
  return Object.hasOwn(MIME_TYPES, extension) ? MIME_TYPES[extension]! : "application/octet-stream";
}

const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/** The bytes of standard, padded base64 (as the build writes it): a new array each call. */
function decodeBase64(text: string): Uint8Array {
  const values = new Uint8Array(128);
  for (let index = 0; index < BASE64.length; index++) values[BASE64.charCodeAt(index)] = index;
  const padding = text.endsWith("==") ? 2 : text.endsWith("=") ? 1 : 0;
  const bytes = new Uint8Array((text.length / 4) * 3 - padding);
  for (let index = 0, at = 0; index < text.length; index += 4) {
    const group = (values[text.charCodeAt(index)]! << 18) | (values[text.charCodeAt(index + 1)]! << 12) | (values[text.charCodeAt(index + 2)]! << 6) | values[text.charCodeAt(index + 3)]!;
    bytes[at++] = group >> 16;
    if (at < bytes.length) bytes[at++] = (group >> 8) & 255;
    if (at < bytes.length) bytes[at++] = group & 255;
  }
  return bytes;
}
