import { createHash } from "node:crypto";
import type { Compilation } from "./compile.js";
import { compareStrings } from "./diagnostics.js";
import type { Manifest } from "./manifest.js";
import { moduleFiles } from "./module.js";

export const SCHEMA_VERSION = 1;
export const GENERATOR = "skillbake";

/**
 * The bundle's files (SPEC §6) as path → text. Pure: every output is derived from the compilation alone, with
 * sorted keys, LF line ends and a final newline (prompts excepted: they are byte-exact prompt text).
 */
export function bundleFiles(compilation: Compilation): Map<string, string> {
  const files = new Map<string, string>();
  const skills = new Map<string, Manifest["skills"][number]>();
  const agents: Manifest["agents"] = {};
  for (const agent of compilation.agents) {
    files.set(`prompts/${agent.id}.txt`, agent.prompt);
    agents[agent.id] = {
      format: agent.format,
      prompt: `prompts/${agent.id}.txt`,
      // Recorded so `skills diff` can compare sizes from a manifest alone; the catalogue is what a budget limits.
      characters: { prompt: agent.prompt.length, catalogue: agent.catalogueCharacters },
      skills: agent.skills.map((skill) => ({ name: skill.name, mode: skill.mode, source: skill.source, file: skill.file })),
    };
    for (const skill of agent.skills) {
      skills.set(skill.file, {
        name: skill.name,
        description: skill.description,
        file: skill.file,
        location: skill.location,
        baseDir: skill.baseDir,
        hash: skill.hash,
        fields: skill.fields,
        extra: skill.extra,
        body: skill.body,
      });
    }
  }
  for (const [path, text] of moduleFiles(compilation)) files.set(path, text);
  const manifest: Manifest = {
    schemaVersion: SCHEMA_VERSION,
    generator: GENERATOR,
    agents,
    skills: [...skills.entries()].sort(([a], [b]) => compareStrings(a, b)).map(([, skill]) => skill),
    diagnostics: compilation.diagnostics,
    // Last, so it covers every other file of the bundle.
    hashes: { inputs: inputsHash(compilation), outputs: outputHashes(files) },
  };
  files.set("manifest.json", stableJson(manifest));
  return files;
}

/**
 * Identifies what the bundle was built from, so a server can log it: the resolved config and the path and
 * content hash of every skill in the bundle. Paths are config-relative, so the hash does not depend on the
 * folder the project sits in.
 */
function inputsHash(compilation: Compilation): string {
  const skills = new Map<string, string>();
  for (const agent of compilation.agents) for (const skill of agent.skills) skills.set(skill.file, skill.hash);
  const sorted = [...skills.entries()].sort(([a], [b]) => compareStrings(a, b));
  return sha256(stableJson({ config: compilation.config.config, skills: sorted }));
}

/** sha256 of each file (all but the manifest, which holds them), by path. */
function outputHashes(files: ReadonlyMap<string, string>): Record<string, string> {
  const hashes: Record<string, string> = {};
  for (const [path, text] of files) hashes[path] = sha256(text);
  return hashes;
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** JSON with object keys sorted at every depth, two-space indented, LF and a final newline. */
export function stableJson(value: unknown): string {
  return `${JSON.stringify(sortKeys(value), null, 2)}\n`;
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === "object" && !(value instanceof Date)) {
    const sorted: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) sorted[key] = sortKeys((value as Record<string, unknown>)[key]);
    return sorted;
  }
  return value;
}
