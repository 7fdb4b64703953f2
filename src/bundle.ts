import type { Compilation } from "./compile.js";

export const SCHEMA_VERSION = 1;
export const GENERATOR = "skillbake";

/**
 * The bundle's files (SPEC §6) as path → text. Pure: every output is derived from the compilation alone, with
 * sorted keys, LF line ends and a final newline (prompts excepted: they are byte-exact prompt text).
 */
export function bundleFiles(compilation: Compilation): Map<string, string> {
  const files = new Map<string, string>();
  const skills = new Map<string, object>();
  const agents: Record<string, object> = {};
  for (const agent of compilation.agents) {
    files.set(`prompts/${agent.id}.txt`, agent.prompt);
    agents[agent.id] = {
      format: agent.format,
      prompt: `prompts/${agent.id}.txt`,
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
  const manifest = {
    schemaVersion: SCHEMA_VERSION,
    generator: GENERATOR,
    agents,
    skills: [...skills.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, skill]) => skill),
    diagnostics: compilation.diagnostics,
  };
  files.set("manifest.json", stableJson(manifest));
  return files;
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
