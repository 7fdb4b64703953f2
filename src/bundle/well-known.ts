import { resolve } from "node:path";
import type { AgentSkill, Compilation } from "../compile/compile.js";
import { ConfigError } from "../compile/config.js";
import { compareStrings } from "../compile/diagnostics.js";
import { sha256Hex } from "../compile/resources.js";
import { recordedFileReader } from "./module.js";
import { stableJson } from "./parts.js";
import { tarGz } from "./tar.js";
import { GENERATOR } from "./manifest.js";
import { once } from "../compile/once.js";

/** The Agent Skills discovery index's version this writes (`$schema`, which clients match to read an index). */
export const DISCOVERY_SCHEMA = "https://schemas.agentskills.io/discovery/0.2.0/schema.json";

/** An agent's discovery index and its artifacts: the folder `<publish.wellKnown>/.well-known/agent-skills`, whole. */
export interface PublishedFolder {
  agent: string;
  /** Absolute. */
  dir: string;
  /** Each file, relative to `dir`, made when asked for (once); `index.json` last, as it holds the others' digests. */
  files: PublishedFile[];
}

export interface PublishedFile {
  path: string;
  bytes(): Uint8Array;
}

/**
 * Each agent's published folder (`publish: { wellKnown }`): for every skill it serves, by name, `<name>/SKILL.md`
 * when the skill is that file alone (`skill-md`), else `<name>.tar.gz` (`archive`, see `tarGz`), both made from the
 * bytes the manifest records; and `index.json` (discovery 0.2.0) naming each with its description, its URL relative
 * to the index and the sha256 of its bytes. Two agents may not publish into one folder.
 */
export function publishedFolders(compilation: Compilation): PublishedFolder[] {
  const { config, dir: configDir, file: configFile } = compilation.config;
  const read = recordedFileReader(compilation);
  const folders: PublishedFolder[] = [];
  for (const agent of compilation.agents) {
    const wellKnown = config.agents[agent.id]?.publish?.wellKnown;
    if (wellKnown === undefined) continue;
    const dir = resolve(configDir, wellKnown, ".well-known", "agent-skills");
    const other = folders.find((folder) => folder.dir === dir);
    if (other) throw new ConfigError(configFile, `agents.${agent.id}.publish.wellKnown: agent "${other.agent}" publishes into ${dir} already; give each agent a folder of its own`);
    const served = new Set(agent.served);
    const skills = agent.skills.filter((skill) => served.delete(skill.name)).sort((a, b) => compareStrings(a.name, b.name));
    const artifacts = skills.map((skill) => artifactOf(skill, read));
    const index = once(() =>
      Buffer.from(
        stableJson({
          $schema: DISCOVERY_SCHEMA,
          generator: GENERATOR,
          skills: artifacts.map(({ skill, type, file }) => ({ description: skill.frontmatter!.description as string, digest: `sha256:${sha256Hex(file.bytes())}`, name: skill.name, type, url: file.path })),
        }),
      ),
    );
    folders.push({ agent: agent.id, dir, files: [...artifacts.map(({ file }) => file), { path: "index.json", bytes: index }] });
  }
  return folders;
}

/** A skill's artifact: its SKILL.md when that is its only file, else an archive of its folder. */
function artifactOf(skill: AgentSkill, read: ReturnType<typeof recordedFileReader>): { skill: AgentSkill; type: "skill-md" | "archive"; file: PublishedFile } {
  if (skill.files.length === 1 && skill.files[0]!.path === "SKILL.md") {
    return { skill, type: "skill-md", file: { path: `${skill.name}/SKILL.md`, bytes: once(() => read(skill, skill.files[0]!)) } };
  }
  return { skill, type: "archive", file: { path: `${skill.name}.tar.gz`, bytes: once(() => tarGz(skill.files.map((file) => ({ path: file.path, bytes: read(skill, file) })))) } };
}
