/**
 * A bundle's manifest as review reads it. A pull request may commit a bundle, so its manifest is parsed, not
 * trusted: validated whole against the manifest schema (agent ids by their pattern, token encodings from the known
 * set, sizes as non-negative integers), checked for what the schema cannot say (each agent's skills are the
 * manifest's, its prompt is `prompts/<id>.txt`), and turned into maps, so that no id or name is ever looked up
 * as a property (`constructor`, `toString`).
 */
import { GENERATOR, manifestSchema, SCHEMA_VERSION } from "../bundle/manifest.js";
import { AGENT_ID_MAX_LENGTH, AGENT_ID_PATTERN } from "../compile/config.js";
import { clipLines } from "../compile/diagnostics.js";
import { RULES, type RuleCode } from "../compile/rules.js";
import type { Mode } from "../compile/model.js";

/** Where a skill stands in an agent's prompt: in the catalogue, inlined, hidden from the model, or dropped by the budget. */
export type Placement = "listed" | "inline" | "hidden" | "dropped";

/** What a skill of the manifest is, whichever agents list it: one object per skill, which every entry of it shares. */
export interface ReviewContent {
  description: string;
  body: string;
  /** Frontmatter: the typed fields, then `extra`, by field name. */
  fields: Map<string, unknown>;
  /** sha256 of each file of the skill folder but SKILL.md, by path. */
  resources: Map<string, string>;
}

/** A skill as one agent lists it. */
export interface ReviewSkill {
  name: string;
  file: string;
  mode: Mode;
  placement: Placement;
  location: string;
  content: ReviewContent;
}

export interface ReviewAgent {
  format: string;
  characters: { prompt: number; catalogue: number };
  tokens?: { encoding: string; prompt: number; catalogue: number };
  budget?: number | { tokens: number };
  toolDescription?: string;
  tool?: { style: string; name: string };
  /** The context files, in prompt order, with their sha256 when the manifest records it. */
  context: Map<string, string | undefined>;
  /** SKILL.md files the agent's `allow` left out. */
  notAllowed: Set<string>;
  /** sha256 of `prompts/<id>.txt`, as the manifest records it. */
  promptHash: string;
  /** By name; a name selected from several sources pairs up in order (`name`, `name#2`, …). */
  skills: Map<string, ReviewSkill>;
}

export interface ReviewManifest {
  agents: Map<string, ReviewAgent>;
  /** Why a SKILL.md is left out of every agent: the first diagnostic of a rule that skips its skill, by file. */
  failed: Map<string, { code: string; message: string }>;
}

/** A bundle review cannot read: the message names the file (and the field) and is one line, clipped (`clipLines`): it may quote a key of the manifest. */
export class ManifestError extends Error {
  override name = "ManifestError";

  constructor(message: string) {
    super(clipLines(message));
  }
}

/** A bundle that does not exist: every agent of the other side is new. */
export const EMPTY_MANIFEST: ReviewManifest = { agents: new Map(), failed: new Map() };

/** Validates parsed manifest JSON; `label` names the file in the error. */
export function parseManifest(value: unknown, label: string): ReviewManifest {
  const version = isRecord(value) && Object.hasOwn(value, "schemaVersion") ? value.schemaVersion : undefined;
  if (isRecord(value) && value.generator === GENERATOR && typeof version === "number" && version !== SCHEMA_VERSION) {
    const rebuild = "rebuild both bundles with the same skillbake (`skills build --out DIR`) and compare those";
    throw new ManifestError(`${label}: schemaVersion ${version}; this skillbake reads schemaVersion ${SCHEMA_VERSION}: ${rebuild}`);
  }
  // Checked on the JSON itself: the schema's record drops a key `__proto__` without a word, and the agent would vanish.
  const ids = isRecord(value) && isRecord(value.agents) ? Object.keys(value.agents) : [];
  const badId = ids.find((id) => !AGENT_ID_PATTERN.test(id) || id.length > AGENT_ID_MAX_LENGTH);
  if (badId !== undefined) throw new ManifestError(`${label}: agents.${badId}: not an agent id (lowercase letters, digits and hyphens, starting with a letter, at most ${AGENT_ID_MAX_LENGTH} characters)`);
  const parsed = manifestSchema().safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = fieldPath(issue.path);
    const message = issue.message.replace(/^Invalid input: /, "");
    throw new ManifestError(`${label}: ${path || "(manifest)"}: ${message}. Is it a skillbake manifest.json? Rebuild it with \`skills build\`.`);
  }
  // Maps from the JSON itself: an object copy turns a key `__proto__` into something else.
  const raw = value as { skills: { fields: object; extra: object }[] };
  assertShallowFields(raw.skills, label);
  const manifest = parsed.data;
  const skillsByFile = new Map<string, { skill: (typeof manifest.skills)[number]; index: number }>();
  manifest.skills.forEach((skill, index) => skillsByFile.set(skill.file, { skill, index }));
  // Made on first use, once per skill however many agents list it: a manifest of agents × skills costs no more.
  const contents: ReviewContent[] = [];
  const contentOf = (index: number): ReviewContent => {
    if (contents[index]) return contents[index];
    const skill = manifest.skills[index]!;
    const fields = new Map([...Object.entries(raw.skills[index]!.fields), ...Object.entries(raw.skills[index]!.extra)]);
    const resources = new Map<string, string>();
    for (const file of skill.files) if (file.path !== "SKILL.md") resources.set(file.path, file.sha256);
    return (contents[index] = { description: skill.description, body: skill.body, fields, resources });
  };
  const agents = new Map<string, ReviewAgent>();
  for (const [id, agent] of Object.entries(manifest.agents)) {
    const where = `${label}: agents.${id}`;
    if (agent.prompt !== `prompts/${id}.txt`) throw new ManifestError(`${where}.prompt: expected prompts/${id}.txt`);
    if (typeof agent.budget === "object" && !agent.tokens) throw new ManifestError(`${where} has a budget in tokens but no token counts`);
    const skills = new Map<string, ReviewSkill>();
    const files = new Set<string>();
    // The suffix to try next for each name listed more than once: each key is found in constant time.
    const nextSuffix = new Map<string, number>();
    agent.skills.forEach((entry, index) => {
      const found = skillsByFile.get(entry.file);
      if (!found) throw new ManifestError(`${where}.skills[${index}].file: not among the manifest's skills`);
      // One file is one skill of the agent (as skillbake writes it since it loads a file once, as Pi does): a second
      // listing, from an older bundle or a forged one, adds nothing, and cannot multiply what review compares and prints.
      if (files.has(entry.file)) return;
      files.add(entry.file);
      const { skill } = found;
      if (entry.name !== skill.name) throw new ManifestError(`${where}.skills[${index}].name: not the name its file has in skills[${found.index}]`);
      const content = contentOf(found.index);
      const hidden = content.fields.get("disable-model-invocation") === true;
      const placement: Placement = entry.mode === "inline" ? "inline" : entry.listed ? "listed" : hidden ? "hidden" : "dropped";
      let key = entry.name;
      if (skills.has(key)) {
        let n = nextSuffix.get(entry.name) ?? 2;
        while (skills.has(`${entry.name}#${n}`)) n++;
        key = `${entry.name}#${n}`;
        nextSuffix.set(entry.name, n + 1);
      }
      skills.set(key, { name: entry.name, file: entry.file, mode: entry.mode, placement, location: entry.location ?? skill.location, content });
    });
    const contextHashes = agent.contextSha256 ? new Map(Object.entries(agent.contextSha256)) : new Map<string, string>();
    agents.set(id, {
      format: agent.format,
      characters: agent.characters,
      ...(agent.tokens ? { tokens: agent.tokens } : {}),
      ...(agent.budget === undefined ? {} : { budget: agent.budget }),
      ...(agent.toolDescription === undefined ? {} : { toolDescription: agent.toolDescription }),
      ...(agent.tool ? { tool: agent.tool } : {}),
      context: new Map((agent.context ?? []).map((file) => [file, contextHashes.get(file)])),
      notAllowed: new Set(agent.notAllowed ?? []),
      promptHash: Object.hasOwn(manifest.hashes.outputs, agent.prompt) ? manifest.hashes.outputs[agent.prompt]! : "",
      skills,
    });
  }
  const failed = new Map<string, { code: string; message: string }>();
  for (const diagnostic of manifest.diagnostics) {
    const skips = RULES[diagnostic.code as RuleCode].skip;
    if (diagnostic.file !== undefined && (skips === "skip" || skips === "loser") && !failed.has(diagnostic.file)) failed.set(diagnostic.file, { code: diagnostic.code, message: diagnostic.message });
  }
  return { agents, failed };
}

/**
 * Levels a frontmatter value of a manifest may nest: a SKILL.md's YAML nests at most 64. Deeper values exist only in
 * a forged manifest, and every recursive walk of them (JSON.stringify among them) would run out of stack.
 */
const FIELD_NESTING_MAX = 100;

/** Throws on the first frontmatter value nested past `FIELD_NESTING_MAX`; walked without recursion. */
function assertShallowFields(skills: readonly { fields: object; extra: object }[], label: string): void {
  skills.forEach((skill, index) => {
    for (const group of ["fields", "extra"] as const) {
      for (const [name, value] of Object.entries(skill[group])) {
        const pending: [unknown, number][] = [[value, 1]];
        for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
          const [item, depth] = next;
          if (typeof item !== "object" || item === null) continue;
          if (depth > FIELD_NESTING_MAX) throw new ManifestError(`${label}: ${fieldPath(["skills", index, group, name])}: nested more than ${FIELD_NESTING_MAX} levels deep, which no SKILL.md's frontmatter is. Is it a skillbake manifest.json? Rebuild it with \`skills build\`.`);
          for (const child of Object.values(item)) pending.push([child, depth + 1]);
        }
      }
    }
  });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** `agents.coding.skills[2].name`, as a reader finds it in the file. */
function fieldPath(path: readonly PropertyKey[]): string {
  return path.map((segment) => (typeof segment === "number" ? `[${segment}]` : `.${String(segment)}`)).join("").replace(/^\./, "");
}
