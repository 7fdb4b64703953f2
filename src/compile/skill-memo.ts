import { isDeepStrictEqual } from "node:util";
import type { LoadedConfig, SourceConfig } from "./config.js";
import type { FileStats, SkillFile } from "./resources.js";
import type { RootSkill, selectAgent, SourceView } from "./select.js";

/** A SKILL.md that passed its checks, as `RootSkill` has it less where a source found it. */
export type ValidSkill = Omit<RootSkill, "dir" | "realFile" | "files">;

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
 * anew, not 10,000 skills' three times over (a rebuild there made ~200 MB of objects, ~130 MB now), and what is
 * worked out from a skill once (an entry's key, its rows, its part of the bundle's fingerprint) is kept with it.
 *
 * Each stage's object is taken again only where the object it was made from is the same (and so holds the same):
 * a skill's checked content where the build cache gave the same record for the same file, found through the same
 * stats; a source's view of it where the skill and where the source found it are the same; an agent's skill where
 * the source's view is the same and every field it ends with is equal. A new config starts over.
 *
 * Only skills whose SKILL.md was known by its signature (not read this build) are kept: their bodies are read on
 * first use, so what is kept holds no body. A build that parsed the catalogue (a session's first) holds every body
 * it read, which a kept skill would carry through the next build.
 */
export class SkillMemo {
  private config: LoadedConfig | undefined;
  /** Checked content (the build cache's record of it) → the skill made from it, and the file and stats it was made for. */
  private valid = new WeakMap<object, { skill: ValidSkill; file: string; stats: FileStats }>();
  /** A valid skill → a source's view of it. */
  private found = new WeakMap<ValidSkill, RootSkill>();
  /** The valid skills and views made as kept ones (bodies unread): only what is made from them is kept. */
  private keepable = new WeakSet<object>();
  /** Each agent's last selection, by the skills it was made from (see `KeptSelection`). */
  private selections = new Map<string, KeptSelection>();
  /** Each agent's skills by SKILL.md (the same path string build after build), and the source's view each was made from. */
  private agentSkills = new Map<string, Map<string, KeptAgentSkill>>();
  private nextAgentSkills = new Map<string, Map<string, KeptAgentSkill>>();

  /** Starts a compilation of `config`: what was kept for another config (or before) is dropped. */
  startBuild(config: LoadedConfig): void {
    if (config !== this.config) {
      this.config = config;
      this.valid = new WeakMap();
      this.found = new WeakMap();
      this.keepable = new WeakSet();
      this.selections.clear();
      this.agentSkills.clear();
    }
    this.nextAgentSkills = new Map();
  }

  /**
   * The skill made from `content` (a build cache record's) for `file` as `stats` found it, made by `make` unless
   * kept; for a SKILL.md not read this build (its body read on first use).
   */
  validSkill(content: object, file: string, stats: FileStats, make: () => ValidSkill): ValidSkill {
    const kept = this.valid.get(content);
    if (kept && kept.file === file && kept.stats === stats) return kept.skill;
    const skill = make();
    this.valid.set(content, { skill, file, stats });
    this.keepable.add(skill);
    return skill;
  }

  /** A source's view of `valid`, found at `dir` (relative to the root) with `files`, made by `make` unless kept. */
  foundSkill(valid: ValidSkill, { dir, realFile, files }: Pick<RootSkill, "dir" | "realFile" | "files">, make: () => RootSkill): RootSkill {
    if (!this.keepable.has(valid)) return make();
    const kept = this.found.get(valid);
    if (kept && kept.dir === dir && kept.realFile === realFile && kept.files === files) return kept;
    const skill = make();
    this.found.set(valid, skill);
    this.keepable.add(skill);
    return skill;
  }

  /**
   * Agent `id`'s selection from `sources`, made by `select` unless the last one was made from skills of the same
   * names, folders, files and real files (and inlined ones of the same SKILL.md hash): what a selection goes by. The kept one
   * names its skills by place (source and position), so it is made of this build's skills and holds none.
   */
  selection(id: string, sources: readonly SourceView[], select: () => Selection): Selection {
    const kept = this.selections.get(id);
    if (kept && sameShape(kept, sources)) {
      const at = ({ source, index, mode }: SelectedPlace): SelectedSkill => ({ skill: sources[source]!.skills[index]!, mode, source });
      return { selected: kept.selected.map(at), notAllowed: kept.notAllowed.map(at), findings: kept.findings, acrossSources: kept.acrossSources };
    }
    const selection = select();
    this.selections.set(id, keptSelection(sources, selection));
    return selection;
  }

  /**
   * `skills` of agent `id` as this compilation made them (from `from`, index by index), each replaced by the last
   * compilation's where that was made from the same view and is equal to it. Called once an agent's skills are final.
   */
  agentSkillsOf<T extends AgentSkillFields>(id: string, skills: readonly T[], from: readonly RootSkill[]): T[] {
    const keptSkills = this.agentSkills.get(id);
    const next = new Map<string, KeptAgentSkill>();
    this.nextAgentSkills.set(id, next);
    return skills.map((skill, index) => {
      if (!this.keepable.has(from[index]!)) return skill;
      const kept = keptSkills?.get(skill.file);
      const taken = kept && kept.from === from[index] && sameFields(kept.skill, skill) ? (kept.skill as T) : skill;
      next.set(skill.file, { skill: taken, from: from[index]! });
      return taken;
    });
  }

  /** Ends a compilation that went through: its agents' skills are what the next one may take again. */
  endBuild(): void {
    this.agentSkills = this.nextAgentSkills;
    this.nextAgentSkills = new Map();
  }
}

interface KeptAgentSkill {
  skill: AgentSkillFields;
  from: RootSkill;
}

/** A selected skill by its source and its position among that source's skills. */
interface SelectedPlace {
  source: number;
  index: number;
  mode: SelectedSkill["mode"];
}

/**
 * An agent's selection as `SkillMemo` keeps it: what each source held, as far as a selection goes by it (each skill's
 * name, folder, file and real file, and an inlined one's hash), and the selection by place.
 */
interface KeptSelection {
  sources: { config: SourceConfig; failed: readonly string[]; names: string[]; dirs: string[]; files: string[]; realFiles: string[]; displayFiles: string[] }[];
  /** The SKILL.md hash of each inlined skill, by source and position. */
  inlined: { source: number; index: number; hash: string }[];
  selected: SelectedPlace[];
  notAllowed: SelectedPlace[];
  findings: Selection["findings"];
  acrossSources: Selection["acrossSources"];
}

function keptSelection(sources: readonly SourceView[], { selected, notAllowed, findings, acrossSources }: Selection): KeptSelection {
  const positions = sources.map((source) => new Map(source.skills.map((skill, index) => [skill, index])));
  const place = ({ skill, mode, source }: SelectedSkill): SelectedPlace => ({ source, index: positions[source]!.get(skill)!, mode });
  const places = selected.map(place);
  return {
    sources: sources.map((source) => ({
      config: source.config,
      failed: source.failed ?? [],
      names: source.skills.map((skill) => skill.name),
      dirs: source.skills.map((skill) => skill.dir),
      files: source.skills.map((skill) => skill.file),
      realFiles: source.skills.map((skill) => skill.realFile),
      displayFiles: source.skills.map((skill) => skill.displayFile),
    })),
    inlined: places.flatMap(({ source, index, mode }) => (mode === "inline" ? [{ source, index, hash: sources[source]!.skills[index]!.hash }] : [])),
    selected: places,
    notAllowed: notAllowed.map(place),
    findings,
    acrossSources,
  };
}

/** Whether `sources` hold what a kept selection went by, the same. */
function sameShape(kept: KeptSelection, sources: readonly SourceView[]): boolean {
  if (kept.sources.length !== sources.length) return false;
  for (let source = 0; source < sources.length; source++) {
    const before = kept.sources[source]!;
    const { config, skills, failed = [] } = sources[source]!;
    if (before.config !== config || before.names.length !== skills.length || !sameItems(before.failed, failed)) return false;
    for (let index = 0; index < skills.length; index++) {
      const skill = skills[index]!;
      if (before.names[index] !== skill.name || before.dirs[index] !== skill.dir || before.files[index] !== skill.file || before.realFiles[index] !== skill.realFile || before.displayFiles[index] !== skill.displayFile) return false;
    }
  }
  return kept.inlined.every(({ source, index, hash }) => sources[source]!.skills[index]!.hash === hash);
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
