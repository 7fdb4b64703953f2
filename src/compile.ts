import { createHash } from "node:crypto";
import { basename, dirname } from "node:path";
import { resolveRoot, type LoadedConfig } from "./config.js";
import { resolveFindings, type Diagnostic, type Finding } from "./diagnostics.js";
import { discoverRoot, readSkillBytes, relativeTo, type RootListing } from "./discover.js";
import type { SkillFields } from "./model.js";
import { parseSkillFile } from "./parse.js";
import { locate, renderPrompt, type FormatName } from "./render.js";
import { selectAgent, type Mode, type RootSkill } from "./select.js";
import { validateSkill } from "./validate.js";

/** One skill as one agent sees it. */
export interface AgentSkill {
  name: string;
  description: string;
  location: string;
  baseDir: string;
  mode: Mode;
  /** Index of the source in the agent's `skills` list. */
  source: number;
  /** SKILL.md relative to the config folder. */
  file: string;
  fields: SkillFields;
  extra: Record<string, unknown>;
  /** sha256 of the SKILL.md bytes. */
  hash: string;
  body: string;
}

export interface CompiledAgent {
  id: string;
  format: FormatName;
  skills: AgentSkill[];
  prompt: string;
}

export interface Compilation {
  config: LoadedConfig;
  agents: CompiledAgent[];
  diagnostics: Diagnostic[];
}

/** Open files at once while reading SKILL.md files: enough to keep the disk busy, far from the fd limit. */
const READ_CONCURRENCY = 64;

export interface CompileOptions {
  /** Called as SKILL.md files are read and checked, so a front end can show progress on long runs. */
  onProgress?: (progress: { done: number; total: number }) => void;
}

/** config → discover → parse → validate → select → render, in memory. */
export async function compile(loaded: LoadedConfig, options: CompileOptions = {}): Promise<Compilation> {
  const { config, dir: configDir } = loaded;
  const display = (path: string) => relativeTo(configDir, path);
  const findings: Finding[] = [];

  const roots = new Map<string, Promise<RootListing>>();
  for (const agent of Object.values(config.agents)) {
    for (const source of agent.skills) {
      const root = resolveRoot(source.root, configDir);
      if (!roots.has(root)) roots.set(root, discoverRoot(root, display));
    }
  }
  const listings = await Promise.all(roots.values());

  // A file reached through two roots (one nested in the other) is read and checked once.
  const byFile = new Map<string, { folder: string; dir: string; file: string }>();
  for (const listing of listings) {
    findings.push(...listing.findings);
    for (const skill of listing.skills) if (!byFile.has(skill.file)) byFile.set(skill.file, { folder: basename(dirname(skill.file)), dir: skill.dir, file: skill.file });
  }
  const validByFile = new Map<string, Omit<RootSkill, "dir">>();
  const checkFile = async ({ file, folder }: { file: string; folder: string }) => {
    const displayFile = display(file);
    const bytes = await readSkillBytes(file);
    if (!(bytes instanceof Uint8Array)) {
      findings.push({ ...bytes, file: displayFile });
      return;
    }
    const parsed = parseSkillFile(displayFile, bytes, config.yaml === "recover");
    const { content, findings: skillFindings } = validateSkill(displayFile, folder, parsed);
    findings.push(...skillFindings);
    if (content) validByFile.set(file, { ...content, file, displayFile, hash: createHash("sha256").update(bytes).digest("hex") });
  };
  let done = 0;
  await forEachLimited([...byFile.values()], READ_CONCURRENCY, async (skill) => {
    await checkFile(skill);
    options.onProgress?.({ done: ++done, total: byFile.size });
  });
  const validByRoot = new Map<string, RootSkill[]>();
  for (const listing of listings) {
    const skills: RootSkill[] = [];
    for (const found of listing.skills) {
      const valid = validByFile.get(found.file);
      if (valid) skills.push({ ...valid, dir: found.dir });
    }
    validByRoot.set(listing.root, skills);
  }

  const configFile = display(loaded.file);
  const agents: CompiledAgent[] = Object.entries(config.agents).map(([id, agent]) => {
    const sources = agent.skills.map((source) => ({ config: source, skills: validByRoot.get(resolveRoot(source.root, configDir)) ?? [] }));
    const selection = selectAgent(id, sources, configFile);
    findings.push(...selection.findings);
    const skills: AgentSkill[] = selection.selected.map(({ skill, mode, source }) => ({
      name: skill.name,
      description: skill.description,
      ...locate(skill.file, skill.displayFile, config.location),
      mode,
      source,
      file: skill.displayFile,
      fields: skill.fields,
      extra: skill.extra,
      hash: skill.hash,
      body: skill.body,
    }));
    const format = agent.format ?? config.format;
    const prompt = renderPrompt(
      format,
      skills.map((skill) => ({ ...skill, hidden: skill.fields["disable-model-invocation"] === true })),
    );
    return { id, format, skills, prompt };
  });

  return { config: loaded, agents, diagnostics: resolveFindings(findings, config.rules) };
}

async function forEachLimited<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
