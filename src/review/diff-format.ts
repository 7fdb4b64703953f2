/** `skills diff` output: the same items in `pretty` (a terminal), `markdown` (a pull-request comment) and `json`. */
import { TOKEN_ESTIMATE_LABEL, type AgentDiff, type BudgetState, type BundleDiff } from "./diff.js";
import { escapeInvisible, type Style } from "../compile/terminal.js";

export type DiffFormat = "pretty" | "markdown" | "json";

/** One line of an agent's changes; `block` is a before/after listing shown beneath it. */
interface Item {
  sign: "+" | "-" | "~";
  text: string;
  block?: string[];
  /** Markdown: the block is collapsed under this summary whatever its size. */
  summary?: string;
}

/** A markdown description change is collapsed past this many lines or characters of its block. */
const LONG_BLOCK_LINES = 6;
const LONG_BLOCK_CHARACTERS = 400;
/** An agent with more changes than this shows them collapsed in a markdown comment. */
const LONG_AGENT_ITEMS = 15;

const STATUS_WORDS: Record<AgentDiff["status"], string> = { added: "new agent", removed: "removed agent", changed: "changed", unchanged: "unchanged" };

function items(agent: AgentDiff, code: (text: string) => string): Item[] {
  const list: Item[] = [];
  for (const { name, mode } of agent.added) list.push({ sign: "+", text: `Added ${code(name)} (${mode})` });
  for (const { name, mode } of agent.removed) list.push({ sign: "-", text: `Removed ${code(name)} (was ${mode})` });
  for (const { name, from, to } of agent.moved) list.push({ sign: "~", text: `Moved ${code(name)} from ${from} to ${to}` });
  for (const { name, before, after } of agent.descriptions) {
    list.push({ sign: "~", text: `Changed the description of ${code(name)}:`, block: [...prefixLines("- ", before), ...prefixLines("+ ", after)] });
  }
  for (const { name, before, after, linesAdded, linesRemoved, diff } of agent.bodies) {
    const text = `Changed the body of ${code(name)}: +${linesAdded} -${linesRemoved} lines (sha256 ${code(before.slice(0, 8))} → ${code(after.slice(0, 8))})`;
    list.push({ sign: "~", text, block: prefixLines("", diff), summary: "body diff" });
  }
  for (const { name, before, after } of agent.locations) list.push({ sign: "~", text: `Changed the location of ${code(name)}: ${code(before)} → ${code(after)}` });
  for (const { name, added, removed, changed } of agent.resources) {
    const parts = [
      ...(added.length > 0 ? [`added ${added.map(code).join(", ")}`] : []),
      ...(removed.length > 0 ? [`removed ${removed.map(code).join(", ")}`] : []),
      ...(changed.length > 0 ? [`changed ${changed.map(code).join(", ")}`] : []),
    ];
    list.push({ sign: "~", text: `Changed the files of ${code(name)}: ${parts.join("; ")}` });
  }
  for (const { name, changed } of agent.fields) list.push({ sign: "~", text: `Changed frontmatter of ${code(name)}: ${changed.map(code).join(", ")}` });
  if (agent.format) list.push({ sign: "~", text: `Changed the format: ${code(agent.format.before)} → ${code(agent.format.after)}` });
  // A changed prompt that no item above explains (another skillbake version, say) is still a change.
  if (list.length === 0 && agent.prompt.changed) list.push({ sign: "~", text: "Changed the prompt text" });
  return list;
}

/**
 * A description's or a diff's lines, each escaped: its line breaks are layout, but a line may hold control or bidi characters,
 * and a CR would end a Markdown line (and so the fenced block) early.
 */
function prefixLines(prefix: string, text: string): string[] {
  return text.split("\n").map((line) => `${prefix}${escapeInvisible(line, { keepTabs: true })}`);
}

/** A terminal report: each agent, its changes, then its prompt size and budget. */
export function formatDiffPretty(diff: BundleDiff, labels: { before: string; after: string }, style: Style): string {
  const lines = [`${headline(diff)} (${escapeInvisible(labels.before)} → ${escapeInvisible(labels.after)})`];
  const units = budgetUnits(diff);
  for (const agent of diff.agents) {
    lines.push("", style.bold(`${escapeInvisible(agent.id)}: ${STATUS_WORDS[agent.status]}`));
    for (const item of items(agent, (text) => escapeInvisible(text))) {
      lines.push(`  ${item.sign} ${item.text}`);
      for (const line of item.block ?? []) lines.push(`      ${line}`);
    }
    const { before, after } = agent.prompt;
    lines.push(`  prompt characters: ${change(before.characters, after.characters)}`);
    lines.push(`  ${diff.tokenEncoding ? tokensLabel(diff) : style.dim(TOKEN_ESTIMATE_LABEL)}: ${change(before.tokens, after.tokens)}`);
    const budget = budgetChange(agent, units);
    if (budget) lines.push(`  ${budgetLabel(units)}: ${budget}`);
  }
  return lines.join("\n");
}

/** A pull-request comment: a table of every agent, then each changed agent's list. */
export function formatDiffMarkdown(diff: BundleDiff): string {
  const lines = [`### Agent prompts: ${headline(diff)}`, ""];
  const units = budgetUnits(diff);
  lines.push(`| agent | changes | prompt characters | ${tokensLabel(diff)} | ${budgetLabel(units)} |`, "| --- | --- | ---: | ---: | --- |");
  for (const agent of diff.agents) {
    const { before, after } = agent.prompt;
    // GFM splits a table cell at every unescaped "|", even inside a code span.
    lines.push(`| ${codeSpan(agent.id).replace(/\|/g, "\\|")} | ${changeCounts(agent)} | ${change(before.characters, after.characters)} | ${change(before.tokens, after.tokens)} | ${budgetChange(agent, units) ?? "—"} |`);
  }
  for (const agent of diff.agents) {
    const list = items(agent, codeSpan);
    if (list.length === 0) continue;
    lines.push("", `#### ${codeSpan(agent.id)} (${STATUS_WORDS[agent.status]})`, "");
    const body = list.flatMap(markdownItem);
    if (list.length > LONG_AGENT_ITEMS) lines.push(`<details><summary>${list.length} changes</summary>`, "", ...body, "", "</details>");
    else lines.push(...body);
  }
  return lines.join("\n");
}

function markdownItem(item: Item): string[] {
  if (!item.block) return [`- ${item.text}`];
  const fence = "`".repeat(Math.max(3, longestBacktickRun(item.block.join("\n")) + 1));
  const block = [`${fence}diff`, ...item.block, fence].map((line) => `  ${line}`);
  const long = item.block.length > LONG_BLOCK_LINES || item.block.join("\n").length > LONG_BLOCK_CHARACTERS;
  if (!long && !item.summary) return [`- ${item.text}`, "", ...block];
  return [`- ${item.text}`, "", `  <details><summary>${item.summary ?? "old → new"}</summary>`, "", ...block, "", "  </details>"];
}

/** `--format json`: the whole comparison, one document. */
export function formatDiffJson(diff: BundleDiff): string {
  const tokens = diff.tokenEncoding ? { tokenEncoding: diff.tokenEncoding } : { tokenEstimate: "ceil(characters / 4)" };
  return JSON.stringify({ changed: diff.changed, ...tokens, agents: diff.agents }, null, 2);
}

/** Real counts name their encoding; estimates say how they were made. */
function tokensLabel(diff: BundleDiff): string {
  return diff.tokenEncoding ? `tokens (${diff.tokenEncoding})` : TOKEN_ESTIMATE_LABEL;
}

/** Budgets in characters alone keep the unit in the label; with any in tokens, each value names its unit. */
type BudgetUnits = "characters" | "mixed";

function budgetUnits(diff: BundleDiff): BudgetUnits {
  return diff.agents.some((agent) => agent.budget.before?.unit === "tokens" || agent.budget.after?.unit === "tokens") ? "mixed" : "characters";
}

function budgetLabel(units: BudgetUnits): string {
  return units === "characters" ? "budget (catalogue characters)" : "budget (catalogue)";
}

function headline(diff: BundleDiff): string {
  const changed = diff.agents.filter((agent) => agent.status !== "unchanged").length;
  if (changed === 0) return diff.agents.length === 0 ? "no agents" : `no changes (${diff.agents.length} ${diff.agents.length === 1 ? "agent" : "agents"})`;
  return `${changed} of ${diff.agents.length} ${diff.agents.length === 1 ? "agent" : "agents"} changed`;
}

function changeCounts(agent: AgentDiff): string {
  const counts = [
    [agent.added.length, "added"],
    [agent.removed.length, "removed"],
    [agent.moved.length, "moved"],
    [agent.descriptions.length, agent.descriptions.length === 1 ? "description" : "descriptions"],
    [agent.bodies.length, agent.bodies.length === 1 ? "body" : "bodies"],
    [agent.locations.length, agent.locations.length === 1 ? "location" : "locations"],
    [agent.resources.length, agent.resources.length === 1 ? "skill folder" : "skill folders"],
    [agent.fields.length, agent.fields.length === 1 ? "frontmatter" : "frontmatters"],
  ] as const;
  const parts = counts.filter(([count]) => count > 0).map(([count, word]) => `${count} ${word}`);
  if (agent.format) parts.push("format");
  if (parts.length === 0 && agent.prompt.changed) parts.push("prompt text");
  if (agent.status === "added" || agent.status === "removed") parts.unshift(STATUS_WORDS[agent.status]);
  return parts.join(", ") || "none";
}

/** `before → after (±delta)`, or the one number when it did not change. */
function change(before: number, after: number): string {
  if (before === after) return count(before);
  const delta = after - before;
  return `${count(before)} → ${count(after)} (${delta > 0 ? "+" : "-"}${count(Math.abs(delta))})`;
}

/** Digits grouped by commas, whatever the locale. */
function count(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

function budgetChange(agent: AgentDiff, units: BudgetUnits): string | undefined {
  const { before, after } = agent.budget;
  if (!before && !after) return undefined;
  const [was, now] = [budgetText(before, units), budgetText(after, units)];
  return was === now ? now : `${was} → ${now}`;
}

function budgetText(state: BudgetState | undefined, units: BudgetUnits): string {
  if (!state) return "no budget";
  const percent = state.limit > 0 ? ` (${Math.round((state.catalogue / state.limit) * 100)}%)` : "";
  return `${count(state.catalogue)} / ${count(state.limit)}${units === "mixed" ? ` ${state.unit}` : ""}${percent}`;
}

/** Inline code that survives backticks in the text; its line breaks and other hidden characters are shown escaped. */
function codeSpan(text: string): string {
  const shown = escapeInvisible(text);
  const fence = "`".repeat(longestBacktickRun(shown) + 1);
  const pad = shown.startsWith("`") || shown.endsWith("`") ? " " : "";
  return `${fence}${pad}${shown}${pad}${fence}`;
}

function longestBacktickRun(text: string): number {
  return Math.max(0, ...(text.match(/`+/g) ?? []).map((run) => run.length));
}
