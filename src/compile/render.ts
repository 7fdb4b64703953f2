import { posix } from "node:path";
import type { Mode, SkillFields } from "./model.js";
import { trimEnd } from "./trim.js";
import { DEFAULT_TOOL, escapeXml, oneLine, renderInlineBlock, skillToolDescription, type ToolStyle } from "../runtime/helpers.js";

export type LocationSetting = "absolute" | "relative" | { base: string };
export type FormatName = "pi" | "markdown";
/**
 * How the model invokes an agent's skills: it reads the skill's file (`read`, as in Pi and Codex), or calls the
 * skill `tool` (as in Claude Code); where the catalogue goes: the prompt, or the tool's description (as Claude
 * Code's Skill tool lists skills); and that tool.
 */
export interface Invocation {
  invoke: "read" | "tool";
  catalogue: "prompt" | "tool";
  tool: { style: ToolStyle; name: string };
}

/** Pi's way: the catalogue in the prompt, each skill's file read with the read tool. */
export const READ_INVOCATION: Invocation = { invoke: "read", catalogue: "prompt", tool: DEFAULT_TOOL };

/** A skill as an agent's prompt shows it. */
export interface PromptSkill {
  name: string;
  description: string;
  location: string;
  baseDir: string;
  body: string;
  mode: Mode;
  /** `disable-model-invocation: true`: left out of the catalogue, still inline-able. */
  hidden: boolean;
}

/** A skill as a function format sees it: everything the manifest knows about it. */
export interface FormatSkill extends PromptSkill {
  /** Index of the source in the agent's `skills` list. */
  source: number;
  /** SKILL.md relative to the config folder. */
  file: string;
  fields: SkillFields;
  extra: Record<string, unknown>;
}

/** What a function format receives: the resolved agent. */
export interface FormatContext {
  agent: string;
  description?: string;
  /** The agent's `context` files, joined by `\n\n---\n\n`; "" when it has none. */
  context: string;
  /**
   * Every skill the agent sees, in prompt order (sources in config order, then name): `available` and `inline`
   * ones, and `hidden` (disable-model-invocation) ones, which a catalogue should leave out.
   */
  skills: readonly FormatSkill[];
}

/** `format: (ctx) => string` in a TS or JS config: returns the agent's whole prompt. */
export type FormatFunction = (ctx: FormatContext) => string;

/**
 * Where the prompt says a skill's file is: as discovered, relative to the config folder, or under
 * a fixed base. `displayFile` is already relative to the config folder and `/`-separated. `basePath` is the
 * path put under `{ base }`: `displayFile`, except for a staged copy, whose base is where the bundle is deployed.
 */
export function locate(absoluteFile: string, displayFile: string, setting: LocationSetting, basePath = displayFile): { location: string; baseDir: string } {
  if (setting === "absolute") {
    const slash = Math.max(absoluteFile.lastIndexOf("/"), absoluteFile.lastIndexOf("\\"));
    return { location: absoluteFile, baseDir: absoluteFile.slice(0, slash) };
  }
  const location = setting === "relative" ? displayFile : `${trimEnd(setting.base, "/")}/${basePath}`;
  return { location, baseDir: posix.dirname(location) };
}

/**
 * The agent's prompt: its context, the catalogue of available skills, then each inline skill, separated by one
 * blank line; a part that is empty is left out. `catalogueCharacters`: the catalogue's own length, which is
 * what a budget limits.
 */
export function renderPrompt(
  format: FormatName,
  skills: readonly PromptSkill[],
  context = "",
  invocation: Invocation = READ_INVOCATION,
): { prompt: string; catalogueCharacters: number; toolDescription?: string } {
  const catalogue = renderCatalogue(format, skills, invocation);
  const blocks = skills.filter((skill) => skill.mode === "inline").map(FORMATS[format].inline);
  const inPrompt = invocation.catalogue === "prompt" ? catalogue : "";
  const prompt = [context, inPrompt, ...blocks].filter((part) => part !== "").join("\n\n");
  if (invocation.catalogue === "prompt") return { prompt, catalogueCharacters: catalogue.length };
  // As Claude Code lists skills: the catalogue is part of the skill tool's own description.
  const toolDescription = [skillToolDescription(invocation.tool.style), catalogue].filter((part) => part !== "").join("\n\n");
  return { prompt, catalogueCharacters: catalogue.length, toolDescription };
}

/** The catalogue of the available skills a model may invoke; "" when there is none. */
export function renderCatalogue(format: FormatName, skills: readonly PromptSkill[], invocation: Invocation = READ_INVOCATION): string {
  return FORMATS[format].catalogue(
    skills.filter((skill) => skill.mode === "available" && !skill.hidden),
    invocation,
  );
}

/** One skill's inline block, as an agent's prompt holds it and as `/skill:` expands it. */
export function renderInline(format: FormatName, skill: PromptSkill): string {
  return FORMATS[format].inline(skill);
}

interface Format {
  catalogue(skills: readonly PromptSkill[], invocation: Invocation): string;
  inline(skill: PromptSkill): string;
}

const FORMATS: Record<FormatName, Format> = {
  // Byte-compatible with Pi 0.73.1's formatSkillsForPrompt (less its two leading newlines) and `/skill:`
  // expansion. Inline blocks come from the bundle modules' runtime, so `renderSkill` returns the same text.
  pi: {
    catalogue(skills, { invoke, tool }) {
      if (skills.length === 0) return "";
      // With `invoke: "tool"` the tool loads the skill (its block names the base directory): no file to read.
      const header = [
        "The following skills provide specialized instructions for specific tasks.",
        ...(invoke === "read"
          ? [
              "Use the read tool to load a skill's file when the task matches its description.",
              "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.",
            ]
          : [`Use the ${tool.name} tool to load a skill when the task matches its description.`]),
        "",
        "<available_skills>",
      ];
      // A skill's lines in one string, not five joined (twice as fast at 10,000 skills); the skills' strings joined
      // once: a string built on by concatenation is a tree of them, which the prompt's first use copies flat.
      const entries = [header.join("\n")];
      for (const skill of skills) {
        const location = invoke === "read" ? `\n    <location>${escapeXml(skill.location)}</location>` : "";
        entries.push(`\n  <skill>\n    <name>${escapeXml(skill.name)}</name>\n    <description>${escapeXml(skill.description)}</description>${location}\n  </skill>`);
      }
      entries.push("\n</available_skills>");
      return entries.join("");
    },
    inline: (skill) => renderInlineBlock("pi", skill),
  },
  markdown: {
    catalogue(skills, { invoke, tool }) {
      if (skills.length === 0) return "";
      if (invoke === "read") return ["Available skills:", ...skills.map((skill) => `- ${oneLine(skill.name)}: ${oneLine(skill.description)} (file: ${oneLine(skill.location)})`)].join("\n");
      // Names and descriptions, then the line that says which tool invokes them.
      const lines = skills.map((skill) => `- ${oneLine(skill.name)}: ${oneLine(skill.description)}`);
      return ["Available skills:", ...lines, "", `Use the ${tool.name} tool to invoke a skill when relevant.`].join("\n");
    },
    inline: (skill) => renderInlineBlock("markdown", skill),
  },
};
