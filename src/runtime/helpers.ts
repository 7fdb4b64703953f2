/**
 * The runtime of the generated bundle modules (SPEC §6): `getPrompt`, `getSkill`, `renderSkill`,
 * `listUserInvocable`, `skillTool`. This file is the only source of that code. It is type-checked and tested
 * as TypeScript here, and `scripts/runtime-text.mjs` compiles it once per CLI build into the text that
 * `src/bundle/module.ts` copies verbatim into every `index.js` and `agents/<id>.js`. So it must stay self-contained:
 * no imports (type-only ones vanish), no Node APIs, no globals beyond the language.
 * `src/compile/render.ts` renders inline blocks with the same functions, so a prompt and `renderSkill` cannot disagree.
 */

/** `function`: the config's own format function wrote the prompt. */
export type FormatName = "pi" | "markdown" | "function";
export type SkillMode = "available" | "inline";

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
}

/** A skill as one agent sees it. */
export interface SkillEntry extends SkillFile {
  mode: SkillMode;
  /** Index of the source in the agent's `skills` list. */
  source: number;
}

/** What an agent needs before any skill is looked up: enough for `getPrompt` and `skillTool`. */
export interface AgentData {
  format: FormatName;
  /** The agent's `description` from the config. */
  description?: string;
  prompt: string;
  /** Skill names the model may invoke (no `disable-model-invocation: true`), unique, in prompt order. */
  modelInvocable: string[];
}

/** Every skill's data, built on first use (see `createRuntime`): `bodies[i]` is the body of `files[i]`. */
export interface SkillTable {
  files: Omit<SkillFile, "body">[];
  bodies: string[];
  agents: Record<string, { file: number; mode: SkillMode; source: number }[]>;
}

export interface Agent {
  readonly id: string;
  readonly format: FormatName;
  readonly description?: string;
  readonly prompt: string;
  readonly skills: readonly SkillEntry[];
}

export interface SkillTool {
  readonly name: "use_skill";
  readonly description: string;
  readonly parameters: {
    readonly type: "object";
    readonly properties: {
      readonly skill: { readonly type: "string"; readonly enum: readonly string[]; readonly description: string };
      readonly args: { readonly type: "string"; readonly description: string };
    };
    readonly required: readonly ["skill"];
    readonly additionalProperties: false;
  };
}

export interface Runtime {
  readonly agents: Readonly<Record<string, Agent>>;
  getPrompt(agent: string): string;
  getSkill(agent: string, name: string): SkillEntry;
  renderSkill(agent: string, name: string, args?: string): string;
  listUserInvocable(agent: string): readonly SkillEntry[];
  skillTool(agent: string): SkillTool | null;
}

/**
 * The bundle's API over its data. `loadSkills` returns every skill, bodies included; it runs on the first
 * lookup, not at import: a module of thousands of skills is then parsed lazily by the JS engine, and importing
 * it to call `getPrompt` costs little more than reading the file. Everything handed out is deep-frozen.
 */
export function createRuntime(agentData: Record<string, AgentData>, loadSkills: () => SkillTable): Runtime {
  const ids = Object.keys(agentData);
  let table: Map<string, { entries: readonly SkillEntry[]; byName: Map<string, SkillEntry> }> | undefined;
  const skillsOf = (agent: string) => {
    if (!table) {
      const { files, bodies, agents } = loadSkills();
      table = new Map();
      for (const id of ids) {
        const entries = deepFreeze(agents[id]!.map(({ file, mode, source }) => ({ ...files[file]!, body: bodies[file]!, mode, source })));
        const byName = new Map<string, SkillEntry>();
        // A name selected from several sources is listed twice; the first (the one the prompt lists first) wins.
        for (const entry of entries) if (!byName.has(entry.name)) byName.set(entry.name, entry);
        table.set(id, { entries, byName });
      }
    }
    return table.get(agent)!;
  };

  const dataOf = (agent: string): AgentData => {
    if (typeof agent === "string" && Object.hasOwn(agentData, agent)) return agentData[agent]!;
    throw new Error(`Unknown agent ${JSON.stringify(agent)}. This bundle has: ${listNames(ids)}.`);
  };

  const getPrompt = (agent: string): string => dataOf(agent).prompt;

  const getSkill = (agent: string, name: string): SkillEntry => {
    dataOf(agent);
    const { byName } = skillsOf(agent);
    const entry = byName.get(name);
    if (entry) return entry;
    throw new Error(
      byName.size === 0
        ? `Unknown skill ${JSON.stringify(name)}: agent "${agent}" has no skills.`
        : `Unknown skill ${JSON.stringify(name)} for agent "${agent}". Its skills are: ${listNames([...byName.keys()])}.`,
    );
  };

  const renderSkill = (agent: string, name: string, args = ""): string => {
    const skill = getSkill(agent, name);
    return renderInlineBlock(dataOf(agent).format, { ...skill, body: applyArguments(skill.body, args) });
  };

  const userInvocable = new Map<string, readonly SkillEntry[]>();
  const listUserInvocable = (agent: string): readonly SkillEntry[] => {
    dataOf(agent);
    let list = userInvocable.get(agent);
    if (!list) {
      list = Object.freeze([...skillsOf(agent).byName.values()].filter((skill) => skill.fields["user-invocable"] !== false));
      userInvocable.set(agent, list);
    }
    return list;
  };

  const tools = new Map<string, SkillTool | null>();
  const skillTool = (agent: string): SkillTool | null => {
    const { modelInvocable } = dataOf(agent);
    if (!tools.has(agent)) tools.set(agent, modelInvocable.length === 0 ? null : deepFreeze(useSkillTool(modelInvocable)));
    return tools.get(agent)!;
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
        return skillsOf(id).entries;
      },
    });
  }

  return deepFreeze({ agents, getPrompt, getSkill, renderSkill, listUserInvocable, skillTool });
}

/**
 * The `use_skill` tool, valid as is for Anthropic (`input_schema`) and OpenAI (`parameters`; not OpenAI's
 * `strict: true`, which would need the optional `args` listed as required). Needs at least one name: an empty
 * `enum` is rejected by some APIs and could never be satisfied, so an agent without model-invocable skills gets
 * no tool (`skillTool` → null).
 */
function useSkillTool(names: readonly string[]): SkillTool {
  return {
    name: "use_skill",
    description:
      "Load the full instructions of one of your skills. Call it when the task matches a skill's description, then follow the instructions it returns.",
    parameters: {
      type: "object",
      properties: {
        skill: { type: "string", enum: [...names], description: "The skill's name." },
        args: { type: "string", description: "Arguments for the skill, as a user would type them after its name; may be empty." },
      },
      required: ["skill"],
      additionalProperties: false,
    },
  };
}

/** Long lists are cut: an error message naming ten thousand skills helps nobody. */
function listNames(names: readonly string[]): string {
  const shown = names.slice(0, 50).join(", ");
  return names.length > 50 ? `${shown} … (${names.length - 50} more)` : shown;
}

const PLACEHOLDER = /\$ARGUMENTS\[(\d+)\]|\$ARGUMENTS|\$(\d+)/g;

/**
 * The argument rules of SPEC §6. `args` is trimmed (as Pi trims `/skill:name  args `). `$ARGUMENTS` becomes the
 * whole string, `$ARGUMENTS[N]` and `$N` the N-th (0-based) shell-style word, or "" past the last word. All
 * placeholders are replaced in one pass, so placeholders inside `args` are never expanded. A body without
 * placeholders gets `ARGUMENTS: <args>` appended, unless `args` is empty.
 */
export function applyArguments(body: string, args: string): string {
  const text = args.trim();
  let words: string[] | undefined;
  let used = false;
  const result = body.replace(PLACEHOLDER, (placeholder: string, bracketIndex?: string, dollarIndex?: string) => {
    used = true;
    if (placeholder === "$ARGUMENTS") return text;
    words ??= splitShellWords(text);
    return words[Number(bracketIndex ?? dollarIndex)] ?? "";
  });
  if (used || text === "") return result;
  return `${body}\n\nARGUMENTS: ${text}`;
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
 * One skill's inline block (SPEC §5): in an agent's prompt, and what `renderSkill` returns. A format function
 * writes whole prompts, not blocks, so its agents' skills render as the default format's (`pi`) blocks.
 */
export function renderInlineBlock(format: FormatName, skill: InlineSkill): string {
  if (format === "markdown") return `Base directory for this skill: ${oneLine(skill.baseDir)}\n\n${skill.body}`;
  // Pi leaves these attributes unescaped; escaping changes nothing for valid names and paths, and keeps a
  // crafted one from forging markup.
  return `<skill name="${escapeXml(skill.name)}" location="${escapeXml(skill.location)}">\nReferences are relative to ${escapeXml(skill.baseDir)}.\n\n${skill.body}\n</skill>`;
}

const XML_ENTITIES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;" };

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => XML_ENTITIES[char]!);
}

/** A Markdown list item or line stays one line: line breaks inside a field (Unicode's too) cannot start a new one. */
export function oneLine(text: string): string {
  return text.replace(/\s*[\r\n\v\f\u0085\u2028\u2029]+\s*/g, " ");
}

/** Freezes a value and everything reachable through its data properties (getters are left uncalled). */
export function deepFreeze<T>(value: T): T {
  if ((typeof value === "object" && value !== null) || typeof value === "function") {
    Object.freeze(value);
    for (const descriptor of Object.values(Object.getOwnPropertyDescriptors(value))) if ("value" in descriptor) deepFreeze(descriptor.value);
  }
  return value;
}
