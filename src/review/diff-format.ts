/**
 * `skills diff` output: the same items in `pretty` (a terminal), `markdown` (a pull-request comment, a job summary)
 * and `json`. Every string in a diff comes from a bundle a pull request may have committed: it is escaped for its
 * output, and every line and list is cut to a size, so no one value can push another change out of view.
 */
import { cutLine, LINE_MAX, PERMISSION_FIELDS, TOKEN_ESTIMATE_LABEL, type AgentDiff, type BudgetState, type BundleDiff, type FieldChange, type PromptSize, type RemovalReason } from "./diff.js";
import type { Placement } from "./manifest.js";
import { escapeInvisible, escapeMarkdown, type Style } from "../compile/terminal.js";

export type DiffFormat = "pretty" | "markdown" | "json";

/** A name or a value inside a line of text. */
const VALUE_MAX = 200;
/** A list inside one line (files of a skill, skills a budget dropped) names this many, then counts the rest. */
const LIST_MAX = 20;

/** GitHub refuses a comment over 65,536 characters; markdown output stays under it with room for a marker line. */
export const COMMENT_LIMIT = 65_000;
/** GitHub shows a step's job summary up to 1 MiB; the diff keeps room for the other commands of the step. */
export const SUMMARY_LIMIT_BYTES = 900_000;

/** One change; `block` is a before/after listing shown beneath it (pretty) or in the details (markdown). */
interface Item {
  sign: "+" | "-" | "~";
  text: string;
  block?: string[];
  /** What the block is, in the markdown details' summary. */
  summary?: string;
}

const STATUS_WORDS: Record<AgentDiff["status"], string> = { added: "new agent", removed: "removed agent", changed: "changed", unchanged: "unchanged" };

const PLACEMENT_WORDS: Record<Placement, string> = {
  listed: "listed",
  inline: "inline",
  hidden: "hidden: disable-model-invocation",
  dropped: "dropped by the budget",
};

function removalWords(reason: RemovalReason | undefined, code: (text: string) => string): string {
  if (!reason) return "no longer selected";
  if (reason.by === "allow") return "left out by the agent's `allow`";
  return `it failed ${code(reason.code)}: ${code(cutLine(reason.message, VALUE_MAX))}`;
}

/**
 * The before/after blocks shown so far, with the agent each was shown under: a change several agents share (one
 * skill in each) is shown once, and named under the others. By what changed (`description` or `body` and the
 * skill's name), then the old and the new text (or hash): maps of the texts themselves, whose hashes a string keeps,
 * so that a long text several agents share is not read again for each of them.
 */
type ShownBlocks = Map<string, Map<string, Map<string, string>>>;

/** The agent a change was first shown under; undefined when this is the first, which `agent` is then recorded as. */
function shownUnder(shown: ShownBlocks, what: string, before: string, after: string, agent: string): string | undefined {
  let byBefore = shown.get(what);
  if (!byBefore) shown.set(what, (byBefore = new Map()));
  let byAfter = byBefore.get(before);
  if (!byAfter) byBefore.set(before, (byAfter = new Map()));
  const first = byAfter.get(after);
  if (first === undefined) byAfter.set(after, agent);
  return first;
}

function items(agent: AgentDiff, code: (text: string) => string, shown: ShownBlocks): Item[] {
  const list: Item[] = [];
  const name = (text: string) => code(cutLine(text, VALUE_MAX));
  // The item with its block where the change is shown first; else its line, naming the agent that shows it.
  const once = (what: string, before: string, after: string, item: { text: string; summary: string }, block: () => string[]): Item => {
    const first = shownUnder(shown, what, before, after, agent.id);
    return first === undefined ? { sign: "~", ...item, block: block() } : { sign: "~", text: `${item.text}; the same change as under ${code(first)}` };
  };
  for (const skill of agent.added) list.push({ sign: "+", text: `Added ${name(skill.name)} (${PLACEMENT_WORDS[skill.placement]})` });
  for (const skill of agent.removed) list.push({ sign: "-", text: `Removed ${name(skill.name)} (was ${PLACEMENT_WORDS[skill.placement]}): ${removalWords(skill.reason, code)}` });
  for (const { name: skill, from, to } of agent.moved) list.push({ sign: "~", text: movedText(name(skill), from, to) });
  for (const { name: skill, before, after } of agent.descriptions) {
    const item = { text: `Changed the description of ${name(skill)}`, summary: `description of ${name(skill)}` };
    list.push(once(`description\0${skill}`, before, after, item, () => [...blockLines("- ", before), ...blockLines("+ ", after)]));
  }
  for (const { name: skill, before, after, linesAdded, linesRemoved, diff } of agent.bodies) {
    const item = { text: `Changed the body of ${name(skill)}: +${linesAdded} -${linesRemoved} lines (sha256 ${code(before.slice(0, 8))} → ${code(after.slice(0, 8))})`, summary: `body of ${name(skill)}` };
    list.push(once(`body\0${skill}`, before, after, item, () => blockLines("", diff)));
  }
  for (const { name: skill, changes } of agent.fields) {
    const values = changes.filter((change) => (PERMISSION_FIELDS as readonly string[]).includes(change.field));
    for (const change of values) list.push({ sign: "~", text: `Changed ${code(change.field)} of ${name(skill)}: ${fieldValue(change, "before", code)} → ${fieldValue(change, "after", code)}` });
    const others = changes.filter((change) => !values.includes(change));
    if (others.length > 0) list.push({ sign: "~", text: `Changed frontmatter of ${name(skill)}: ${listed(others.map((change) => change.field), name)}` });
  }
  for (const { name: skill, before, after } of agent.locations) list.push({ sign: "~", text: `Changed the location of ${name(skill)}: ${name(before)} → ${name(after)}` });
  for (const { name: skill, added, removed, changed } of agent.resources) list.push({ sign: "~", text: `Changed the files of ${name(skill)}: ${changeParts({ added, removed, changed }, name)}` });
  const { context } = agent;
  if (context.added.length + context.removed.length + context.changed.length > 0) list.push({ sign: "~", text: `Changed the context files: ${changeParts(context, name)}` });
  if (agent.toolDescription) {
    const { linesAdded, linesRemoved, diff } = agent.toolDescription;
    list.push({ sign: "~", text: `Changed the skill tool's description: +${linesAdded} -${linesRemoved} lines`, block: blockLines("", diff), summary: "the skill tool's description" });
  }
  if (agent.format) list.push({ sign: "~", text: `Changed the format: ${name(agent.format.before)} → ${name(agent.format.after)}` });
  // A changed prompt that no item above explains (another skillbake version, say) is still a change.
  if (list.length === 0 && agent.prompt.changed) list.push({ sign: "~", text: "Changed the prompt text" });
  return list;
}

function movedText(name: string, from: Placement, to: Placement): string {
  if (to === "dropped") return `Dropped ${name} from the catalogue: over the budget (the model no longer sees it; still invoked by name)`;
  if (from === "dropped" && to === "listed") return `Restored ${name} to the catalogue (the budget dropped it before)`;
  return `Moved ${name} from ${PLACEMENT_WORDS[from]} to ${PLACEMENT_WORDS[to]}`;
}

function fieldValue(change: FieldChange, side: "before" | "after", code: (text: string) => string): string {
  return side in change ? code(cutLine(JSON.stringify(change[side]) ?? String(change[side]), VALUE_MAX)) : "(not set)";
}

function changeParts(changes: { added: string[]; removed: string[]; changed: string[] }, name: (text: string) => string): string {
  const parts: string[] = [];
  for (const kind of ["added", "removed", "changed"] as const) if (changes[kind].length > 0) parts.push(`${kind} ${listed(changes[kind], name)}`);
  return parts.join("; ");
}

/** The first `LIST_MAX` of a list, then how many more. */
function listed(values: readonly string[], name: (text: string) => string): string {
  const shown = values.slice(0, LIST_MAX).map(name).join(", ");
  return values.length > LIST_MAX ? `${shown} and ${count(values.length - LIST_MAX)} more` : shown;
}

/** A description's or a diff's lines, each escaped (a CR would end a Markdown line, and so a fenced block, early) and cut. */
function blockLines(prefix: string, text: string): string[] {
  const lines: string[] = [];
  for (const line of text.split("\n")) lines.push(`${prefix}${fit(line, (part) => escapeInvisible(part, { keepTabs: true }), LINE_MAX)}`);
  return lines;
}

/** `escape(text)` kept to about `max` characters: the text is cut before it is escaped, so no escape is cut in two. */
function fit(text: string, escape: (text: string) => string, max: number): string {
  let shown = escape(text);
  if (shown.length <= max) return shown;
  let kept = Math.min(text.length, max);
  for (;;) {
    if (isHighSurrogate(text.charCodeAt(kept - 1))) kept--;
    shown = escape(text.slice(0, kept));
    if (shown.length <= max || kept <= 1) break;
    kept = Math.max(1, Math.floor((kept * max) / shown.length));
  }
  return `${shown}… (${count(text.length - kept)} more characters)`;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** A terminal report: each agent, its changes (with their old → new text), then its prompt size and budget. */
export function formatDiffPretty(diff: BundleDiff, labels: { before: string; after: string }, style: Style): string {
  const plain = (text: string) => escapeInvisible(text);
  const lines = [`${headline(diff)} (${fit(labels.before, plain, VALUE_MAX)} → ${fit(labels.after, plain, VALUE_MAX)})`];
  const units = budgetUnits(diff);
  const shown: ShownBlocks = new Map();
  for (const agent of diff.agents) {
    lines.push("", style.bold(`${plain(agent.id)}: ${STATUS_WORDS[agent.status]}`));
    for (const item of items(agent, plain, shown)) {
      lines.push(`  ${item.sign} ${item.text}`);
      for (const line of item.block ?? []) lines.push(`      ${line}`);
    }
    const { before, after } = agent.prompt;
    const tokens = diff.tokenEncoding ? tokensLabel(diff, plain) : style.dim(TOKEN_ESTIMATE_LABEL);
    lines.push(`  prompt characters: ${change(before.characters, after.characters)}`);
    lines.push(`  ${tokens}: ${change(before.tokens, after.tokens)}`);
    if (agent.tool) {
      lines.push(`  skill tool description characters: ${change(agent.tool.before.characters, agent.tool.after.characters)}`);
      lines.push(`  skill tool description ${tokens}: ${change(agent.tool.before.tokens, agent.tool.after.tokens)}`);
    }
    const budget = budgetChange(agent, units, plain);
    if (budget) lines.push(`  ${budgetLabel(units)}: ${budget}`);
  }
  if (diff.tokenEstimate) lines.push("", style.dim(`Tokens are estimated: ${diff.tokenEstimate}.`));
  return lines.join("\n");
}

export interface MarkdownOptions {
  /** Most characters (or, with `bytes`, UTF-8 bytes) of the text. */
  limit: number;
  bytes?: boolean;
  /** Where the whole comparison is, named when the text had to leave some out (the job summary's page). */
  rest?: string;
}

/**
 * Markdown for a pull-request comment or a job summary: a table of every agent, then every change by name (each
 * dropped or moved skill, each changed description, body and field), then the details (old → new descriptions,
 * body diffs). Under `limit`: what does not fit is left out from the end, and the last line says how much and where
 * the rest is.
 */
export function formatDiffMarkdown(diff: BundleDiff, { limit, bytes = false, rest }: MarkdownOptions): string {
  const out = new Budgeted(limit, bytes);
  const units = budgetUnits(diff);
  const label = tokensLabel(diff, escapeMarkdown);
  out.add([`### Agent prompts: ${headline(diff)}`, "", `| agent | changes | prompt characters | ${label} | ${budgetLabel(units)} |`, "| --- | --- | ---: | ---: | --- |"]);
  for (const agent of diff.agents) {
    const { before, after } = agent.prompt;
    // GFM splits a table cell at every unescaped "|", even inside a code span.
    const cell = (text: string) => text.replace(/\|/g, "\\|");
    // What the model reads of a skill tool's description comes after the prompt's.
    const withTool = (key: keyof PromptSize) => `${change(before[key], after[key])}${agent.tool ? ` + tool ${change(agent.tool.before[key], agent.tool.after[key])}` : ""}`;
    out.add([`| ${cell(codeSpan(agent.id))} | ${changeCounts(agent)} | ${withTool("characters")} | ${withTool("tokens")} | ${cell(budgetChange(agent, units, codeSpan) ?? "—")} |`]);
  }
  if (diff.tokenEstimate) out.add(["", `Tokens are estimated: ${escapeMarkdown(diff.tokenEstimate)}.`]);
  const details: { agent: AgentDiff; item: Item }[] = [];
  const shown: ShownBlocks = new Map();
  for (const agent of diff.agents) {
    const list = items(agent, codeSpan, shown);
    if (list.length === 0) continue;
    out.add(["", `#### ${codeSpan(agent.id)} (${STATUS_WORDS[agent.status]})`, ""]);
    for (const item of list) {
      out.add([`- ${item.text}`]);
      if (item.block) details.push({ agent, item });
    }
  }
  if (details.length > 0) out.add(["", "#### Details"]);
  for (const { agent, item } of details) {
    const block = item.block!;
    const fence = "`".repeat(Math.max(3, longestBacktickRun(block) + 1));
    // Names stay out of the HTML of <details>, where Markdown does not escape them: they head it as Markdown.
    out.add(["", `${codeSpan(agent.id)}: ${item.summary}`, "", "<details><summary>old → new</summary>", "", `${fence}diff`, ...block, fence, "", "</details>"]);
  }
  return out.finish(rest);
}

/** Lines added whole while they fit; what does not is counted, and named in the closing note. */
class Budgeted {
  private readonly lines: string[] = [];
  private size = 0;
  private left = 0;
  /** Room kept for the closing note. */
  private static readonly NOTE_ROOM = 600;

  constructor(
    private readonly limit: number,
    private readonly bytes: boolean,
  ) {}

  add(group: readonly string[]): void {
    if (this.left > 0) {
      this.left += group.length;
      return;
    }
    let size = 0;
    for (const line of group) size += this.measure(line) + 1;
    if (this.size + size > this.limit - Budgeted.NOTE_ROOM) {
      this.left += group.length;
      return;
    }
    for (const line of group) this.lines.push(line);
    this.size += size;
  }

  finish(rest: string | undefined): string {
    if (this.left > 0) {
      const where = rest ? `the job summary has the rest: ${rest}` : "`skills diff` in a terminal, or with `--format json`, shows the rest";
      this.lines.push("", `**Cut short at ${count(this.limit)} ${this.bytes ? "bytes" : "characters"}: ${count(this.left)} more ${this.left === 1 ? "line" : "lines"} left out; ${where}.**`);
    }
    return this.lines.join("\n");
  }

  private measure(line: string): number {
    return this.bytes ? Buffer.byteLength(line) : line.length;
  }
}

/**
 * `--format json`: the whole comparison, one document; strings are data, unescaped (a JSON parser reads them exactly).
 * A skill's change that several agents share is given whole under the first and as `{ name, sameAs: <agent> }` under
 * the others: a long description in a skill thousands of agents list is written once, not once per agent.
 */
export function formatDiffJson(diff: BundleDiff): string {
  const tokens = diff.tokenEncoding ? { tokenEncoding: diff.tokenEncoding } : { tokenEstimate: "ceil(characters / 4)", tokenEstimateReason: diff.tokenEstimate };
  const givenUnder = new Map<object, string>();
  const once = <T extends { name: string }>(changes: readonly T[], agent: string): (T | { name: string; sameAs: string })[] =>
    changes.map((change) => {
      const first = givenUnder.get(change);
      if (first === undefined) givenUnder.set(change, agent);
      return first === undefined ? change : { name: change.name, sameAs: first };
    });
  const agents = diff.agents.map((agent) => ({
    ...agent,
    descriptions: once(agent.descriptions, agent.id),
    bodies: once(agent.bodies, agent.id),
    resources: once(agent.resources, agent.id),
    fields: once(agent.fields, agent.id),
  }));
  return JSON.stringify({ changed: diff.changed, ...tokens, agents }, null, 2);
}

/** Real counts name their encoding; estimates say how they were made. */
function tokensLabel(diff: BundleDiff, escape: (text: string) => string): string {
  return diff.tokenEncoding ? `tokens (${escape(cutLine(diff.tokenEncoding, VALUE_MAX))})` : TOKEN_ESTIMATE_LABEL;
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
  const agents = diff.agents.length;
  const changed = diff.agents.filter((agent) => agent.status !== "unchanged").length;
  if (changed === 0) return agents === 0 ? "no agents" : `no changes (${count(agents)} ${agents === 1 ? "agent" : "agents"})`;
  return `${count(changed)} of ${count(agents)} ${agents === 1 ? "agent" : "agents"} changed`;
}

function changeCounts(agent: AgentDiff): string {
  const dropped = agent.moved.filter((move) => move.to === "dropped").length;
  const counts = [
    [agent.added.length, "added"],
    [agent.removed.length, "removed"],
    [dropped, "dropped by the budget"],
    [agent.moved.length - dropped, "moved"],
    [agent.descriptions.length, agent.descriptions.length === 1 ? "description" : "descriptions"],
    [agent.bodies.length, agent.bodies.length === 1 ? "body" : "bodies"],
    [agent.fields.length, "frontmatter"],
    [agent.locations.length, agent.locations.length === 1 ? "location" : "locations"],
    [agent.resources.length, agent.resources.length === 1 ? "skill folder" : "skill folders"],
  ] as const;
  const parts = counts.filter(([number]) => number > 0).map(([number, word]) => `${count(number)} ${word}`);
  if (agent.context.added.length + agent.context.removed.length + agent.context.changed.length > 0) parts.push("context");
  if (agent.toolDescription) parts.push("tool description");
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

function budgetChange(agent: AgentDiff, units: BudgetUnits, name: (text: string) => string): string | undefined {
  const { before, after } = agent.budget;
  if (!before && !after) return undefined;
  const [was, now] = [budgetText(before, units), budgetText(after, units)];
  const state = was === now ? now : `${was} → ${now}`;
  const dropped = after?.dropped ?? [];
  return dropped.length === 0 ? state : `${state}; drops ${listed(dropped, (text) => name(cutLine(text, VALUE_MAX)))}`;
}

function budgetText(state: BudgetState | undefined, units: BudgetUnits): string {
  if (!state) return "no budget";
  const percent = state.limit > 0 ? ` (${Math.round((state.catalogue / state.limit) * 100)}%)` : "";
  return `${count(state.catalogue)} / ${count(state.limit)}${units === "mixed" ? ` ${state.unit}` : ""}${percent}`;
}

/** Inline code that survives backticks in the text; its line breaks and other hidden characters are shown escaped. */
function codeSpan(text: string): string {
  const shown = escapeInvisible(text);
  const fence = "`".repeat(longestBacktickRun([shown]) + 1);
  const pad = shown.startsWith("`") || shown.endsWith("`") ? " " : "";
  return `${fence}${pad}${shown}${pad}${fence}`;
}

/** The longest run of backticks in any of the lines (a loop: a line may hold millions of runs). */
function longestBacktickRun(lines: readonly string[]): number {
  let longest = 0;
  for (const line of lines) {
    let run = 0;
    for (let index = line.indexOf("`"); index !== -1; index = line.indexOf("`", index + 1)) {
      run = line[index - 1] === "`" ? run + 1 : 1; // at 0, line[-1] is undefined
      if (run > longest) longest = run;
    }
  }
  return longest;
}
