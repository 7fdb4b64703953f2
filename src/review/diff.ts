/**
 * Pure comparisons shared by `skills build --check` and `skills diff`: a line diff with a unified-style view,
 * and the per-agent comparison of two bundle manifests.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { SCHEMA_VERSION } from "../bundle/manifest.js";
import { stableJson } from "../bundle/parts.js";
import { compareStrings } from "../compile/diagnostics.js";
import type { Mode } from "../compile/model.js";

// ---------------------------------------------------------------------------------------------------------
// Line diff

export interface LineEdit {
  op: "equal" | "delete" | "insert";
  line: string;
}

/**
 * Past this many cells the middle of a diff (after the common head and tail) is not aligned by LCS, to bound
 * time and memory; see `alignMiddle`. At most sqrt of it lines can match, so a Uint16 holds every LCS length.
 */
const MAX_ALIGNED_CELLS = 4_000_000;

/** Edits turning `before` into `after`, aligned on a longest common subsequence of lines. */
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
  const deleted = a.map((line): LineEdit => ({ op: "delete", line }));
  const inserted = b.map((line): LineEdit => ({ op: "insert", line }));
  if (a.length === 0 || b.length === 0) return [...deleted, ...inserted];
  if ((a.length + 1) * (b.length + 1) > MAX_ALIGNED_CELLS) {
    // Too big to align. Equal lengths are paired line by line, which is exact for the common large case (edits
    // in place, such as every location changing); otherwise the middle is shown replaced whole.
    if (a.length !== b.length) return [...deleted, ...inserted];
    return a.flatMap((line, i) => (line === b[i] ? [{ op: "equal", line }] : [deleted[i]!, inserted[i]!]));
  }
  // common[i * width + j]: length of the longest common subsequence of a[i..] and b[j..].
  const width = b.length + 1;
  const common = new Uint16Array((a.length + 1) * width);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      common[i * width + j] = a[i] === b[j] ? common[(i + 1) * width + j + 1]! + 1 : Math.max(common[(i + 1) * width + j]!, common[i * width + j + 1]!);
    }
  }
  const edits: LineEdit[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      edits.push({ op: "equal", line: a[i]! });
      i++;
      j++;
    } else if (common[(i + 1) * width + j]! >= common[i * width + j + 1]!) {
      edits.push(deleted[i++]!);
    } else {
      edits.push(inserted[j++]!);
    }
  }
  return [...edits, ...deleted.slice(i), ...inserted.slice(j)];
}

/** Lines added and removed between two texts. */
export function countLineChanges(before: string, after: string): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const edit of diffLines(splitLines(before), splitLines(after))) {
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
}

/** A unified-style diff (`---`/`+++` headers, `@@` hunks) of two texts; empty when they are equal. */
export function unifiedDiff(before: string, after: string, { beforeLabel, afterLabel, context = 3, maxLines = Infinity }: UnifiedDiffOptions): string {
  if (before === after) return "";
  const edits = diffLines(splitLines(before), splitLines(after));
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
    for (const edit of slice) lines.push(`${edit.op === "equal" ? " " : edit.op === "delete" ? "-" : "+"}${edit.line}`);
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

/**
 * The manifest fields `skills diff` reads; anything else is ignored, so a manifest may grow. `skills diff`
 * reads the manifest alone: sizes come from `agents[id].characters`, never from the prompt files.
 */
const manifestSchema = z.object({
  schemaVersion: z.literal(SCHEMA_VERSION, { error: `skills diff reads manifests of schemaVersion ${SCHEMA_VERSION}` }),
  agents: z.record(
    z.string(),
    z.object({
      format: z.string(),
      prompt: z.string(),
      characters: z.object({ prompt: z.number(), catalogue: z.number() }),
      /** Counted when the config asked for tokens. */
      tokens: z.object({ encoding: z.string(), prompt: z.number(), catalogue: z.number() }).optional(),
      /** The agent's limit on its catalogue, in characters or tokens, when the config sets one. */
      budget: z.union([z.number(), z.object({ tokens: z.number() })]).optional(),
      skills: z.array(z.object({ name: z.string(), mode: z.enum(["available", "inline"]), file: z.string() })),
    }),
  ),
  skills: z.array(
    z.object({
      file: z.string(),
      description: z.string(),
      location: z.string(),
      body: z.string(),
      fields: z.record(z.string(), z.unknown()),
      extra: z.record(z.string(), z.unknown()),
      files: z.array(z.object({ path: z.string(), sha256: z.string() })),
    }),
  ),
  hashes: z.object({ outputs: z.record(z.string(), z.string()) }),
});

export type Manifest = z.output<typeof manifestSchema>;

/** A manifest that `skills diff` cannot read. */
export class ManifestError extends Error {
  override name = "ManifestError";
}

/** Validates parsed manifest JSON; `label` names it in the error. */
export function parseManifest(value: unknown, label: string): Manifest {
  const parsed = manifestSchema.safeParse(value);
  if (parsed.success) {
    const files = new Set(parsed.data.skills.map((skill) => skill.file));
    for (const [id, agent] of Object.entries(parsed.data.agents)) {
      if (typeof agent.budget === "object" && !agent.tokens) throw new ManifestError(`${label}: agents.${id} has a budget in tokens but no token counts`);
      const unknown = agent.skills.find((skill) => !files.has(skill.file));
      if (unknown) throw new ManifestError(`${label}: agents.${id} lists ${unknown.file}, which is not among the manifest's skills`);
    }
    return parsed.data;
  }
  const issue = parsed.error.issues[0]!;
  const path = issue.path.map((segment) => (typeof segment === "number" ? `[${segment}]` : `.${String(segment)}`)).join("").replace(/^\./, "");
  throw new ManifestError(`${label}: ${path || "(manifest)"}: ${issue.message.replace(/^Invalid input: /, "")}. Is it a skillbake manifest.json? Rebuild it with \`skills build\`.`);
}

/** A bundle that does not exist: every agent in the other one is new. */
export const EMPTY_MANIFEST: Manifest = { schemaVersion: SCHEMA_VERSION, agents: {}, skills: [], hashes: { outputs: {} } };

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
}

/** Lines of a changed body's diff that `skills diff` shows: the prompt text a reviewer reads, kept to a comment's size. */
export const BODY_DIFF_LINES = 60;

export interface AgentDiff {
  id: string;
  /** `added` / `removed`: the agent exists on one side only. */
  status: "added" | "removed" | "changed" | "unchanged";
  added: { name: string; mode: Mode; file: string }[];
  removed: { name: string; mode: Mode; file: string }[];
  moved: { name: string; from: Mode; to: Mode }[];
  descriptions: { name: string; before: string; after: string }[];
  /** Hashes are sha256 of the body text; `diff` is a unified diff of the body, cut after `BODY_DIFF_LINES` lines. */
  bodies: { name: string; before: string; after: string; linesAdded: number; linesRemoved: number; diff: string }[];
  locations: { name: string; before: string; after: string }[];
  /** The skill folder's other files (references, scripts…) added, removed or changed, by path in the folder. */
  resources: { name: string; added: string[]; removed: string[]; changed: string[] }[];
  /** Frontmatter fields (typed or `extra`) added, removed or changed. */
  fields: { name: string; changed: string[] }[];
  format?: { before: string; after: string };
  prompt: { before: PromptSize; after: PromptSize; changed: boolean };
  budget: { before?: BudgetState; after?: BudgetState };
}

export interface BundleDiff {
  changed: boolean;
  /** The encoding both bundles counted every agent's tokens in; absent: tokens are estimated from characters. */
  tokenEncoding?: string;
  /** Every agent of either side, by id. */
  agents: AgentDiff[];
}

/** What changed for each agent between two bundles. */
export function diffBundles(before: Manifest, after: Manifest): BundleDiff {
  const ids = [...new Set([...Object.keys(before.agents), ...Object.keys(after.agents)])].sort(compareStrings);
  // Counts of two encodings (or counts against estimates) would compare unlike things: then both sides are estimated.
  const encodings = new Set([...Object.values(before.agents), ...Object.values(after.agents)].map((agent) => agent.tokens?.encoding));
  const tokenEncoding = encodings.size === 1 ? [...encodings][0] : undefined;
  const agents = ids.map((id) => diffAgent(id, agentView(before, id), agentView(after, id), tokenEncoding !== undefined));
  return { changed: agents.some((agent) => agent.status !== "unchanged"), ...(tokenEncoding === undefined ? {} : { tokenEncoding }), agents };
}

interface SkillView {
  name: string;
  mode: Mode;
  file: string;
  description: string;
  location: string;
  body: string;
  fields: Record<string, unknown>;
  /** sha256 of each file of the skill folder but SKILL.md, by path. */
  resources: Map<string, string>;
}

interface AgentView {
  format: string;
  characters: { prompt: number; catalogue: number };
  tokens?: { prompt: number; catalogue: number };
  budget?: number | { tokens: number };
  promptHash: string;
  /** By name; a name selected from several sources pairs up in order (`name`, `name#2`, …). */
  skills: Map<string, SkillView>;
}

const EMPTY_PROMPT_HASH = sha256("");

function agentView(manifest: Manifest, id: string): AgentView | undefined {
  const agent = manifest.agents[id];
  if (!agent) return undefined;
  const byFile = new Map(manifest.skills.map((skill) => [skill.file, skill]));
  const skills = new Map<string, SkillView>();
  for (const entry of agent.skills) {
    const skill = byFile.get(entry.file)!; // parseManifest checked it is there
    let key = entry.name;
    for (let n = 2; skills.has(key); n++) key = `${entry.name}#${n}`;
    const resources = new Map(skill.files.filter((file) => file.path !== "SKILL.md").map((file) => [file.path, file.sha256]));
    skills.set(key, { ...entry, description: skill.description, location: skill.location, body: skill.body, fields: { ...skill.fields, ...skill.extra }, resources });
  }
  return { format: agent.format, characters: agent.characters, tokens: agent.tokens, budget: agent.budget, promptHash: manifest.hashes.outputs[agent.prompt] ?? EMPTY_PROMPT_HASH, skills };
}

function diffAgent(id: string, before: AgentView | undefined, after: AgentView | undefined, counted: boolean): AgentDiff {
  const diff: AgentDiff = {
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
    prompt: {
      before: promptSize(before, counted),
      after: promptSize(after, counted),
      changed: (before?.promptHash ?? EMPTY_PROMPT_HASH) !== (after?.promptHash ?? EMPTY_PROMPT_HASH),
    },
    budget: { before: budgetState(before), after: budgetState(after) },
  };
  const beforeSkills = before?.skills ?? new Map<string, SkillView>();
  const afterSkills = after?.skills ?? new Map<string, SkillView>();
  for (const [key, old] of beforeSkills) {
    if (!afterSkills.has(key)) diff.removed.push({ name: old.name, mode: old.mode, file: old.file });
  }
  for (const [key, now] of afterSkills) {
    const old = beforeSkills.get(key);
    if (!old) {
      diff.added.push({ name: now.name, mode: now.mode, file: now.file });
      continue;
    }
    const name = now.name;
    if (old.mode !== now.mode) diff.moved.push({ name, from: old.mode, to: now.mode });
    if (old.description !== now.description) diff.descriptions.push({ name, before: old.description, after: now.description });
    if (old.body !== now.body) {
      const { added, removed } = countLineChanges(old.body, now.body);
      const lines = unifiedDiff(old.body, now.body, { beforeLabel: `${name} (before)`, afterLabel: `${name} (after)`, maxLines: BODY_DIFF_LINES });
      diff.bodies.push({ name, before: sha256(old.body), after: sha256(now.body), linesAdded: added, linesRemoved: removed, diff: lines });
    }
    if (old.location !== now.location) diff.locations.push({ name, before: old.location, after: now.location });
    const resources = resourceChanges(old.resources, now.resources);
    if (resources.added.length + resources.removed.length + resources.changed.length > 0) diff.resources.push({ name, ...resources });
    const changedFields = [...new Set([...Object.keys(old.fields), ...Object.keys(now.fields)])]
      .filter((field) => field !== "name" && field !== "description" && stableJson(old.fields[field]) !== stableJson(now.fields[field]))
      .sort(compareStrings);
    if (changedFields.length > 0) diff.fields.push({ name, changed: changedFields });
  }
  const changes = [diff.added, diff.removed, diff.moved, diff.descriptions, diff.bodies, diff.locations, diff.resources, diff.fields];
  for (const list of changes) list.sort((a, b) => compareStrings(a.name, b.name));
  if (before && after && before.format !== after.format) diff.format = { before: before.format, after: after.format };
  const budgetChanged = stableJson(diff.budget.before ?? null) !== stableJson(diff.budget.after ?? null);
  const anyChange =
    diff.prompt.changed ||
    budgetChanged ||
    diff.format !== undefined ||
    changes.some((list) => list.length > 0);
  diff.status = !before ? "added" : !after ? "removed" : anyChange ? "changed" : "unchanged";
  return diff;
}

function resourceChanges(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): { added: string[]; removed: string[]; changed: string[] } {
  const paths = (filter: (path: string) => boolean, from: ReadonlyMap<string, string>) => [...from.keys()].filter(filter).sort(compareStrings);
  return {
    added: paths((path) => !before.has(path), after),
    removed: paths((path) => !after.has(path), before),
    changed: paths((path) => before.has(path) && before.get(path) !== after.get(path), after),
  };
}

function promptSize(agent: AgentView | undefined, counted: boolean): PromptSize {
  const characters = agent?.characters.prompt ?? 0;
  return { characters, tokens: counted ? (agent?.tokens?.prompt ?? 0) : estimateTokens(characters) };
}

function budgetState(agent: AgentView | undefined): BudgetState | undefined {
  if (agent?.budget === undefined) return undefined;
  if (typeof agent.budget === "number") return { limit: agent.budget, catalogue: agent.characters.catalogue, unit: "characters" };
  return { limit: agent.budget.tokens, catalogue: agent.tokens!.catalogue, unit: "tokens" }; // parseManifest checked the counts are there
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
