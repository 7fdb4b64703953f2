import { isDeepStrictEqual } from "node:util";
import type { LoadedConfig } from "./config.js";
import type { FileStats, SkillFile } from "./resources.js";
import type { RootSkill, selectAgent, SourceView } from "./select.js";

/** A SKILL.md that passed its checks, as `RootSkill` has it less where a source found it. */
export type ValidSkill = Omit<RootSkill, "dir" | "files">;

type Selection = ReturnType<typeof selectAgent>;
type SelectedSkill = Selection["selected"][number];

/** An agent's skill (compile.ts's `AgentSkill`), as far as the memo looks into it. */
interface AgentSkillFields {
  source: number;
  file: string;
}

/**
 * What a watching session keeps of its last compilation's skills, so that a skill nothing changed for is the very
 * same object build after build: an edit of one SKILL.md in a catalogue of 10,000 then makes one skill's objects
 * anew, not 10,000 skills' three times over (~100 MB of short-lived objects per rebuild), and what is worked out
 * from a skill once (an entry's key, its part of the bundle's fingerprint) is kept with it (see `entryKey`).
 *
 * Each stage's object is taken again only where the object it was made from is the same (and so holds the same):
 * a skill's checked content where the build cache gave the same record for the same file, found through the same
 * stats; a source's view of it where the skill and where the source found it are the same; an agent's skill where
 * the source's view is the same and every field it ends with is equal. A new config starts over.
 */
export class SkillMemo {
  private config: LoadedConfig | undefined;
  /** Checked content (the build cache's record of it) → the skill made from it, and the file and stats it was made for. */
  private valid = new WeakMap<object, { skill: ValidSkill; file: string; stats: FileStats }>();
  /** A valid skill → a source's view of it. */
  private found = new WeakMap<ValidSkill, RootSkill>();
  /** Each agent's sources as its selection was made from them, and that selection. */
  private selections = new Map<string, { sources: readonly SourceView[]; selection: Selection }>();
  /** An agent's skill by agent, source and SKILL.md, and the source's view it was made from. */
  private agentSkills = new Map<string, { skill: AgentSkillFields; from: RootSkill }>();
  private nextAgentSkills = new Map<string, { skill: AgentSkillFields; from: RootSkill }>();

  /** Starts a compilation of `config`: what was kept for another config (or before) is dropped. */
  startBuild(config: LoadedConfig): void {
    if (config !== this.config) {
      this.config = config;
      this.valid = new WeakMap();
      this.found = new WeakMap();
      this.selections.clear();
      this.agentSkills.clear();
    }
    this.nextAgentSkills = new Map();
  }

  /** The skill made from `content` (a build cache record's) for `file` as `stats` found it, made by `make` unless kept. */
  validSkill(content: object, file: string, stats: FileStats, make: () => ValidSkill): ValidSkill {
    const kept = this.valid.get(content);
    if (kept && kept.file === file && kept.stats === stats) return kept.skill;
    const skill = make();
    this.valid.set(content, { skill, file, stats });
    return skill;
  }

  /** A source's view of `valid`, found at `dir` (relative to the root) with `files`, made by `make` unless kept. */
  foundSkill(valid: ValidSkill, dir: string, files: readonly string[], make: () => RootSkill): RootSkill {
    const kept = this.found.get(valid);
    if (kept && kept.dir === dir && kept.files === files) return kept;
    const skill = make();
    this.found.set(valid, skill);
    return skill;
  }

  /**
   * Agent `id`'s selection from `sources`, made by `select` unless the last one was made from the same skills, or
   * from skills of which some were made anew (an edit) with the same name, folder and file: a selection goes by
   * those alone, and by an inlined skill's body (its hash then the same too).
   */
  selection(id: string, sources: readonly SourceView[], select: () => Selection): Selection {
    const kept = this.selections.get(id);
    const replaced = kept && replacedSkills(kept.sources, sources);
    let selection: Selection;
    if (!replaced || kept.selection.selected.some(({ skill, mode }) => mode === "inline" && replaced.get(skill)?.hash !== undefined && replaced.get(skill)!.hash !== skill.hash)) {
      selection = select();
    } else if (replaced.size === 0) selection = kept.selection;
    else {
      const now = (entry: SelectedSkill): SelectedSkill => (replaced.has(entry.skill) ? { ...entry, skill: replaced.get(entry.skill)! } : entry);
      selection = { selected: kept.selection.selected.map(now), notAllowed: kept.selection.notAllowed.map(now), findings: kept.selection.findings };
    }
    this.selections.set(id, { sources, selection });
    return selection;
  }

  /**
   * `skills` of agent `id` as this compilation made them (from `from`, index by index), each replaced by the last
   * compilation's where that was made from the same view and is equal to it. Called once an agent's skills are final.
   */
  agentSkillsOf<T extends AgentSkillFields>(id: string, skills: readonly T[], from: readonly RootSkill[]): T[] {
    return skills.map((skill, index) => {
      const key = `${id}\n${skill.source}\n${skill.file}`;
      const kept = this.agentSkills.get(key);
      const taken = kept && kept.from === from[index] && sameFields(kept.skill, skill) ? (kept.skill as T) : skill;
      this.nextAgentSkills.set(key, { skill: taken, from: from[index]! });
      return taken;
    });
  }

  /** Ends a compilation that went through: its agents' skills are what the next one may take again. */
  endBuild(): void {
    this.agentSkills = this.nextAgentSkills;
    this.nextAgentSkills = new Map();
  }
}

/**
 * Each skill of `kept` that `made` has another object for in its place (same name, folder and file), by the kept one;
 * undefined unless the sources are the same (and the same failed their checks) and every other skill the same object.
 */
function replacedSkills(kept: readonly SourceView[], made: readonly SourceView[]): Map<RootSkill, RootSkill> | undefined {
  if (kept.length !== made.length) return undefined;
  const replaced = new Map<RootSkill, RootSkill>();
  for (let source = 0; source < kept.length; source++) {
    const before = kept[source]!;
    const now = made[source]!;
    if (before.config !== now.config || before.skills.length !== now.skills.length || !sameItems(before.failed ?? [], now.failed ?? [])) return undefined;
    for (let index = 0; index < now.skills.length; index++) {
      const a = before.skills[index]!;
      const b = now.skills[index]!;
      if (a === b) continue;
      if (a.name !== b.name || a.dir !== b.dir || a.file !== b.file || a.displayFile !== b.displayFile) return undefined;
      replaced.set(a, b);
    }
  }
  return replaced;
}

function sameItems<T>(kept: readonly T[], made: readonly T[]): boolean {
  if (kept.length !== made.length) return false;
  for (let index = 0; index < kept.length; index++) if (kept[index] !== made[index]) return false;
  return true;
}

/**
 * Whether two agent skills hold the same: every field the same value, the files and a served skill's frontmatter
 * (made anew each build) equal. The body is not a field: it follows from the same view, read the same way.
 */
function sameFields(kept: object, made: object): boolean {
  let keys = 0;
  for (const key in made) {
    keys++;
    const a: unknown = (kept as Record<string, unknown>)[key];
    const b: unknown = (made as Record<string, unknown>)[key];
    if (a === b) continue;
    if (key === "files" ? !sameFiles(a as readonly SkillFile[], b as readonly SkillFile[]) : key !== "frontmatter" || !isDeepStrictEqual(a, b)) return false;
  }
  for (const _ in kept) keys--;
  return keys === 0;
}

function sameFiles(kept: readonly SkillFile[], made: readonly SkillFile[]): boolean {
  if (kept.length !== made.length) return false;
  for (let index = 0; index < kept.length; index++) {
    const a = kept[index]!;
    const b = made[index]!;
    if (a.path !== b.path || a.size !== b.size || a.sha256 !== b.sha256) return false;
  }
  return true;
}
