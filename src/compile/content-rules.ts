/**
 * Rules on what skills and prompts hold, beyond their frontmatter: an agent's skills that share a description, an
 * agent's prompt past a size worth a second look, and a body past the Agent Skills specification's recommended
 * length. Pure, given the compiled agents and (for the body) a token count.
 */
import { agentsNamed, withThousands, type Finding } from "./diagnostics.js";

/**
 * Characters of an agent's prompt past which `prompt-too-long` warns: about 25,000 tokens, an eighth of a
 * 200,000-token context window spent before the conversation starts, on every request. The public catalogues
 * taken whole stay under it up to ~180 skills (wshobson/agents, 82,551 characters) and pass it at 400 and more
 * (github/awesome-copilot, 197,929; antigravity-awesome-skills, 236,015).
 */
export const MAX_PROMPT_CHARACTERS = 100_000;

/** The Agent Skills specification's recommendation for a SKILL.md body: under 500 lines and under 5,000 tokens. */
export const MAX_BODY_LINES = 500;
export const MAX_BODY_TOKENS = 5000;

interface AgentView {
  id: string;
  prompt: string;
  skills: readonly { name: string; description: string; file: string }[];
}

/**
 * `description-duplicate`: a skill whose description an earlier skill of an agent has, once for every agent that
 * lists both (two agents over one root share their duplicates: a finding each would repeat it per agent).
 */
export function descriptionDuplicates(agents: readonly AgentView[]): Finding[] {
  const pairs = new Map<string, { skill: AgentView["skills"][number]; earlier: { name: string; file: string }; agents: string[] }>();
  for (const agent of agents) {
    const first = new Map<string, { name: string; file: string }>();
    for (const skill of agent.skills) {
      const description = skill.description.trim();
      const earlier = first.get(description);
      if (!earlier) {
        first.set(description, skill);
        continue;
      }
      // One skill reached twice, or two of one name (`duplicate-name`, `duplicate-across-sources` report those).
      if (earlier.file === skill.file || earlier.name === skill.name) continue;
      const key = `${skill.file}\0${earlier.file}`;
      const pair = pairs.get(key);
      if (pair) pair.agents.push(agent.id);
      else pairs.set(key, { skill, earlier, agents: [agent.id] });
    }
  }
  return [...pairs.values()].map(({ skill, earlier, agents: ids }) => ({
    code: "description-duplicate",
    file: skill.file,
    message: `${agentsNamed(ids)}: "${skill.name}" has the same description as "${earlier.name}" (${earlier.file}), so the model cannot tell which to use`,
    hint: "Say in each description what sets the skill apart and when to use it rather than the other.",
  }));
}

/** `prompt-too-long` for one agent; `configFile` is where it points. */
export function promptLengthFinding(agent: AgentView, configFile: string): Finding | undefined {
  if (agent.prompt.length <= MAX_PROMPT_CHARACTERS) return undefined;
  return {
    code: "prompt-too-long",
    file: configFile,
    message: `agent "${agent.id}": the prompt is ${withThousands(agent.prompt.length)} characters, over ${withThousands(MAX_PROMPT_CHARACTERS)} (about a quarter of that in tokens, sent with every request)`,
    hint: "Give the agent fewer skills (`available` patterns, `allow`), move inline skills to available, or set a `budget` for its catalogue.",
  };
}

/** `body-too-long`: a body of 500 lines or more, or of 5,000 tokens or more (`tokens`, when counted). */
export function bodyLengthFinding(file: string, body: string, bodyLine: number, tokens: number | undefined): Finding | undefined {
  const lines = body === "" ? 0 : countLines(body);
  const over = [lines >= MAX_BODY_LINES ? `${lines} lines` : "", tokens !== undefined && tokens >= MAX_BODY_TOKENS ? `${withThousands(tokens)} tokens` : ""].filter(Boolean);
  if (over.length === 0) return undefined;
  return {
    code: "body-too-long",
    file,
    line: bodyLine,
    column: 1,
    message: `the body is ${over.join(" and ")}; the Agent Skills specification recommends under ${MAX_BODY_LINES} lines and ${withThousands(MAX_BODY_TOKENS)} tokens`,
    hint: "Move detail into references/ files the body links to; agents load them when needed.",
  };
}

/** Whether a body may reach `MAX_BODY_TOKENS`: a token is at least one UTF-8 byte, so a shorter body cannot. */
export function mayReachTokenLimit(body: string): boolean {
  return body.length >= MAX_BODY_TOKENS / 3 && Buffer.byteLength(body) >= MAX_BODY_TOKENS;
}

/** Lines of a text, counted without splitting it: bodies are most of a catalogue's bytes. */
function countLines(text: string): number {
  let lines = 1;
  for (let newline = text.indexOf("\n"); newline >= 0; newline = text.indexOf("\n", newline + 1)) lines++;
  return lines;
}
