/**
 * Pure comparisons shared by `skills build --check` and `skills diff`: a line diff with a unified-style view,
 * and the per-agent comparison of two bundle manifests.
 */
import { createHash } from "node:crypto";
import { stableJson } from "../bundle/parts.js";
import { compareStrings } from "../compile/diagnostics.js";
import type { Placement, ReviewAgent, ReviewContent, ReviewManifest, ReviewSkill } from "./manifest.js";

// ---------------------------------------------------------------------------------------------------------
// Line diff

export interface LineEdit {
  op: "equal" | "delete" | "insert";
  line: string;
}

/**
 * The work one alignment may do, per character of the two middles (a line counting one more): an edit script is
 * searched for while it costs less, so that a review's time grows with the size of the texts, whatever their
 * lines. Texts that differ in a few places fit whatever their length; past it, see `alignMiddle`.
 */
const WORK_PER_CHARACTER = 4;
/** What every alignment may do: texts of a hundred lines are aligned exactly however much they differ. */
const MIN_WORK = 10_000;
/** What one alignment may do at most (a few tens of milliseconds), however long the texts. */
const MAX_WORK = 4_000_000;
/** The largest edit distance searched: the search keeps a row of positions per edit, (D + 1)² numbers in all. */
const MAX_EDIT_DISTANCE = 2_000;

/** Edits turning `before` into `after`, aligned on a longest common subsequence of lines where the work allowed finds one. */
export function diffLines(before: readonly string[], after: readonly string[]): LineEdit[] {
  let head = 0;
  while (head < before.length && head < after.length && before[head] === after[head]) head++;
  let beforeEnd = before.length;
  let afterEnd = after.length;
  while (beforeEnd > head && afterEnd > head && before[beforeEnd - 1] === after[afterEnd - 1]) {
    beforeEnd--;
    afterEnd--;
  }
  const equal = (line: string): LineEdit => ({ op: "equal", line });
  return [
    ...before.slice(0, head).map(equal),
    ...alignMiddle(before.slice(head, beforeEnd), after.slice(head, afterEnd)),
    ...before.slice(beforeEnd).map(equal),
  ];
}

function alignMiddle(a: readonly string[], b: readonly string[]): LineEdit[] {
  const trace = a.length === 0 || b.length === 0 ? undefined : shortestEditTrace(a, b, workAllowed(a, b));
  if (trace) return editsFromTrace(a, b, trace);
  const deleted = a.map((line): LineEdit => ({ op: "delete", line }));
  const inserted = b.map((line): LineEdit => ({ op: "insert", line }));
  // Too different to align within the work allowed (or one side empty). Equal lengths are paired line by line,
  // which is exact for the common large case (edits in place, such as every location changing); otherwise the
  // middle is shown replaced whole.
  if (a.length !== b.length) return [...deleted, ...inserted];
  return a.flatMap((line, i) => (line === b[i] ? [{ op: "equal", line }] : [deleted[i]!, inserted[i]!]));
}

function workAllowed(a: readonly string[], b: readonly string[]): number {
  let characters = a.length + b.length;
  for (const line of a) characters += line.length;
  for (const line of b) characters += line.length;
  return Math.min(MAX_WORK, Math.max(MIN_WORK, WORK_PER_CHARACTER * characters));
}

/**
 * Myers' greedy search for a shortest edit script (O((N+M)·D), fast where the texts differ in few lines): for each
 * edit count d, the furthest position in `a` reached on each diagonal k = x − y, as `trace[d][k + d]`. Undefined
 * when it would take more than `work` steps or `MAX_EDIT_DISTANCE` edits.
 */
function shortestEditTrace(a: readonly string[], b: readonly string[], work: number): Int32Array[] | undefined {
  const limit = Math.min(a.length + b.length, MAX_EDIT_DISTANCE);
  // furthest[k + offset]: the furthest x reached on diagonal k with the edits so far.
  const offset = limit + 1;
  const furthest = new Int32Array(2 * offset + 1);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= limit; d++) {
    for (let k = -d; k <= d; k += 2) {
      // Down from diagonal k + 1 (an insertion) or right from k − 1 (a deletion), whichever reaches further.
      let x = k === -d || (k !== d && furthest[offset + k - 1]! < furthest[offset + k + 1]!) ? furthest[offset + k + 1]! : furthest[offset + k - 1]! + 1;
      let y = x - k;
      const start = x;
      while (x < a.length && y < b.length && a[x] === b[y]) {
        x++;
        y++;
      }
      work -= x - start + 1;
      furthest[offset + k] = x;
      if (x >= a.length && y >= b.length) {
        trace.push(furthest.slice(offset - d, offset + d + 1));
        return trace;
      }
    }
    if (work < 0) return undefined;
    trace.push(furthest.slice(offset - d, offset + d + 1));
  }
  return undefined;
}

/** The edits of the script `shortestEditTrace` found, walked back from the end. */
function editsFromTrace(a: readonly string[], b: readonly string[], trace: readonly Int32Array[]): LineEdit[] {
  const edits: LineEdit[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = trace.length - 1; d > 0; d--) {
    const before = trace[d - 1]!; // indexed k + (d − 1)
    const k = x - y;
    const down = k === -d || (k !== d && before[k - 1 + d - 1]! < before[k + 1 + d - 1]!);
    const previousK = down ? k + 1 : k - 1;
    const previousX = before[previousK + d - 1]!;
    while (x > previousX + (down ? 0 : 1)) {
      y--;
      edits.push({ op: "equal", line: a[--x]! });
    }
    if (down) edits.push({ op: "insert", line: b[--y]! });
    else edits.push({ op: "delete", line: a[--x]! });
  }
  // What is left is the common start, before the first edit.
  while (x > 0) edits.push({ op: "equal", line: a[--x]! });
  return edits.reverse();
}

/** Lines added and removed by `edits`. */
function countEdits(edits: readonly LineEdit[]): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const edit of edits) {
    if (edit.op === "insert") added++;
    else if (edit.op === "delete") removed++;
  }
  return { added, removed };
}

function splitLines(text: string): string[] {
  return text === "" ? [] : text.split("\n");
}

export interface UnifiedDiffOptions {
  beforeLabel: string;
  afterLabel: string;
  /** Unchanged lines shown around each change. */
  context?: number;
  /** The diff is cut after this many lines, with a note of how many were left out. */
  maxLines?: number;
  /** Each line of text is cut after this many characters, saying how many it left out. */
  lineMax?: number;
}

/** Characters of one line of text that review shows (a diff's line, a description's): a reviewer reads every change, and no one line may push the others out of view. */
export const LINE_MAX = 1000;

/** `line` cut to `max` characters (not inside a surrogate pair), saying how many it left out. */
export function cutLine(line: string, max: number): string {
  if (line.length <= max) return line;
  const end = max > 0 && line.charCodeAt(max - 1) >= 0xd800 && line.charCodeAt(max - 1) <= 0xdbff ? max - 1 : max;
  return `${line.slice(0, end)}… (${String(line.length - end).replace(/\B(?=(\d{3})+(?!\d))/g, ",")} more characters)`;
}

/** A unified-style diff (`---`/`+++` headers, `@@` hunks) of two texts; empty when they are equal. */
export function unifiedDiff(before: string, after: string, options: UnifiedDiffOptions): string {
  return before === after ? "" : unifiedDiffOf(diffLines(splitLines(before), splitLines(after)), options);
}

function unifiedDiffOf(edits: readonly LineEdit[], { beforeLabel, afterLabel, context = 3, maxLines = Infinity, lineMax = Infinity }: UnifiedDiffOptions): string {
  // Line numbers (1-based) in each text where each edit sits.
  const positions: { before: number; after: number }[] = [];
  let beforeLine = 1;
  let afterLine = 1;
  for (const edit of edits) {
    positions.push({ before: beforeLine, after: afterLine });
    if (edit.op !== "insert") beforeLine++;
    if (edit.op !== "delete") afterLine++;
  }
  const changed = edits.flatMap((edit, index) => (edit.op === "equal" ? [] : [index]));
  const hunks: { start: number; end: number }[] = [];
  for (const index of changed) {
    const start = Math.max(0, index - context);
    const end = Math.min(edits.length, index + context + 1);
    const last = hunks.at(-1);
    if (last && start <= last.end) last.end = end;
    else hunks.push({ start, end });
  }
  const lines = [`--- ${beforeLabel}`, `+++ ${afterLabel}`];
  for (const { start, end } of hunks) {
    const slice = edits.slice(start, end);
    const beforeCount = slice.filter((edit) => edit.op !== "insert").length;
    const afterCount = slice.filter((edit) => edit.op !== "delete").length;
    // An empty side is numbered by the line before it, as diff -u does.
    const beforeStart = beforeCount === 0 ? positions[start]!.before - 1 : positions[start]!.before;
    const afterStart = afterCount === 0 ? positions[start]!.after - 1 : positions[start]!.after;
    lines.push(`@@ -${hunkRange(beforeStart, beforeCount)} +${hunkRange(afterStart, afterCount)} @@`);
    for (const edit of slice) lines.push(`${edit.op === "equal" ? " " : edit.op === "delete" ? "-" : "+"}${cutLine(edit.line, lineMax)}`);
  }
  if (lines.length > maxLines) {
    const omitted = lines.length - maxLines;
    return [...lines.slice(0, maxLines), `… ${omitted} more ${omitted === 1 ? "line" : "lines"} of diff`].join("\n");
  }
  return lines.join("\n");
}

/** A hunk's first line and its count of lines, the count left out when it is one, as diff -u writes them. */
function hunkRange(start: number, count: number): string {
  return count === 1 ? `${start}` : `${start},${count}`;
}

// ---------------------------------------------------------------------------------------------------------
// Bundle comparison

/** Estimated tokens: characters ÷ 4, rounded up. A rule of thumb for English prose, not a tokenizer. */
export function estimateTokens(characters: number): number {
  return Math.ceil(characters / 4);
}
export const TOKEN_ESTIMATE_LABEL = "≈ tokens (estimate: characters ÷ 4)";

export interface PromptSize {
  characters: number;
  /** Counted in the diff's `tokenEncoding`, or else `estimateTokens(characters)`. */
  tokens: number;
}

export interface BudgetState {
  /** Limit of the catalogue, in `unit`. */
  limit: number;
  /** Size of the catalogue, in `unit`. */
  catalogue: number;
  unit: "characters" | "tokens";
  /** The skills the budget dropped from the catalogue, by name, in prompt order. */
  dropped: string[];
}

/** Lines of a changed body's diff that `skills diff` shows: the prompt text a reviewer reads, kept to a comment's size. */
export const BODY_DIFF_LINES = 60;

/**
 * The frontmatter fields that change what the model may do with a skill, or whether it sees it: the diff shows
 * their values, old → new. Other fields are named.
 */
export const PERMISSION_FIELDS = ["allowed-tools", "disable-model-invocation", "user-invocable", "context", "agent", "model"] as const;

export interface SkillRef {
  name: string;
  file: string;
  placement: Placement;
}

/** Why a skill is no longer the agent's: its `allow` list left it out, or it failed a rule that skips it. */
export type RemovalReason = { by: "allow" } | { by: "failed"; code: string; message: string };

export interface FieldChange {
  field: string;
  /** Absent: the field was not set on that side. */
  before?: unknown;
  after?: unknown;
}

export interface AgentDiff {
  id: string;
  /** `added` / `removed`: the agent exists on one side only. */
  status: "added" | "removed" | "changed" | "unchanged";
  added: SkillRef[];
  removed: (SkillRef & { reason?: RemovalReason })[];
  /** Moved between the catalogue (`listed`), `inline`, `hidden` (disable-model-invocation) and `dropped` by the budget. */
  moved: { name: string; file: string; from: Placement; to: Placement }[];
  descriptions: { name: string; before: string; after: string }[];
  /** Hashes are sha256 of the body text; `diff` is a unified diff of the body, cut after `BODY_DIFF_LINES` lines. */
  bodies: { name: string; before: string; after: string; linesAdded: number; linesRemoved: number; diff: string }[];
  locations: { name: string; before: string; after: string }[];
  /** The skill folder's other files (references, scripts…) added, removed or changed, by path in the folder. */
  resources: { name: string; added: string[]; removed: string[]; changed: string[] }[];
  /** Frontmatter fields (typed or `extra`) added, removed or changed, with their values. */
  fields: { name: string; changes: FieldChange[] }[];
  /** The agent's context files added, removed or changed (by sha256, where both manifests record it). */
  context: { added: string[]; removed: string[]; changed: string[] };
  /**
   * With `catalogue: "tool"`: the skill tool's description, which the model reads instead of a catalogue, whole on
   * each side; its lines changed and a unified diff of it, cut as a body's (one line of it per skill it lists).
   */
  toolDescription?: { before?: string; after?: string; linesAdded: number; linesRemoved: number; diff: string };
  format?: { before: string; after: string };
  prompt: { before: PromptSize; after: PromptSize; changed: boolean };
  /** With `catalogue: "tool"` on either side: the size of the skill tool's description, what its model reads of the catalogue. */
  tool?: { before: PromptSize; after: PromptSize };
  budget: { before?: BudgetState; after?: BudgetState };
}

export interface BundleDiff {
  changed: boolean;
  /** The encoding every agent's tokens are counted in; absent: tokens are estimated from characters. */
  tokenEncoding?: string;
  /** Why tokens are estimated, when they are. */
  tokenEstimate?: string;
  /** Every agent of either side, by id. */
  agents: AgentDiff[];
}

/** Tokens of each agent's prompt on each side, and of each skill tool's description, counted in one encoding (see load.ts). */
export interface PromptTokens {
  encoding: string;
  before: ReadonlyMap<string, number>;
  after: ReadonlyMap<string, number>;
  tools: { before: ReadonlyMap<string, number>; after: ReadonlyMap<string, number> };
}

/**
 * What changed for each agent between two bundles. `tokens`: the prompts counted; without, the manifests' own counts
 * when every agent of both recorded them in one encoding and none has a skill tool's description (which no manifest
 * counts), else estimates (`estimate` says why).
 */
export function diffBundles(before: ReviewManifest, after: ReviewManifest, tokens?: PromptTokens | { estimate: string }): BundleDiff {
  const ids = [...new Set([...before.agents.keys(), ...after.agents.keys()])].sort(compareStrings);
  let counts: PromptTokens | undefined = tokens && "encoding" in tokens ? tokens : undefined;
  let estimate = tokens && "estimate" in tokens ? tokens.estimate : "the bundles do not record token counts in one encoding";
  if (!tokens) {
    // Counts of two encodings (or counts against estimates) would compare unlike things: then both sides are estimated.
    // A manifest records no count of a skill tool's description: with one, too.
    const agents = [...before.agents.values(), ...after.agents.values()];
    const encodings = new Set(agents.map((agent) => agent.tokens?.encoding));
    const [encoding] = encodings;
    if (agents.some((agent) => agent.toolDescription !== undefined)) estimate = "the bundles record no token counts of the skill tool's description";
    else if (encodings.size === 1 && encoding !== undefined) counts = { encoding, before: recordedTokens(before), after: recordedTokens(after), tools: { before: new Map(), after: new Map() } };
  }
  const compare = contentComparison();
  const agents = ids.map((id) => diffAgent(id, before.agents.get(id), after.agents.get(id), after.failed, counts, compare));
  const changed = agents.some((agent) => agent.status !== "unchanged");
  if (counts) return { changed, tokenEncoding: counts.encoding, agents };
  return { changed, tokenEstimate: estimate, agents };
}

function recordedTokens(manifest: ReviewManifest): Map<string, number> {
  return new Map([...manifest.agents].map(([id, agent]) => [id, agent.tokens?.prompt ?? 0]));
}

function emptyAgentDiff(id: string, before: ReviewAgent | undefined, after: ReviewAgent | undefined, counts: PromptTokens | undefined): AgentDiff {
  const size = (agent: ReviewAgent | undefined, side: ReadonlyMap<string, number> | undefined): PromptSize => {
    const characters = agent?.characters.prompt ?? 0;
    return { characters, tokens: !agent ? 0 : side ? (side.get(id) ?? 0) : estimateTokens(characters) };
  };
  const toolSize = (agent: ReviewAgent | undefined, side: ReadonlyMap<string, number> | undefined): PromptSize => {
    const characters = agent?.toolDescription?.length ?? 0;
    return { characters, tokens: agent?.toolDescription === undefined ? 0 : side ? (side.get(id) ?? 0) : estimateTokens(characters) };
  };
  const tool = before?.toolDescription !== undefined || after?.toolDescription !== undefined;
  return {
    id,
    status: "unchanged",
    added: [],
    removed: [],
    moved: [],
    descriptions: [],
    bodies: [],
    locations: [],
    resources: [],
    fields: [],
    context: { added: [], removed: [], changed: [] },
    prompt: {
      before: size(before, counts?.before),
      after: size(after, counts?.after),
      changed: (before?.promptHash ?? EMPTY_PROMPT_HASH) !== (after?.promptHash ?? EMPTY_PROMPT_HASH),
    },
    budget: { before: budgetState(before), after: budgetState(after) },
    ...(tool ? { tool: { before: toolSize(before, counts?.tools.before), after: toolSize(after, counts?.tools.after) } } : {}),
  };
}

const EMPTY_PROMPT_HASH = sha256("");

function diffAgent(id: string, before: ReviewAgent | undefined, after: ReviewAgent | undefined, failed: ReviewManifest["failed"], counts: PromptTokens | undefined, compare: CompareContents): AgentDiff {
  const diff = emptyAgentDiff(id, before, after, counts);
  const beforeSkills = before?.skills ?? new Map<string, ReviewSkill>();
  const afterSkills = after?.skills ?? new Map<string, ReviewSkill>();
  for (const [key, old] of beforeSkills) {
    if (afterSkills.has(key)) continue;
    // An agent that is gone takes its skills with it: no reason of their own.
    const failure = after ? failed.get(old.file) : undefined;
    const reason: RemovalReason | undefined = after?.notAllowed.has(old.file) ? { by: "allow" } : failure ? { by: "failed", ...failure } : undefined;
    diff.removed.push({ name: old.name, file: old.file, placement: old.placement, ...(reason ? { reason } : {}) });
  }
  for (const [key, now] of afterSkills) {
    const old = beforeSkills.get(key);
    if (!old) diff.added.push({ name: now.name, file: now.file, placement: now.placement });
    else diffSkill(diff, old, now, compare(old.content, now.content, now.name));
  }
  const lists = [diff.added, diff.removed, diff.moved, diff.descriptions, diff.bodies, diff.locations, diff.resources, diff.fields];
  for (const list of lists) list.sort((a, b) => compareStrings(a.name, b.name));
  if (before && after) {
    if (before.format !== after.format) diff.format = { before: before.format, after: after.format };
    diff.context = mapChanges(before.context, after.context);
    if (before.toolDescription !== after.toolDescription) diff.toolDescription = toolDescriptionChange(before.toolDescription, after.toolDescription);
  }
  const budgetChanged = stableJson(diff.budget.before ?? null) !== stableJson(diff.budget.after ?? null);
  const contextChanged = diff.context.added.length + diff.context.removed.length + diff.context.changed.length > 0;
  const anyChange = diff.prompt.changed || budgetChanged || contextChanged || diff.format !== undefined || diff.toolDescription !== undefined || lists.some((list) => list.length > 0);
  diff.status = !before ? "added" : !after ? "removed" : anyChange ? "changed" : "unchanged";
  return diff;
}

function diffSkill(diff: AgentDiff, old: ReviewSkill, now: ReviewSkill, changes: ContentChanges): void {
  const name = now.name;
  if (old.placement !== now.placement) diff.moved.push({ name, file: now.file, from: old.placement, to: now.placement });
  if (changes.description) diff.descriptions.push(changes.description);
  if (changes.body) diff.bodies.push(changes.body);
  if (old.location !== now.location) diff.locations.push({ name, before: old.location, after: now.location });
  if (changes.resources) diff.resources.push(changes.resources);
  if (changes.fields) diff.fields.push(changes.fields);
}

/**
 * What changed between two versions of a skill, whichever agents list it: each agent that lists the skill holds
 * these same objects (`formatDiffJson` gives each whole once).
 */
interface ContentChanges {
  description?: AgentDiff["descriptions"][number];
  body?: AgentDiff["bodies"][number];
  resources?: AgentDiff["resources"][number];
  fields?: AgentDiff["fields"][number];
}

type CompareContents = (old: ReviewContent, now: ReviewContent, name: string) => ContentChanges;

/**
 * Compares two versions of a skill once per pair, however many agents list it (a manifest shares one content object
 * per skill): a skill in a thousand agents costs one body diff, not a thousand.
 */
function contentComparison(): CompareContents {
  const compared = new Map<ReviewContent, Map<ReviewContent, ContentChanges>>();
  return (old, now, name) => {
    let row = compared.get(old);
    if (!row) compared.set(old, (row = new Map()));
    let changes = row.get(now);
    if (!changes) row.set(now, (changes = compareContents(old, now, name)));
    return changes;
  };
}

function compareContents(old: ReviewContent, now: ReviewContent, name: string): ContentChanges {
  const changes: ContentChanges = {};
  if (old.description !== now.description) changes.description = { name, before: old.description, after: now.description };
  if (old.body !== now.body) {
    const { linesAdded, linesRemoved, diff: lines } = textChange(old.body, now.body, name);
    changes.body = { name, before: sha256(old.body), after: sha256(now.body), linesAdded, linesRemoved, diff: lines };
  }
  const resources = mapChanges(old.resources, now.resources);
  if (resources.added.length + resources.removed.length + resources.changed.length > 0) changes.resources = { name, ...resources };
  const fields: FieldChange[] = [];
  for (const field of [...new Set([...old.fields.keys(), ...now.fields.keys()])].sort(compareStrings)) {
    if (field === "name" || field === "description") continue;
    const [was, is] = [old.fields.get(field), now.fields.get(field)];
    if (old.fields.has(field) === now.fields.has(field) && (was === is || (typeof was === "object" && typeof is === "object" && stableJson(was) === stableJson(is)))) continue;
    fields.push({ field, ...(old.fields.has(field) ? { before: was } : {}), ...(now.fields.has(field) ? { after: is } : {}) });
  }
  if (fields.length > 0) changes.fields = { name, changes: fields };
  return changes;
}

/** The lines changed between two texts, and a unified diff of them cut after `BODY_DIFF_LINES` lines. */
export function textChange(before: string, after: string, label: string): { linesAdded: number; linesRemoved: number; diff: string } {
  const edits = diffLines(splitLines(before), splitLines(after));
  const { added, removed } = countEdits(edits);
  const diff = before === after ? "" : unifiedDiffOf(edits, { beforeLabel: `${label} (before)`, afterLabel: `${label} (after)`, maxLines: BODY_DIFF_LINES, lineMax: LINE_MAX });
  return { linesAdded: added, linesRemoved: removed, diff };
}

function toolDescriptionChange(before: string | undefined, after: string | undefined): NonNullable<AgentDiff["toolDescription"]> {
  return { ...(before === undefined ? {} : { before }), ...(after === undefined ? {} : { after }), ...textChange(before ?? "", after ?? "", "tool description") };
}

/** Keys added, removed, or whose value changed (an unknown value on either side counts as unchanged). */
function mapChanges<T>(before: ReadonlyMap<string, T>, after: ReadonlyMap<string, T>): { added: string[]; removed: string[]; changed: string[] } {
  const keys = (from: ReadonlyMap<string, T>, keep: (key: string) => boolean) => [...from.keys()].filter(keep).sort(compareStrings);
  return {
    added: keys(after, (key) => !before.has(key)),
    removed: keys(before, (key) => !after.has(key)),
    changed: keys(after, (key) => before.has(key) && before.get(key) !== undefined && after.get(key) !== undefined && before.get(key) !== after.get(key)),
  };
}

function budgetState(agent: ReviewAgent | undefined): BudgetState | undefined {
  if (agent?.budget === undefined) return undefined;
  const dropped = [...agent.skills.values()].filter((skill) => skill.placement === "dropped").map((skill) => skill.name);
  if (typeof agent.budget === "number") return { limit: agent.budget, catalogue: agent.characters.catalogue, unit: "characters", dropped };
  return { limit: agent.budget.tokens, catalogue: agent.tokens!.catalogue, unit: "tokens", dropped }; // parseManifest checked the counts are there
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
