import { posix } from "node:path";
import type { Mode, SkillFields } from "./model.js";
import { escapeXml, oneLine, renderInlineBlock } from "../runtime/helpers.js";

export type LocationSetting = "absolute" | "relative" | { base: string };
export type FormatName = "pi" | "markdown";

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
 * Where the prompt says a skill's file is (SPEC §5): as discovered, relative to the config folder, or under
 * a fixed base. `displayFile` is already relative to the config folder and `/`-separated. `basePath` is the
 * path put under `{ base }`: `displayFile`, except for a staged copy, whose base is where the bundle is deployed.
 */
export function locate(absoluteFile: string, displayFile: string, setting: LocationSetting, basePath = displayFile): { location: string; baseDir: string } {
  if (setting === "absolute") {
    const slash = Math.max(absoluteFile.lastIndexOf("/"), absoluteFile.lastIndexOf("\\"));
    return { location: absoluteFile, baseDir: absoluteFile.slice(0, slash) };
  }
  const location = setting === "relative" ? displayFile : `${setting.base.replace(/\/+$/, "")}/${basePath}`;
  return { location, baseDir: posix.dirname(location) };
}

/**
 * The agent's prompt: its context, the catalogue of available skills, then each inline skill, separated by one
 * blank line; a part that is empty is left out. `catalogueCharacters`: the catalogue's own length, which is
 * what a budget limits.
 */
export function renderPrompt(format: FormatName, skills: readonly PromptSkill[], context = ""): { prompt: string; catalogueCharacters: number } {
  const catalogue = renderCatalogue(format, skills);
  const blocks = skills.filter((skill) => skill.mode === "inline").map(FORMATS[format].inline);
  return { prompt: [context, catalogue, ...blocks].filter((part) => part !== "").join("\n\n"), catalogueCharacters: catalogue.length };
}

/** The catalogue of the available skills a model may invoke; "" when there is none. */
export function renderCatalogue(format: FormatName, skills: readonly PromptSkill[]): string {
  return FORMATS[format].catalogue(skills.filter((skill) => skill.mode === "available" && !skill.hidden));
}

/** One skill's inline block, as an agent's prompt holds it and as `/skill:` expands it. */
export function renderInline(format: FormatName, skill: PromptSkill): string {
  return FORMATS[format].inline(skill);
}

interface Format {
  catalogue(skills: readonly PromptSkill[]): string;
  inline(skill: PromptSkill): string;
}

const FORMATS: Record<FormatName, Format> = {
  // Byte-compatible with Pi 0.73.1's formatSkillsForPrompt (less its two leading newlines) and `/skill:`
  // expansion. Inline blocks come from the bundle modules' runtime, so `renderSkill` returns the same text.
  pi: {
    catalogue(skills) {
      if (skills.length === 0) return "";
      const lines = [
        "The following skills provide specialized instructions for specific tasks.",
        "Use the read tool to load a skill's file when the task matches its description.",
        "When a skill file references a relative path, resolve it against the skill directory (parent of SKILL.md / dirname of the path) and use that absolute path in tool commands.",
        "",
        "<available_skills>",
      ];
      for (const skill of skills) {
        lines.push(
          "  <skill>",
          `    <name>${escapeXml(skill.name)}</name>`,
          `    <description>${escapeXml(skill.description)}</description>`,
          `    <location>${escapeXml(skill.location)}</location>`,
          "  </skill>",
        );
      }
      lines.push("</available_skills>");
      return lines.join("\n");
    },
    inline: (skill) => renderInlineBlock("pi", skill),
  },
  markdown: {
    catalogue(skills) {
      if (skills.length === 0) return "";
      return ["Available skills:", ...skills.map((skill) => `- ${oneLine(skill.name)}: ${oneLine(skill.description)} (file: ${oneLine(skill.location)})`)].join("\n");
    },
    inline: (skill) => renderInlineBlock("markdown", skill),
  },
};
