import { createHash } from "node:crypto";
import { join } from "node:path";
import type { Compilation } from "./compile.js";
import { compareStrings } from "./diagnostics.js";
import type { Manifest } from "./manifest.js";
import { moduleFiles } from "./module.js";
import { summarizeStructure } from "./resources.js";
import { defineOwn } from "./validate.js";

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
      ...(agent.description === undefined ? {} : { description: agent.description }),
      ...(agent.budget ? { budget: agent.budget.limit } : {}),
      ...(agent.context.files.length > 0 ? { context: agent.context.files.map((file) => file.file) } : {}),
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
        files: skill.files,
        structure: summarizeStructure(skill.files),
        ...(skill.staged ? { staged: skill.staged } : {}),
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

/** A skill file `stage: true` copies into the bundle. */
export interface StagedCopy {
  /** Absolute path of the file in the skill folder. */
  from: string;
  /** Path inside the bundle, `skills/<name>/…`. */
  path: string;
  /** What the manifest records for it. */
  sha256: string;
}

/** The files `stage: true` copies, each skill folder once, by bundle path. Pure. */
export function stagedCopies(compilation: Compilation): StagedCopy[] {
  const copies = new Map<string, StagedCopy>();
  for (const agent of compilation.agents) {
    for (const skill of agent.skills) {
      if (!skill.staged) continue;
      for (const file of skill.files) copies.set(`${skill.staged}/${file.path}`, { from: join(skill.sourceDir, file.path), path: `${skill.staged}/${file.path}`, sha256: file.sha256 });
    }
  }
  return [...copies.values()].sort((a, b) => compareStrings(a.path, b.path));
}

/**
 * Identifies what the bundle was built from, so a server can log it: the resolved config (a format function by
 * its source text), and the path and content hash of every skill in the bundle, its files and its agents'
 * context files. Paths are config-relative, so the hash does not depend on the folder the project sits in.
 */
function inputsHash(compilation: Compilation): string {
  const skills = new Map<string, unknown>();
  for (const agent of compilation.agents) for (const skill of agent.skills) skills.set(skill.file, [skill.hash, skill.files.map((file) => [file.path, file.sha256])]);
  const sorted = [...skills.entries()].sort(([a], [b]) => compareStrings(a, b));
  const context = compilation.agents.flatMap((agent) => agent.context.files.map((file) => [file.file, file.hash]));
  const config = JSON.parse(JSON.stringify(compilation.config.config, (_key, value: unknown) => (typeof value === "function" ? `function ${String(value)}` : value)));
  return sha256(stableJson({ config, skills: sorted, context }));
}

/** sha256 of each file (all but the manifest, which holds them), by path; a text two files share is hashed once. */
function outputHashes(files: ReadonlyMap<string, string>): Record<string, string> {
  const hashes: Record<string, string> = {};
  const byText = new Map<string, string>();
  for (const [path, text] of files) {
    let hash = byText.get(text);
    if (hash === undefined) byText.set(text, (hash = sha256(text)));
    hashes[path] = hash;
  }
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
    for (const key of Object.keys(value).sort()) defineOwn(sorted, key, sortKeys((value as Record<string, unknown>)[key]));
    return sorted;
  }
  return value;
}
