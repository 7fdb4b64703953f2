import picomatch from "picomatch";
import type { AgentConfig, SourceConfig } from "./config.js";
import { agentsNamed, compareStrings, type Finding } from "./diagnostics.js";
import { comparePaths } from "./discover.js";
import type { Mode } from "./model.js";
import type { WrittenFrontmatter } from "./parse.js";
import { findSkillTag, type SkillContent } from "./validate.js";

/** A valid skill as found in one root. */
export interface RootSkill extends SkillContent {
  /** Absolute SKILL.md path as discovered. */
  file: string;
  /** SKILL.md relative to the config folder, `/`-separated: how diagnostics and `relative` locations name it. */
  displayFile: string;
  /** Skill folder relative to its root, `/`-separated. */
  dir: string;
  /** Real path of the SKILL.md: one file reached through two sources is one skill. */
  realFile: string;
  /** sha256 of the SKILL.md bytes. */
  hash: string;
  /** The skill folder's files, relative to it, in path order (see `DiscoveredSkill.files`). */
  files: readonly string[];
  /** Its frontmatter as written (reads SKILL.md again): for the skills an agent serves. */
  written: () => WrittenFrontmatter;
}

export interface SelectedSkill {
  skill: RootSkill;
  mode: Mode;
  /** Index of the source in the agent's `skills` list. */
  source: number;
}

export interface SourceView {
  config: SourceConfig;
  /** The valid skills the source found (its `include` and `exclude` applied), in path order. */
  skills: readonly RootSkill[];
  /**
   * The folder names of the skills it found that failed their checks: a pattern that would select one is not
   * reported as selecting nothing, as the skill's own diagnostics say why it is missing.
   */
  failed?: readonly string[];
}

/** A name an agent selects from several sources and keeps each of (`duplicates: "keep-all"`): `duplicate-across-sources`. */
export interface AcrossSources {
  name: string;
  files: string[];
}

/**
 * `duplicate-across-sources`, once for every agent that selects a name from the same files (two agents over the
 * same roots share their duplicates: a finding each would repeat it per agent). `configFile`: where it points.
 */
export function acrossSourcesFindings(agents: readonly { id: string; acrossSources: readonly AcrossSources[] }[], configFile: string | undefined): Finding[] {
  const groups = new Map<string, { group: AcrossSources; agents: string[] }>();
  for (const agent of agents) {
    for (const group of agent.acrossSources) {
      const key = [group.name, ...group.files].join("\0");
      const known = groups.get(key);
      if (known) known.agents.push(agent.id);
      else groups.set(key, { group, agents: [agent.id] });
    }
  }
  return [...groups.values()].map(({ group: { name, files }, agents: ids }) => ({
    code: "duplicate-across-sources",
    file: configFile,
    message: `${agentsNamed(ids)} ${ids.length === 1 ? "selects" : "select"} "${name}" from ${files.length} sources (${files.join(", ")}); all are included`,
    hint: 'Narrow one source\'s patterns so the agent sees one skill of each name, or set `duplicates: "first"` or `"last"` to keep one.',
  }));
}

/** The agent settings that act on its selection as a whole. */
export type SelectionSettings = Partial<Pick<AgentConfig, "allow" | "duplicates">>;

/**
 * Which skills an agent sees and how. Pure. Output order: sources in config order, within a
 * source by name, then path. Each source's patterns select; then `allow` keeps the names it matches; then
 * `duplicates` settles a name selected from several sources.
 */
export function selectAgent(
  agentId: string,
  sources: readonly SourceView[],
  configFile: string | undefined,
  settings: SelectionSettings = {},
): { selected: SelectedSkill[]; notAllowed: SelectedSkill[]; findings: Finding[]; acrossSources: AcrossSources[] } {
  const findings: Finding[] = [];
  const acrossSources: AcrossSources[] = [];
  let selected: SelectedSkill[] = [];
  let notAllowed: SelectedSkill[] = [];

  sources.forEach((source, sourceIndex) => {
    const where = `agents.${agentId}.skills[${sourceIndex}]`;
    const skills = uniqueNames(source.skills, settings.duplicates === "last" ? "last" : "first", findings);
    const available = source.config.available ?? (source.config.inline ? [] : ["*"]);
    const inline = source.config.inline ?? [];
    const availableMatcher = compilePatterns(available);
    const inlineMatcher = compilePatterns(inline);

    for (const skill of [...skills].sort((a, b) => compareStrings(a.name, b.name) || comparePaths(a.dir, b.dir))) {
      const isInline = inlineMatcher.matches(skill.name);
      const isAvailable = availableMatcher.matches(skill.name);
      if (isInline && isAvailable) {
        findings.push({
          code: "selection-overlap",
          file: configFile,
          message: `${where}: "${skill.name}" is matched by both \`available\` and \`inline\`; it is inlined`,
          hint: `Exclude it from \`available\` with "!${skill.name}", or narrow the patterns.`,
        });
      }
      if (!isInline && !isAvailable) continue;
      selected.push({ skill, mode: isInline ? "inline" : "available", source: sourceIndex });
    }

    // Only patterns the config wrote are reported; the implicit `available: ["*"]` is not.
    const names = skills.map((skill) => skill.name);
    for (const field of ["available", "inline"] as const) {
      const written = source.config[field];
      if (!written) continue;
      for (const pattern of compilePatterns(written).unmatched([...names, ...(source.failed ?? [])])) {
        findings.push({
          code: "pattern-unmatched",
          file: configFile,
          message: `${where}.${field}: "${pattern}" ${pattern.startsWith("!") ? "excludes" : "selects"} no skill in ${source.config.root}`,
          hint: names.length > 0 ? `Patterns match skill names (case-sensitive), such as "${names[0]}".` : "The root holds no valid skill.",
        });
      }
    }
  });

  selected = oncePerFile(selected);

  if (settings.allow) {
    const allowed = compilePatterns(settings.allow);
    const names = [...new Set(selected.map((entry) => entry.skill.name))];
    for (const pattern of allowed.unmatched([...names, ...sources.flatMap((source) => source.failed ?? [])])) {
      findings.push({
        code: "pattern-unmatched",
        file: configFile,
        message: `agents.${agentId}.allow: "${pattern}" ${pattern.startsWith("!") ? "excludes" : "allows"} no selected skill`,
        hint: names.length > 0 ? `\`allow\` matches the names the sources selected, such as "${names[0]}".` : "The agent's sources select no skill.",
      });
    }
    notAllowed = selected.filter((entry) => !allowed.matches(entry.skill.name));
    selected = selected.filter((entry) => allowed.matches(entry.skill.name));
  }

  // Canonical twins ("café" in NFC and in NFD) print alike: one name.
  const byName = new Map<string, SelectedSkill[]>();
  for (const entry of selected) {
    const key = entry.skill.name.normalize("NFC");
    const entries = byName.get(key);
    if (entries) entries.push(entry);
    else byName.set(key, [entry]);
  }
  const duplicates = settings.duplicates ?? "keep-all";
  // Left out at once after the loop: a filter of the whole selection per name made two overlapping catalogues of
  // 10,000 skills take 1.7 s.
  const losers = new Set<SelectedSkill>();
  for (const [name, entries] of byName) {
    if (entries.length < 2) continue; // one root never gives a name twice (see uniqueNames), so these come from several sources
    if (duplicates === "keep-all") {
      acrossSources.push({ name, files: entries.map((entry) => entry.skill.displayFile) });
      continue;
    }
    // `first`: the earliest source wins; `last`: a later source overrides (user skills over built-in ones).
    const winner = duplicates === "first" ? entries[0]! : entries[entries.length - 1]!;
    for (const entry of entries) if (entry !== winner) losers.add(entry);
  }
  if (losers.size > 0) selected = selected.filter((entry) => !losers.has(entry));

  // Only an inlined body stands inside a `<skill>` element: the same text in an available skill's file is harmless.
  for (const { skill, mode } of selected) {
    const skillTag = mode === "inline" ? findSkillTag(skill.body, skill.bodyLine) : undefined;
    if (!skillTag) continue;
    const { text, line, column, endLine, endColumn } = skillTag;
    findings.push({
      code: "body-closes-tag",
      file: skill.displayFile,
      line,
      column,
      endLine,
      endColumn,
      message: `agent "${agentId}" inlines "${skill.name}", whose body contains \`${text}\`: ${text.startsWith("</") ? "it ends the skill's element early, and what follows reads as outside the skill" : "it reads as the start of another skill"}`,
      hint: 'Reword it (write "&lt;/skill&gt;" or describe the tag in words), or make the skill available rather than inline. `rules: { "body-closes-tag": "error" }` makes builds refuse such skills.',
    });
  }
  return { selected, notAllowed, findings, acrossSources };
}

/**
 * One SKILL.md reached through several sources (a root and a link to it, as `.claude/skills` → `.agents/skills`)
 * is one skill, as Pi loads a file once: at the first source's place, and inlined when any source inlines it (as
 * one source's `available` and `inline` both matching inline it). Copies of a skill are files of their own:
 * `duplicates` settles those.
 */
function oncePerFile(selected: readonly SelectedSkill[]): SelectedSkill[] {
  const inlined = new Set(selected.flatMap((entry) => (entry.mode === "inline" ? [entry.skill.realFile] : [])));
  const seen = new Set<string>();
  const kept: SelectedSkill[] = [];
  for (const entry of selected) {
    if (seen.has(entry.skill.realFile)) continue;
    seen.add(entry.skill.realFile);
    kept.push(entry.mode === "available" && inlined.has(entry.skill.realFile) ? { ...entry, mode: "inline" } : entry);
  }
  return kept;
}

/**
 * Two skills of one name in one root (`duplicate-name`): the first in path order wins, or with
 * `duplicates: "last"` the last (the last discovered overrides, as in a server that keys skills by name). Names are compared in
 * Unicode's canonical form (NFC), so "café" spelled with é and with e + U+0301, which print alike, are one name.
 */
function uniqueNames(skills: readonly RootSkill[], wins: "first" | "last", findings: Finding[]): RootSkill[] {
  const winners = new Map<string, RootSkill>();
  for (const skill of wins === "first" ? skills : [...skills].reverse()) {
    const winner = winners.get(skill.name.normalize("NFC"));
    if (winner) {
      const spelling = winner.name === skill.name ? "" : ` (as the same name in another Unicode normalization)`;
      findings.push({
        code: "duplicate-name",
        file: skill.displayFile,
        line: 1,
        column: 1,
        message: `"${skill.name}" is already defined by ${winner.displayFile}${spelling}, which comes ${wins} in path order${wins === "last" ? ' (duplicates: "last")' : ""}; this one is left out`,
        hint: "Rename one of the two skills, or delete the copy.",
      });
      continue;
    }
    winners.set(skill.name.normalize("NFC"), skill);
  }
  const kept = new Set(winners.values());
  return skills.filter((skill) => kept.has(skill));
}

interface PatternSet {
  matches(name: string): boolean;
  /** Patterns that take part in no decision over `names`. */
  unmatched(names: readonly string[]): string[];
}

/**
 * picomatch given a list OR-s every pattern, so a `!x` in a list would match nearly everything. Here
 * positive patterns select and `!` patterns remove from that selection; a list of only `!` patterns
 * removes from every name. `/` in a name separates namespaces (`triage/issue-triage`): `triage/*`
 * matches inside one, and `*` alone, the default selection, matches every name, namespaced ones included.
 */
export function compilePatterns(patterns: readonly string[]): PatternSet {
  const compiled = patterns.map((pattern) => {
    const negated = pattern.startsWith("!");
    const glob = negated ? pattern.slice(1) : pattern;
    return { pattern, negated, test: glob === "*" ? () => true : picomatch(glob, { dot: true }) };
  });
  const positives = compiled.filter((entry) => !entry.negated);
  const negatives = compiled.filter((entry) => entry.negated);
  const onlyNegated = positives.length === 0 && negatives.length > 0;
  return {
    matches: (name) => (onlyNegated || positives.some((entry) => entry.test(name))) && !negatives.some((entry) => entry.test(name)),
    unmatched: (names) => compiled.filter((entry) => !names.some((name) => entry.test(name))).map((entry) => entry.pattern),
  };
}
