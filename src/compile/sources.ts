import { readdirSync } from "node:fs";
import { basename, dirname } from "node:path";
import picomatch from "picomatch";
import { resolveRoot, type LoadedConfig, type SourceConfig } from "./config.js";
import type { Finding } from "./diagnostics.js";
import { pathIn, type DiscoveredSkill, type RootListing } from "./discover.js";
import { closest } from "./suggest.js";
import { trimEnd } from "./trim.js";

/** One source of one agent, with the root's listing and the skills of it the source builds. */
export interface SourcePlan {
  agent: string;
  /** Index of the source in the agent's `skills` list. */
  index: number;
  config: SourceConfig;
  listing: RootListing;
  /** The root's skills the source builds, in path order: `include` and `exclude` applied, hidden ones only where `include` names their folder. */
  skills: DiscoveredSkill[];
}

/** How `agents.<id>.skills[i]` reads in a message; `skills check PATH…` has no config to point at, but the path. */
export function sourceName(loaded: LoadedConfig, agent: string, index: number): string {
  return loaded.implicit ? `the path ${JSON.stringify(loaded.config.agents[agent]!.skills[index]!.root)}` : `agents.${agent}.skills[${index}]`;
}

/**
 * Each agent's sources with the skills they build. `discover(root, nested)` gives a root's listing (walked once per
 * root and `nested`). A source's `include` names a dot folder when a glob matches the skill's folder without
 * reaching into dot folders on its own (picomatch's `dot: false`): `".curated/**"` does, `"**"` does not.
 * Without a config (`skills check PATH…`), every skill is built, hidden ones too.
 */
export function planSources(loaded: LoadedConfig, discover: (root: string, nested: boolean) => RootListing): SourcePlan[] {
  return Object.entries(loaded.config.agents).flatMap(([agent, { skills }]) =>
    skills.map((config, index): SourcePlan => {
      const listing = discover(resolveRoot(config.root, loaded.dir), config.nested === true);
      const names = config.include ? picomatch(config.include, { dot: false }) : undefined;
      const narrowed = narrowing(config);
      const skills = listing.skills.filter((skill) => narrowed(skill.dir) && (!skill.hidden || loaded.implicit === true || names?.(skill.dir) === true));
      return { agent, index, config, listing, skills };
    }),
  );
}

/** `include` and `exclude` as they narrow discovery, dot folders aside (`include: ["**"]` keeps `.curated/x` here). */
function narrowing(config: SourceConfig): (dir: string) => boolean {
  const included = config.include ? picomatch(config.include, { dot: true }) : () => true;
  const excluded = config.exclude ? picomatch(config.exclude, { dot: true }) : () => false;
  return (dir) => included(dir) && !excluded(dir);
}

/**
 * A SKILL.md under a root that no source builds, though a source's `include` and `exclude` keep it: in a dot folder
 * (`hidden-skill`) or inside another skill's folder (`nested-skill`), named with the setting that builds it. One
 * finding per file, for the first source (in config order) that leaves it out.
 */
export function unbuiltFindings(plans: readonly SourcePlan[], built: ReadonlySet<string>, display: (path: string) => string, name: (plan: SourcePlan) => string): Finding[] {
  const findings: Finding[] = [];
  const reported = new Set<string>();
  for (const plan of plans) {
    const names = plan.config.include ? picomatch(plan.config.include, { dot: false }) : () => false;
    for (const { file, dir, hidden, within } of leftOut(plan)) {
      if (built.has(file) || reported.has(file)) continue;
      reported.add(file);
      if (hidden && !names(dir)) {
        const folder = dotFolder(dir);
        findings.push({
          code: "hidden-skill",
          file: display(file),
          message: `this skill is inside the dot folder ${folder}, which ${name(plan)} does not descend into: it is not built`,
          hint: `To build it, give the source an \`include\` glob that names the folder: include: ["**", "${folder}/**"]. To leave it out without this warning: exclude: ["${folder}/**"].`,
        });
      } else {
        findings.push({
          code: "nested-skill",
          file: display(file),
          message: `this SKILL.md is inside the folder of the skill ${display(within ? pathIn(plan.listing.root, within) : plan.listing.root) || "."}, so ${name(plan)} reads it as one of that skill's files, not as a skill of its own`,
          hint: `To build it as a skill of its own, set \`nested: true\` on the source. To leave it out without this warning: exclude: ["${dir}"].`,
        });
      }
    }
  }
  return findings;
}

/** The SKILL.md files under a source's root that it does not build though its `include` and `exclude` keep them: hidden or enclosed. */
export function leftOut(plan: SourcePlan): { file: string; dir: string; hidden: boolean; within?: string }[] {
  const narrowed = narrowing(plan.config);
  const builds = new Set(plan.skills);
  const hidden = plan.listing.skills.filter((skill) => skill.hidden && !builds.has(skill)).map((skill) => ({ file: skill.file, dir: skill.dir, hidden: true }));
  return [...hidden, ...plan.listing.enclosed].filter((entry) => narrowed(entry.dir));
}

/** The path down to the first folder of `dir` whose name starts with `.`. */
function dotFolder(dir: string): string {
  const segments = dir.split("/");
  const at = segments.findIndex((segment) => segment.startsWith("."));
  return segments.slice(0, at + 1).join("/");
}

/**
 * `root-missing` and `root-not-folder`, once per root as the config writes it, for the first source that is not
 * `optional`: naming the root as written (`~/skills`, not the path it resolves to), with the nearest folder's name
 * when the root looks mistyped.
 */
export function rootFindings(plans: readonly SourcePlan[], loaded: LoadedConfig, configFile: string | undefined, name: (plan: SourcePlan) => string): Finding[] {
  const findings: Finding[] = [];
  const reported = new Set<string>();
  for (const plan of plans) {
    const { unusable, root } = plan.listing;
    if (!unusable || plan.config.optional || reported.has(root)) continue;
    reported.add(root);
    const written = plan.config.root;
    const subject = loaded.implicit ? name(plan) : `the root "${written}" of ${name(plan)}`;
    if (unusable.code === "root-not-folder") {
      findings.push({
        code: "root-not-folder",
        file: configFile,
        message: `${subject} is a file, not a folder`,
        hint: "A root is a folder of skill folders (or one skill's folder); point `root` at the folder that holds SKILL.md, not at the file.",
      });
      continue;
    }
    const suggestion = unusable.reason === "does not exist" ? nearbyFolder(root, written) : undefined;
    findings.push({
      code: "root-missing",
      file: configFile,
      message: `${subject} ${unusable.reason}${suggestion ? `. Did you mean "${suggestion}"?` : ""}`,
      hint: loaded.implicit
        ? "Check the path: a relative one resolves against the current folder."
        : "Check `root` (a relative root resolves against the config file's folder). A root that exists on some machines only (`~/skills` on a laptop) can be marked `optional: true`.",
    });
  }
  return findings;
}

/** `written` with its last name replaced by the closest folder name beside the missing root, when one is that close. */
function nearbyFolder(root: string, written: string): string | undefined {
  let names: string[];
  try {
    names = readdirSync(dirname(root), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() || entry.isSymbolicLink())
      .map((entry) => entry.name);
  } catch {
    return undefined;
  }
  const match = closest(basename(root), names);
  if (match === undefined) return undefined;
  const trimmed = trimEnd(written, "/");
  const cut = trimmed.lastIndexOf("/");
  return cut < 0 ? match : `${trimmed.slice(0, cut + 1)}${match}`;
}
