import { relative } from "node:path";
import { check, type CheckResult } from "../../api.js";
import type { CompiledAgent } from "../../compile/compile.js";
import { escapeInvisible } from "../../compile/terminal.js";
import { didYouMean } from "../../compile/suggest.js";
import { UsageError, write, writeJson, type Command } from "./command.js";

export const listCommand: Command = {
  name: "list",
  summary: "show what each agent sees: skills, modes, sources, sizes",
  help: `Usage: skills list [--config FILE] [--agent ID] [--format pretty|json]

Compiles the config in memory (writing nothing) and prints, per agent, each skill it sees: its
name, mode (available: listed in the catalogue; inline: whole body in the prompt), source root,
description characters and flags (hidden: disable-model-invocation, left out of the catalogue;
dropped by the budget: available, but left out of the catalogue to keep it within the agent's budget;
not user-invocable: user-invocable: false), and the catalogue's characters against the agent's
budget; with \`tokens\` in the config (or a budget in tokens), the prompt's and the catalogue's
tokens too, labelled with their encoding. Skills with errors are left out; run \`skills check\`
to see why.

Options:
  --config FILE      config file (default: skills.config.{ts,mts,js,mjs,json} in the current folder)
  --agent ID         only this agent
  --format FORMAT    pretty | json (default: pretty)

Examples:
  skills list
  skills list --agent coding
  skills list --format json | jq '.agents[].skills[].name'`,
  options: { config: { type: "string" }, agent: { type: "string" }, format: { type: "string" } },
  maxPositionals: 0,
  async run(values, _positionals, io) {
    const format = values.format ?? "pretty";
    if (format !== "pretty" && format !== "json") throw new UsageError(`--format must be pretty or json (got "${String(format)}").${didYouMean(String(format), ["pretty", "json"])}`);
    const result = await check({ config: values.config as string | undefined, cwd: io.cwd });
    const ids = result.agents.map((agent) => agent.id);
    const wanted = values.agent as string | undefined;
    if (wanted !== undefined && !ids.includes(wanted)) {
      throw new UsageError(`no agent "${wanted}" in ${relative(io.cwd, result.config.file)} (it has ${ids.join(", ")}).${didYouMean(wanted, ids)}`);
    }
    const agents = result.agents.filter((agent) => wanted === undefined || agent.id === wanted).map((agent) => listAgent(agent, result));

    if (format === "json") {
      writeJson(io.stdout, JSON.stringify({ agents, errors: result.errors, warnings: result.warnings }, null, 2));
    } else {
      write(io.stdout, agents.map(formatAgent).join("\n\n"));
    }
    if (result.errors + result.warnings > 0) {
      const counts = `${result.errors} ${result.errors === 1 ? "error" : "errors"}, ${result.warnings} ${result.warnings === 1 ? "warning" : "warnings"}`;
      write(io.stderr, `${counts}${result.errors > 0 ? " (skills with errors are left out)" : ""}; run \`skills check\` for details.`);
    }
    return 0;
  },
};

/** One agent as `list` shows it; also the shape of `--format json`. */
interface AgentListing {
  id: string;
  format: string;
  /** Characters of the whole prompt: the catalogue and every inline block. */
  promptCharacters: number;
  /** Characters of the catalogue of available skills, what an agent's `budget` limits. */
  catalogueCharacters: number;
  /** With `tokens` in the config or a budget in tokens: the prompt's and the catalogue's tokens in that encoding. */
  tokens?: { encoding: string; prompt: number; catalogue: number };
  /** The agent's `budget` (in characters or tokens), and the skills it left out of the catalogue (`budget-exceeded`), in prompt order. */
  budget?: { limit: number; unit: "characters" | "tokens"; dropped: string[] };
  skills: {
    name: string;
    mode: string;
    /** Index of the source in the agent's `skills` list, and its root as the config writes it. */
    source: number;
    root: string;
    file: string;
    descriptionCharacters: number;
    /** `disable-model-invocation: true`: left out of the catalogue. */
    hidden: boolean;
    /** Available, but left out of the catalogue by the agent's budget (still invoked by name). */
    dropped: boolean;
    userInvocable: boolean;
  }[];
}

function listAgent(agent: CompiledAgent, result: CheckResult): AgentListing {
  const agentConfig = result.config.config.agents[agent.id]!;
  return {
    id: agent.id,
    format: agent.format,
    promptCharacters: agent.prompt.length,
    catalogueCharacters: agent.catalogueCharacters,
    ...(agent.tokens === undefined ? {} : { tokens: agent.tokens }),
    ...(agent.budget === undefined ? {} : { budget: { limit: agent.budget.limit, unit: agent.budget.unit, dropped: agent.budget.dropped.map((skill) => skill.name) } }),
    skills: agent.skills.map((skill) => ({
      name: skill.name,
      mode: skill.mode,
      source: skill.source,
      root: agentConfig.skills[skill.source]!.root,
      file: skill.file,
      descriptionCharacters: skill.description.length,
      hidden: skill.fields["disable-model-invocation"] === true,
      dropped: skill.mode === "available" && !skill.listed && skill.fields["disable-model-invocation"] !== true,
      userInvocable: skill.fields["user-invocable"] !== false,
    })),
  };
}

function formatAgent(agent: AgentListing): string {
  const count = `${agent.skills.length} ${agent.skills.length === 1 ? "skill" : "skills"}`;
  const { budget: limit, tokens } = agent;
  const budgeted = limit?.unit === "tokens" ? tokens!.catalogue : agent.catalogueCharacters;
  const budget = limit === undefined ? "" : ` (${Math.round((budgeted * 100) / limit.limit)}% of its ${limit.limit}${limit.unit === "tokens" ? "-token" : ""} budget)`;
  const inTokens = (count: number) => (tokens ? ` / ${count} ${tokens.encoding} tokens` : "");
  const heading = `${agent.id}: ${count}, catalogue ${agent.catalogueCharacters} characters${inTokens(tokens?.catalogue ?? 0)}${budget}, prompt ${agent.promptCharacters} characters${inTokens(tokens?.prompt ?? 0)}`;
  // A name (which may be its folder's) and a root may hold control or bidi characters: shown escaped.
  const dropped = agent.budget?.dropped.length ? [`  left out of the catalogue by the budget (still invoked by name): ${agent.budget.dropped.map((name) => escapeInvisible(name)).join(", ")}`] : [];
  if (agent.skills.length === 0) return [heading, "  (no skills)", ...dropped].join("\n");
  const rows = [
    ["name", "mode", "source", "description", "flags"],
    ...agent.skills.map((skill) => [
      escapeInvisible(skill.name),
      skill.mode,
      escapeInvisible(skill.root),
      `${skill.descriptionCharacters} chars`,
      [skill.hidden ? "hidden" : "", skill.dropped ? "dropped by the budget" : "", skill.userInvocable ? "" : "not user-invocable"].filter(Boolean).join(", "),
    ]),
  ];
  // A reduce, not Math.max(...): a catalogue of 200,000 skills would exceed the call stack's arguments.
  const widths = rows[0]!.map((_, column) => rows.reduce((width, row) => Math.max(width, row[column]!.length), 0));
  const lines = rows.map((row) =>
    `  ${row.map((cell, column) => cell.padEnd(widths[column]!)).join("  ")}`.trimEnd(),
  );
  return [heading, ...lines, ...dropped].join("\n");
}
