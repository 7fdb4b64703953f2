import type { Finding } from "./diagnostics.js";
import { MAX_DESCRIPTION_LENGTH, MAX_NAME_LENGTH, NAME_PATTERN } from "./model.js";
import type { Position, WrittenFrontmatter } from "./parse.js";
import type { SkillFile } from "./resources.js";
import { suggestName } from "./validate.js";

/**
 * What the MCP skills extension lets hosts decline, per skill: more files or bytes than this. Servers should not
 * publish past them.
 */
export const SERVE_LIMITS = { files: 512, bytes: 16 * 1024 * 1024 } as const;

/** A skill an agent would serve, in prompt order. */
export interface ServeCandidate {
  name: string;
  /** SKILL.md relative to the config folder. */
  file: string;
  files: readonly SkillFile[];
  written: WrittenFrontmatter;
}

/**
 * Which of an agent's skills it serves (`files: "embed"`) or publishes (`publish`): one per name, in prompt order,
 * each an entry the MCP skills extension and the Agent Skills discovery index accept and hosts can verify. A skill
 * they would refuse is `serve-invalid` and left out (never served broken); one past `SERVE_LIMITS` is
 * `serve-too-large` and kept. Pure.
 */
export function servedSkills(agentId: string, candidates: readonly ServeCandidate[]): { names: string[]; findings: Finding[] } {
  const findings: Finding[] = [];
  const names: string[] = [];
  const firstOf = new Map<string, string>();
  const consequence = `agent "${agentId}" does not serve it`;
  for (const candidate of candidates) {
    const { values, at } = candidate.written;
    const report = (where: Position, message: string, hint: string) => findings.push({ code: "serve-invalid", file: candidate.file, ...where, message: `${message}; ${consequence}`, hint });
    // The first skill of a name is the one lookups find (`getSkill`): it alone may be served under the name.
    const first = firstOf.get(candidate.name);
    if (first !== undefined) {
      report(at.name ?? TOP, `agent "${agentId}" has another skill named "${candidate.name}" (${first}), and a name is a served skill's address`, "Rename one of them, or select one (`duplicates: \"first\"`, or `allow`).");
      continue;
    }
    firstOf.set(candidate.name, candidate.file);
    const problem = entryProblem(values, at, candidate.written.unportable);
    if (problem) {
      report(problem.at, problem.message, problem.hint);
      continue;
    }
    names.push(candidate.name);
    const bytes = candidate.files.reduce((total, file) => total + file.size, 0);
    if (candidate.files.length > SERVE_LIMITS.files || bytes > SERVE_LIMITS.bytes) {
      findings.push({
        code: "serve-too-large",
        file: candidate.file,
        ...TOP,
        message: `the skill folder holds ${candidate.files.length} files and ${bytes} bytes, over the ${SERVE_LIMITS.files} files or ${SERVE_LIMITS.bytes} bytes (16 MiB) that MCP hosts must accept; agent "${agentId}" serves it, and hosts may decline it`,
        hint: "Move large assets out of the skill folder (a download the skill names), or split the skill.",
      });
    }
  }
  return { names, findings };
}

const TOP: Position = { line: 1, column: 1 };

/**
 * Why the MCP skills extension's entry rules (those `@modelcontextprotocol/server` checks every entry against) or
 * a host's verification would refuse a skill of this frontmatter; undefined when they accept it.
 */
function entryProblem(values: Record<string, unknown>, at: Record<string, Position>, unportable: WrittenFrontmatter["unportable"]): { at: Position; message: string; hint: string } | undefined {
  if (unportable) {
    return {
      at: unportable,
      message: `the frontmatter uses ${unportable.reason}, which the MCP SDK (what hosts verify a served SKILL.md with) does not read as skillbake does`,
      hint: "Write plain `key: value` lines, quote values that hold YAML syntax, and put lists and mappings on lines of their own.",
    };
  }
  const name = Object.hasOwn(values, "name") ? values.name : undefined;
  if (typeof name !== "string" || name === "") {
    return { at: at.name ?? TOP, message: "the frontmatter has no `name`, and served skills are found by the name they were written with", hint: "Add `name:` to the frontmatter." };
  }
  if (!NAME_PATTERN.test(name) || name.length > MAX_NAME_LENGTH) {
    const namespaced = name.includes("/");
    return {
      at: at.name!,
      message: namespaced
        ? `the name "${name}" is namespaced: the MCP skills extension and the discovery index take a skill's name as one path segment, and a served SKILL.md must say that name`
        : `the name "${name}" is not 1 to ${MAX_NAME_LENGTH} lowercase letters, digits and single hyphens, as the MCP skills extension and the discovery index require`,
      hint: `Rename the skill, e.g. \`name: ${suggestName(namespaced ? name.slice(name.lastIndexOf("/") + 1) : name)}\`${namespaced ? " (select it with a pattern on that name; `triage/*` selects namespaced names only)" : ""}.`,
    };
  }
  const description = Object.hasOwn(values, "description") ? values.description : undefined;
  if (typeof description !== "string" || description === "" || codePoints(description) > MAX_DESCRIPTION_LENGTH) {
    return {
      at: at.description ?? TOP,
      message: typeof description === "string" && description !== "" ? `the description is ${codePoints(description)} characters, over the ${MAX_DESCRIPTION_LENGTH} a served skill may have` : "the frontmatter has no `description` of its own",
      hint: "Write a `description:` of at most 1024 characters saying what the skill does and when to use it.",
    };
  }
  if (Object.hasOwn(values, "compatibility")) {
    const { compatibility } = values;
    if (typeof compatibility !== "string" || compatibility === "" || codePoints(compatibility) > 500) {
      return { at: at.compatibility!, message: "`compatibility` is not text of 1 to 500 characters, as a served skill's must be", hint: "Write `compatibility` as text, or remove it." };
    }
  }
  if (Object.hasOwn(values, "metadata")) {
    const { metadata } = values;
    if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata) || !Object.values(metadata).every((value) => typeof value === "string")) {
      return { at: at.metadata!, message: "`metadata` is not a mapping of strings, as a served skill's must be", hint: "Quote numbers and booleans under `metadata:`, or remove it." };
    }
  }
  return undefined;
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}
