/**
 * The runtime of the generated bundle modules: `getPrompt`, `getSkill`, `findSkill`, `renderSkill`,
 * `expandCommand`, `listUserInvocable`, `skillTool`, `callSkillTool` and the `SkillError` they throw. This file is the only source of that code. It is type-checked and tested
 * as TypeScript here, and `scripts/embedded-text.mjs` compiles it once per CLI build into the text that
 * `src/bundle/module.ts` copies verbatim into every `index.js` and `agents/<id>.js`. So it must stay self-contained:
 * no imports (type-only ones vanish), no Node APIs, no globals beyond the language.
 * `src/compile/render.ts` renders inline blocks with the same functions, so a prompt and `renderSkill` cannot disagree.
 */

/** `function`: the config's own format function wrote the prompt. */
export type FormatName = "pi" | "markdown" | "function";
export type SkillMode = "available" | "inline";

/** One file of a skill's folder: its path relative to the folder (`/`-separated) and its size in bytes. */
export interface SkillFolderFile {
  path: string;
  size: number;
}

/** A SKILL.md as the bundle stores it, once for every agent that selects it. */
export interface SkillFile {
  name: string;
  description: string;
  /** SKILL.md relative to the config folder. */
  file: string;
  location: string;
  baseDir: string;
  /** sha256 of the SKILL.md bytes. */
  hash: string;
  fields: Record<string, unknown>;
  extra: Record<string, unknown>;
  body: string;
  /** Every file of the skill folder, SKILL.md included, in path order (the manifest's `files`, less the hashes). */
  files: SkillFolderFile[];
  /** When an agent of the module serves the skill with its files embedded (`files: "embed"`): what it serves. */
  served?: ServedData;
}

/** A served skill's frontmatter as written and every file of its folder, embedded. */
export interface ServedData {
  frontmatter: Record<string, unknown>;
  files: ServedFile[];
}

/** One embedded file of a served skill: UTF-8 text as a string, anything else as base64; with the manifest's size and sha256. */
export type ServedFile = { path: string; size: number; sha256: string } & ({ text: string } | { base64: string });

/** A skill as one agent sees it. */
export interface SkillEntry extends Omit<SkillFile, "served"> {
  mode: SkillMode;
  /** Whether the agent's catalogue lists it: false for an inline skill, a `disable-model-invocation` one, or one the budget dropped. */
  listed: boolean;
  /** Index of the source in the agent's `skills` list. */
  source: number;
  /** Totals of `files`, and per top-level folder: the manifest's `structure`. */
  structure: SkillStructure;
  /** The frontmatter as written, for a skill the agent serves with its files embedded (`files: "embed"`). */
  frontmatter?: Record<string, unknown>;
}

/** The folder-structure summary: totals, and counts per top-level folder (`references`, `scripts`…). */
export interface SkillStructure {
  files: number;
  bytes: number;
  folders: Record<string, { files: number; bytes: number }>;
}

/**
 * The skill tool's shape: `use_skill` takes `{ skill, args? }` and answers the
 * skill's inline block with the arguments applied; `read_skill` takes `{ name }` and answers the inline block;
 * `Skill` takes `{ name, args? }` and answers `{ name, base_dir, content }`, the body with the arguments applied.
 */
export type ToolStyle = "use_skill" | "read_skill" | "Skill";

/** What `callSkillTool` answers in the `Skill` style. */
export interface SkillToolAnswer {
  name: string;
  base_dir: string;
  content: string;
}

export type SkillErrorCode = "NOT_FOUND" | "INVALID_PARAM";

/** What a lookup throws: `NOT_FOUND` for an unknown agent or skill, `INVALID_PARAM` for an argument of the wrong type or an empty name, or arguments that would make a skill too long. */
export class SkillError extends Error {
  override name = "SkillError";
  constructor(
    readonly code: SkillErrorCode,
    message: string,
  ) {
    super(message);
  }
}
Object.freeze(SkillError);
Object.freeze(SkillError.prototype);

/** What an agent needs before any skill is looked up: enough for `getPrompt` and `skillTool`. */
export interface AgentData {
  format: FormatName;
  /** The agent's `description` from the config. */
  description?: string;
  prompt: string;
  /** With `catalogue: "tool"`: the skill tool's description, the catalogue in it. */
  toolDescription?: string;
  /** Skill names the model may invoke (no `disable-model-invocation: true`, not dropped by the budget), unique, in prompt order. */
  modelInvocable: string[];
  /** The agent's skill tool when not the default `use_skill` one: its style and the name the model calls it by. */
  tool?: { style: ToolStyle; name: string };
  /** "embed": the files of the skills it serves are in the module (rows marked `served`). */
  files?: "embed";
}

/**
 * What finds a skill, loaded on the first lookup (see `createRuntime`), and each SKILL.md's data: `files[i]()`
 * gives file `i`'s whole record, its body included. The modules give each record as a function of its own, so the
 * engine compiles one skill's data only when a lookup reads it.
 */
export interface SkillTable {
  /** Each file's skill name, by file index: enough to find a skill by name without building any. */
  names: string[];
  files: readonly (() => SkillFile)[];
  /**
   * `location` and `baseDir` are set where the agent sees the file elsewhere than `files` says (per-agent staging);
   * `served` on the skills an agent with `files: "embed"` serves.
   */
  agents: Record<string, { file: number; listed: boolean; mode: SkillMode; source: number; location?: string; baseDir?: string; served?: true }[]>;
}

export interface Agent {
  readonly id: string;
  readonly format: FormatName;
  readonly description?: string;
  readonly prompt: string;
  readonly skills: readonly SkillEntry[];
}

/** The JSON Schema of the skill tool's input. Plain mutable JSON, so it fits the SDKs' own types. */
export type SkillToolParameters = {
  type: "object";
  properties: Record<string, { type: "string"; enum?: string[]; description: string }>;
  required: string[];
  additionalProperties: false;
};

/** The tool in the neutral shape: name, description and the input's JSON Schema. */
export type SkillTool = { name: string; description: string; parameters: SkillToolParameters };

/** The tool APIs `skillTool` can shape the tool for. */
export type ToolDialect = "anthropic" | "openai" | "openai-responses" | "mcp";
const TOOL_DIALECTS: readonly ToolDialect[] = ["anthropic", "openai", "openai-responses", "mcp"];

/** The tool as each dialect's API takes it: Anthropic Messages, OpenAI Chat Completions, OpenAI Responses, MCP. */
export type ToolIn<D extends ToolDialect | undefined> = D extends "anthropic"
  ? { name: string; description: string; input_schema: SkillToolParameters }
  : D extends "openai"
    ? { type: "function"; function: SkillTool }
    : D extends "openai-responses"
      ? { type: "function"; name: string; description: string; parameters: SkillToolParameters; strict: false }
      : D extends "mcp"
        ? { name: string; description: string; inputSchema: SkillToolParameters }
        : SkillTool;

export interface RenderOptions {
  /** Append the skill folder's files (see `describeFolder`). */
  files?: boolean;
}

export interface Runtime {
  readonly agents: Readonly<Record<string, Agent>>;
  getPrompt(agent: string): string;
  getSkill(agent: string, name: string): SkillEntry;
  findSkill(agent: string, name: string): SkillEntry | undefined;
  renderSkill(agent: string, name: string, args?: string, options?: RenderOptions): string;
  expandCommand(agent: string, text: string): string | undefined;
  listUserInvocable(agent: string): readonly SkillEntry[];
  skillTool<D extends ToolDialect | undefined = undefined>(agent: string, dialect?: D): ToolIn<D> | null;
  callSkillTool(agent: string, input: unknown): string | SkillToolAnswer;
  /** The skills the agent serves with their files embedded, in prompt order; none for an agent without `files: "embed"`. Not a module export: `mcpSkills` serves them. */
  servedSkills(agent: string): readonly ServedSkill[];
}

/** A skill an agent serves: its entry, and what the module embeds of it. */
export interface ServedSkill extends ServedData {
  entry: SkillEntry;
}

/**
 * The bundle's API over its data. `loadSkills` returns the skill table; it runs on the first lookup, not at
 * import: a module of thousands of skills is then parsed lazily by the JS engine, and importing it to call
 * `getPrompt` costs little more than reading the file. A skill's entry is built, and its record read, on its own
 * first lookup: one `getSkill` of ten thousand skills compiles one record, not all. Everything handed out is
 * deep-frozen.
 */
export function createRuntime(agentData: Record<string, AgentData>, loadSkills: () => SkillTable): Runtime {
  const ids = Object.keys(agentData);
  let table: SkillTable | undefined;
  /** Each file's record once read: agents that select the same SKILL.md share it. */
  const records: SkillFile[] = [];
  /** Per agent: its skill rows, each name's first position, the entries built so far, and the whole list once asked for. */
  const agentSkills = new Map<string, { rows: SkillTable["agents"][string]; byName: Map<string, number>; built: SkillEntry[]; entries?: readonly SkillEntry[] }>();
  const skillsOf = (agent: string) => {
    table ??= loadSkills();
    let skills = agentSkills.get(agent);
    if (!skills) {
      const { names, agents } = table;
      const rows = agents[agent]!;
      const byName = new Map<string, number>();
      // A name selected from several sources is listed twice; the first (the one the prompt lists first) wins.
      rows.forEach((row, position) => {
        const name = names[row.file]!;
        if (!byName.has(name)) byName.set(name, position);
      });
      skills = { rows, byName, built: [] };
      agentSkills.set(agent, skills);
    }
    return skills;
  };
  const entryAt = (agent: string, position: number): SkillEntry => {
    const skills = skillsOf(agent);
    let entry = skills.built[position];
    if (!entry) {
      const { file, listed, mode, source, location, baseDir, served } = skills.rows[position]!;
      const { body, served: embedded, ...shared } = (records[file] ??= table!.files[file]!());
      const elsewhere = location === undefined ? {} : { location, baseDir: baseDir! };
      const written = served && embedded ? { frontmatter: embedded.frontmatter } : {};
      entry = deepFreeze({ ...shared, ...elsewhere, body, mode, listed, source, structure: summarizeStructure(shared.files), ...written });
      skills.built[position] = entry;
    }
    return entry;
  };
  const entryNamed = (agent: string, name: string): SkillEntry | undefined => {
    const position = skillsOf(agent).byName.get(name);
    return position === undefined ? undefined : entryAt(agent, position);
  };
  const entriesOf = (agent: string): readonly SkillEntry[] => {
    const skills = skillsOf(agent);
    return (skills.entries ??= Object.freeze(skills.rows.map((_, position) => entryAt(agent, position))));
  };

  const dataOf = (agent: string): AgentData => {
    checkName("agent", agent);
    if (Object.hasOwn(agentData, agent)) return agentData[agent]!;
    throw new SkillError("NOT_FOUND", `Unknown agent ${JSON.stringify(agent)}. This bundle has: ${listNames(ids)}.`);
  };

  const getPrompt = (agent: string): string => dataOf(agent).prompt;

  const getSkill = (agent: string, name: string): SkillEntry => {
    dataOf(agent);
    checkName("skill name", name);
    const entry = entryNamed(agent, name);
    if (entry) return entry;
    const { byName } = skillsOf(agent);
    throw new SkillError(
      "NOT_FOUND",
      byName.size === 0
        ? `Unknown skill ${JSON.stringify(name)}: agent "${agent}" has no skills.`
        : `Unknown skill ${JSON.stringify(name)} for agent "${agent}". Its skills are: ${listNames([...byName.keys()])}.`,
    );
  };

  const findSkill = (agent: string, name: string): SkillEntry | undefined => {
    if (typeof agent !== "string" || !Object.hasOwn(agentData, agent) || typeof name !== "string") return undefined;
    return entryNamed(agent, name);
  };

  const renderSkill = (agent: string, name: string, args: string = "", options: RenderOptions = {}): string => {
    const skill = getSkill(agent, name);
    if (typeof args !== "string") throw new SkillError("INVALID_PARAM", `The arguments are a string, not ${describe(args)}.`);
    if (typeof options !== "object" || options === null || Array.isArray(options)) throw new SkillError("INVALID_PARAM", `The options are an object, not ${describe(options)}.`);
    if (options.files !== undefined && typeof options.files !== "boolean") throw new SkillError("INVALID_PARAM", `The "files" option is true or false, not ${describe(options.files)}.`);
    const format = dataOf(agent).format;
    const body = applyArguments(skill.body, args);
    return renderInlineBlock(format, { ...skill, body: options.files ? `${body}\n\n${describeFolder(skill.files, format)}` : body });
  };

  const isUserInvocable = (skill: SkillEntry) => skill.fields["user-invocable"] !== false;
  const userInvocable = new Map<string, readonly SkillEntry[]>();
  const listUserInvocable = (agent: string): readonly SkillEntry[] => {
    dataOf(agent);
    let list = userInvocable.get(agent);
    if (!list) {
      list = Object.freeze([...skillsOf(agent).byName.values()].map((position) => entryAt(agent, position)).filter(isUserInvocable));
      userInvocable.set(agent, list);
    }
    return list;
  };

  const expandCommand = (agent: string, text: string): string | undefined => {
    dataOf(agent);
    if (typeof text !== "string") throw new SkillError("INVALID_PARAM", `A command is a string, not ${describe(text)}.`);
    const command = /^\/(?:skill:)?(\S+)(?:\s+([^]*))?$/.exec(text);
    const skill = command ? entryNamed(agent, command[1]!) : undefined;
    if (!skill || !isUserInvocable(skill)) return undefined;
    return `[Skill: ${skill.name}]\n\n${applyArguments(skill.body, command![2] ?? "")}`;
  };

  // A new object each call, not frozen: the caller may add to it (cache_control, say), as the SDKs' types allow.
  const skillTool = <D extends ToolDialect | undefined = undefined>(agent: string, dialect?: D): ToolIn<D> | null => {
    const { modelInvocable, tool, toolDescription } = dataOf(agent);
    if (dialect !== undefined && !TOOL_DIALECTS.includes(dialect)) {
      throw new SkillError("INVALID_PARAM", `Unknown tool dialect ${typeof dialect === "string" ? JSON.stringify(dialect) : describe(dialect)}. Use one of: ${TOOL_DIALECTS.join(", ")}, or none for the neutral shape.`);
    }
    return modelInvocable.length === 0 ? null : (inDialect(toolDefinition(tool ?? DEFAULT_TOOL, modelInvocable, toolDescription), dialect) as ToolIn<D>);
  };

  const callSkillTool = (agent: string, input: unknown): string | SkillToolAnswer => {
    const { modelInvocable, tool = DEFAULT_TOOL } = dataOf(agent);
    const key = tool.style === "use_skill" ? "skill" : "name";
    if (typeof input !== "object" || input === null || Array.isArray(input)) throw new SkillError("INVALID_PARAM", `The ${tool.name} input is an object, not ${describe(input)}.`);
    const { [key]: name, args = "" } = input as Record<string, unknown>;
    checkName(`${tool.name} input's "${key}"`, name);
    if (tool.style !== "read_skill" && typeof args !== "string") throw new SkillError("INVALID_PARAM", `The ${tool.name} input's "args" is a string, not ${describe(args)}.`);
    // The tool offers only these: a skill with disable-model-invocation is the user's to invoke, never the model's.
    if (!modelInvocable.includes(name)) {
      throw new SkillError("NOT_FOUND", `Unknown skill ${JSON.stringify(name)} for ${tool.name}. The skills of agent "${agent}" it offers are: ${listNames(modelInvocable) || "none"}.`);
    }
    if (tool.style === "read_skill") return renderSkill(agent, name);
    if (tool.style === "use_skill") return renderSkill(agent, name, args as string);
    const skill = getSkill(agent, name);
    return { name: skill.name, base_dir: skill.baseDir, content: applyArguments(skill.body, args as string) };
  };

  const servedSkills = (agent: string): readonly ServedSkill[] => {
    if (dataOf(agent).files !== "embed") {
      throw new SkillError("INVALID_PARAM", `Agent "${agent}" does not embed its skill files: set its \`files\` to "embed" in the config, and build again.`);
    }
    return skillsOf(agent).rows.flatMap((row, position) => {
      if (!row.served) return [];
      const entry = entryAt(agent, position); // reads the record
      const embedded = records[row.file]!.served;
      return embedded ? [{ entry, ...embedded }] : [];
    });
  };

  const agents: Record<string, Agent> = {};
  for (const id of ids) {
    const { format, description, prompt } = agentData[id]!;
    agents[id] = Object.freeze({
      id,
      format,
      ...(description === undefined ? {} : { description }),
      prompt,
      get skills() {
        return entriesOf(id);
      },
    });
  }

  return deepFreeze({ agents, getPrompt, getSkill, findSkill, renderSkill, expandCommand, listUserInvocable, skillTool, callSkillTool, servedSkills });
}

/** An agent id or skill name must be a non-empty string: anything else is the caller's mistake, not an unknown name. */
function checkName(what: string, value: unknown): asserts value is string {
  if (typeof value !== "string" || value === "") throw new SkillError("INVALID_PARAM", `The ${what} must be a non-empty string, not ${describe(value)}.`);
}

function describe(value: unknown): string {
  if (value === "") return "an empty string";
  if (value === null || value === undefined) return String(value);
  return Array.isArray(value) ? "a list" : typeof value === "object" ? "an object" : `a ${typeof value}`;
}

export const DEFAULT_TOOL = { style: "use_skill", name: "use_skill" } as const satisfies AgentData["tool"];

/** What the skill tool says of itself; with `catalogue: "tool"` the agent's catalogue follows it. */
export function skillToolDescription(style: ToolStyle): string {
  return `${style === "read_skill" ? "Read" : "Load"} the full instructions of one of your skills. Call it when the task matches a skill's description, then follow the instructions it returns.`;
}

/**
 * The skill tool in the neutral shape (see `inDialect` for each API's). Needs at least one name: an empty
 * `enum` is rejected by some APIs and could never be satisfied, so an agent without model-invocable skills gets
 * no tool (`skillTool` → null).
 */
function toolDefinition(tool: NonNullable<AgentData["tool"]>, names: readonly string[], description = skillToolDescription(tool.style)): SkillTool {
  const skill = { type: "string" as const, enum: [...names], description: "The skill's name." };
  const args = { type: "string" as const, description: "Arguments for the skill, as a user would type them after its name; may be empty." };
  const key = tool.style === "use_skill" ? "skill" : "name";
  return {
    name: tool.name,
    description,
    parameters: {
      type: "object",
      properties: tool.style === "read_skill" ? { [key]: skill } : { [key]: skill, args },
      required: [key],
      additionalProperties: false,
    },
  };
}

/** The tool in the shape of a dialect's API; the neutral shape without one. */
function inDialect(tool: SkillTool, dialect: ToolDialect | undefined): ToolIn<ToolDialect | undefined> {
  const { name, description, parameters } = tool;
  switch (dialect) {
    case "anthropic":
      return { name, description, input_schema: parameters };
    case "openai":
      return { type: "function", function: tool };
    case "openai-responses":
      // `strict: true` would need the optional `args` listed as required.
      return { type: "function", name, description, parameters, strict: false };
    case "mcp":
      return { name, description, inputSchema: parameters };
    default:
      return tool;
  }
}

/**
 * Totals of a skill's files, and per top-level folder. The folders are counted in a Map and made an object's own
 * properties at the end: a folder may be named `__proto__` or `constructor`, which an object looked up by name would
 * take from Object.prototype (and its counts would be added there, for every object of the process).
 */
export function summarizeStructure(files: readonly SkillFolderFile[]): SkillStructure {
  let bytes = 0;
  const folders = new Map<string, { bytes: number; files: number }>();
  for (const file of files) {
    bytes += file.size;
    const slash = file.path.indexOf("/");
    if (slash < 0) continue;
    const name = file.path.slice(0, slash);
    let folder = folders.get(name);
    if (!folder) folders.set(name, (folder = { bytes: 0, files: 0 }));
    folder.files++;
    folder.bytes += file.size;
  }
  return { bytes, files: files.length, folders: Object.fromEntries(folders) };
}

/**
 * The folder summary `renderSkill(…, { files: true })` appends: the totals, then each file of the folder root
 * and each top-level folder with its totals and files, in path order, sizes in bytes. Paths are the skill
 * author's: one line each, and XML-escaped inside a `pi` block, so a file name cannot close the block.
 *
 *     Skill folder: 3 files, 1290 bytes
 *     - SKILL.md (210 bytes)
 *     - references/: 2 files, 1080 bytes
 *       - references/api.md (1000 bytes)
 *       - references/errors.md (80 bytes)
 */
export function describeFolder(files: readonly SkillFolderFile[], format: FormatName): string {
  const path = (text: string) => (format === "markdown" ? oneLine(text) : escapeXml(oneLine(text)));
  const count = (total: { files: number; bytes: number }) => `${total.files} ${total.files === 1 ? "file" : "files"}, ${total.bytes} bytes`;
  const structure = summarizeStructure(files);
  const lines = [`Skill folder: ${count(structure)}`];
  let folder: string | undefined;
  for (const file of files) {
    const slash = file.path.indexOf("/");
    const top = slash < 0 ? undefined : file.path.slice(0, slash);
    if (top !== undefined && top !== folder) lines.push(`- ${path(top)}/: ${count(structure.folders[top]!)}`);
    folder = top;
    lines.push(`${top === undefined ? "" : "  "}- ${path(file.path)} (${file.size} bytes)`);
  }
  return lines.join("\n");
}

/** Long lists are cut: an error message naming ten thousand skills helps nobody. */
function listNames(names: readonly string[]): string {
  const shown = names.slice(0, 50).join(", ");
  return names.length > 50 ? `${shown} … (${names.length - 50} more)` : shown;
}

const PLACEHOLDER = /\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d+)/g;

/**
 * The longest body the arguments may expand to, in characters: 4 MiB, four times the largest SKILL.md a build
 * reads and more than any model's context window holds. Without a cap, a body of half a million `$ARGUMENTS`
 * and a 1,000-character argument would be half a billion characters, past what a JS string can hold.
 */
export const MAX_EXPANDED_LENGTH = 4 * 1024 * 1024;

/**
 * How arguments are applied to a body. `args` is trimmed (as Pi trims `/skill:name  args `). `$ARGUMENTS` becomes the
 * whole string, `$ARGUMENTS[N]` and `$N` the N-th (0-based) shell-style word, or "" past the last word. All
 * placeholders are replaced in one pass, so placeholders inside `args` are never expanded. A body without
 * placeholders gets `ARGUMENTS: <args>` appended, unless `args` is empty. A result longer than
 * `MAX_EXPANDED_LENGTH` is an `INVALID_PARAM` error, found before the result is built.
 */
export function applyArguments(body: string, args: string): string {
  const text = args.trim();
  let words: string[] | undefined;
  const parts: string[] = [];
  let length = 0;
  let end = 0;
  for (const match of body.matchAll(PLACEHOLDER)) {
    const [placeholder, bracketIndex, dollarIndex] = match;
    const value = placeholder === "$ARGUMENTS" ? text : ((words ??= splitShellWords(text))[Number(bracketIndex ?? dollarIndex)] ?? "");
    parts.push(body.slice(end, match.index), value);
    length += match.index - end + value.length;
    end = match.index + placeholder.length;
  }
  if (parts.length === 0) {
    if (text === "") return body;
    parts.push(body, "\n\nARGUMENTS: ", text);
    length = body.length + 13 + text.length;
  } else {
    parts.push(body.slice(end));
    length += body.length - end;
  }
  if (length > MAX_EXPANDED_LENGTH) {
    throw new SkillError("INVALID_PARAM", `The arguments would make the skill ${length} characters long; a skill with its arguments applied may have at most ${MAX_EXPANDED_LENGTH}.`);
  }
  return parts.join("");
}

/**
 * Words as a POSIX shell splits them, without expansions: whitespace separates; `'…'` is literal; inside `"…"`
 * a backslash escapes `"`, `\`, `$` and `` ` ``; outside quotes it escapes any character. Adjacent parts join
 * (`a"b c"` is one word); `""` is an empty word; an unclosed quote runs to the end.
 */
export function splitShellWords(text: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  let quote: "'" | '"' | undefined;
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!;
    const next = text[index + 1];
    if (quote === "'") {
      if (char === "'") quote = undefined;
      else word += char;
    } else if (quote === '"') {
      if (char === '"') quote = undefined;
      else if (char === "\\" && next !== undefined && '"\\$`'.includes(next)) word += text[++index];
      else word += char;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      inWord = true;
      if (char === "'" || char === '"') quote = char;
      else if (char === "\\" && next !== undefined) word += text[++index];
      else word += char;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** What an inline block shows of a skill. */
export interface InlineSkill {
  name: string;
  location: string;
  baseDir: string;
  body: string;
}

/**
 * One skill's inline block: in an agent's prompt, and what `renderSkill` returns. A format function
 * writes whole prompts, not blocks, so its agents' skills render as the default format's (`pi`) blocks.
 */
export function renderInlineBlock(format: FormatName, skill: InlineSkill): string {
  // Each block starts with the skill's name, so that several inline skills, one after another, stay apart.
  if (format === "markdown") return `[Skill: ${oneLine(skill.name)}]\nBase directory for this skill: ${oneLine(skill.baseDir)}\n\n${skill.body}`;
  // Pi leaves these attributes unescaped; escaping changes nothing for valid names and paths, and keeps a
  // crafted one from forging markup.
  return `<skill name="${escapeXml(skill.name)}" location="${escapeXml(skill.location)}">\nReferences are relative to ${escapeXml(skill.baseDir)}.\n\n${skill.body}\n</skill>`;
}

const XML_ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => XML_ENTITIES[char]!);
}

/**
 * What `/\s*[\r\n\v\f\u0085\u2028\u2029]+\s*\/g` matches, in linear time: that pattern tries every place in a run
 * of spaces and rescans the rest of the run from each, so 100,000 spaces without a line break took 5 s. This one
 * starts only where a run of whitespace starts (or at a U+0085, which `\s` leaves out), and takes each run whole
 * (a lookahead's capture, matched again, cannot be backtracked into): a run followed by U+0085, or one that holds a
 * line break.
 */
const LINE_BREAK_RUN = /(?:(?<!\s)|(?=\u0085))(?:(?=(\s*))\1\u0085[\r\n\v\f\u0085\u2028\u2029]*\s*|(?=([^\S\r\n\v\f\u2028\u2029]*))\2[\r\n\v\f\u2028\u2029]\s*)/g;

/** A Markdown list item or line stays one line: line breaks inside a field (Unicode's too) cannot start a new one. */
export function oneLine(text: string): string {
  return text.replace(LINE_BREAK_RUN, " ");
}

/** Freezes a value and everything reachable through its data properties (getters are left uncalled). */
export function deepFreeze<T>(value: T): T {
  if ((typeof value === "object" && value !== null) || typeof value === "function") {
    Object.freeze(value);
    for (const descriptor of Object.values(Object.getOwnPropertyDescriptors(value))) if ("value" in descriptor) deepFreeze(descriptor.value);
  }
  return value;
}
