import type { BuildCache, ListedFolder } from "./cache.js";
import { closeSync, constants, fstatSync, openSync, readFileSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, join, resolve, sep } from "node:path";
import picomatch from "picomatch";
import { agentBudget, BUDGET_VARIABLE, ConfigError, type LoadedConfig } from "./config.js";
import { resolveFindings, type Diagnostic, type Finding } from "./diagnostics.js";
import type { SkillMemo, ValidSkill } from "./skill-memo.js";
import { configSeverities, ruleOnAnywhere } from "./overrides.js";
import { comparePaths, discoverRoot, pathChanged, pathIn, readAhead, readSkillBytes, relativeTo, takeStats, type RootListing, type SkillRead, type StatsTaken } from "./discover.js";
import { NAME_PATTERN, type Mode, type SkillFields } from "./model.js";
import { formatBytes, locateInFrontmatter, MAX_SKILL_FILE_BYTES, parseSkillFile, skillBody, writtenFrontmatter, type WrittenFrontmatter } from "./parse.js";
import { checkCustomFields, declaredFields } from "./custom-fields.js";
import { locate, renderCatalogue, renderPrompt, type FormatContext, type FormatFunction, type FormatName, type Invocation, type PromptSkill } from "./render.js";
import { FileSystemError } from "./fs-error.js";
import { RealPaths } from "./real-paths.js";
import { hashInWorker, hashOutcome, identityKey, isSameFile, PATH_CHANGED, sha256Hex, type FileIdentity, type FileStats, type HashOutcome, type HashRequest, type SkillFile } from "./resources.js";
import { brokenLinks } from "./body-links.js";
import { bodyLengthFinding, descriptionDuplicates, mayReachTokenLimit, promptLengthFinding } from "./content-rules.js";
import { agentSkillsFindings } from "./agentskills.js";
import { acrossSourcesFindings, selectAgent, type RootSkill, type SelectedSkill, type SourceView } from "./select.js";
import { servedSkills } from "./serving.js";
import { leftOut, planSources, rootFindings, sourceName, unbuiltFindings, type SourcePlan } from "./sources.js";
import { DEFAULT_TOKEN_ENCODING, tokenCounter, type TokenEncoding } from "./tokens.js";
import { suggestName, validateSkill } from "./validate.js";
import { DEFAULT_TOOL, type ToolStyle } from "../runtime/helpers.js";

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
  /** Read from SKILL.md on first use when the build cache held the rest; not enumerable (JSON and copies leave it out). */
  body: string;
  /** The skill folder's files, SKILL.md included, in path order. */
  files: SkillFile[];
  /** Absolute path of the skill folder as discovered: what `stage` copies. */
  sourceDir: string;
  /** With `stage`: the copy's folder inside the bundle, `skills/<name>` (`agents/<id>/skills/<name>` per agent). */
  staged?: string;
  /**
   * Whether the agent's catalogue lists the skill: available, model-invocable and not dropped by the budget. An
   * inline skill, a `disable-model-invocation` one or one the budget dropped is the agent's all the same.
   */
  listed: boolean;
  /** Its frontmatter as written (`WrittenFrontmatter.values`), when the agent serves it (see `CompiledAgent.served`). */
  frontmatter?: Record<string, unknown>;
}

export interface CompiledAgent {
  id: string;
  description?: string;
  /** `function` for a format function of the config. */
  format: FormatName | "function";
  skills: AgentSkill[];
  /** Skills the agent's sources selected and its `allow` list left out, in selection order. */
  notAllowed: { name: string; file: string }[];
  /** The agent's `context` files (relative to the config folder, in path order) and their joined text. */
  context: { files: { file: string; hash: string }[]; text: string };
  prompt: string;
  /** With `catalogue: "tool"`: the skill tool's description, which holds the catalogue instead of the prompt. */
  toolDescription?: string;
  /** Characters of the catalogue of available skills: what a `budget` in characters limits. */
  catalogueCharacters: number;
  /** With `tokens` in the config or a budget in tokens: the prompt's and the catalogue's tokens in that encoding. */
  tokens?: { encoding: TokenEncoding; prompt: number; catalogue: number };
  /** The agent's budget (its own, or `SKILLS_PROMPT_CHAR_BUDGET`'s) and the skills it dropped from the catalogue, in prompt order. */
  budget?: { limit: number; unit: "characters" | "tokens"; dropped: { name: string; file: string }[] };
  /** The agent's `tool` setting, its name defaulting to the style's. */
  tool?: { style: ToolStyle; name: string };
  /** With `files: "embed"` or `publish`: the names of the skills it serves (and publishes), one each, in prompt order (see `servedSkills`). */
  served?: string[];
}

export interface Compilation {
  config: LoadedConfig;
  /** Absolute folder the bundle is for; staged locations point into it. */
  outDir: string;
  agents: CompiledAgent[];
  /** SKILL.md files read and checked, valid or not: what "N skills" counts. */
  skillsChecked: number;
  diagnostics: Diagnostic[];
  /** What was read besides the config (whose files are `config.inputs`): every folder discovery listed, and the context files. What watch mode watches. */
  inputs: { folders: string[]; files: string[] };
  /**
   * Each skill file by absolute path, with the identity discovery verified inside its root: a later read (a
   * `stage` copy, a code frame) uses the file only while it is still that one.
   */
  verified: ReadonlyMap<string, FileIdentity>;
}

/**
 * Where discovery may find the roots' listings without walking (a watching session's `DiscoveryMemo`, a one-off
 * build's `LastListings`): listings by root key, whose identities are the files' stats now. A root it has none
 * for is walked.
 */
export interface ListingSource {
  takeListings(): ReadonlyMap<string, RootListing>;
  /** Whether `remember` is given the folders the build listed, each with its entries and stats (a watching session checks them for changes it missed). */
  readonly remembersFolders: boolean;
  /** The listings the build went by (taken or walked), and the folders it listed (none unless `remembersFolders`). */
  remember(listings: ReadonlyMap<string, RootListing>, listed: ReadonlyMap<string, ListedFolder>): void;
}

export interface CompileOptions {
  /** Called as SKILL.md files are read and checked, so a front end can show progress on long runs. */
  onProgress?: (progress: { done: number; total: number }) => void;
  /** Outcomes of SKILL.md files parsed by an earlier build, reused where the bytes are the same. */
  cache?: BuildCache;
  /** Absolute outDir, when not the config's (`--out`). */
  outDir?: string;
  /** @internal Stats taken earlier in this build (`StatsTaken`), used by discovery in place of taking them again. */
  statsTaken?: StatsTaken;
  /** @internal An earlier build's listings, used in place of walking again where only file contents changed; told the listings this build went by. */
  discovery?: ListingSource;
  /** @internal A watching session's last compilation's skills, taken again where nothing they were made from changed. */
  skills?: SkillMemo;
  /** @internal For tests: runs between discovery and the first read, so a file can be swapped there deterministically. */
  afterDiscovery?: () => void;
}

/**
 * Skill files to hash (besides SKILL.md) from which a worker thread pays for itself. Measured on 2 cores: at
 * ~37,000 files it took ~5% off a cold build; at 4,000, its start and the contention for the filesystem
 * (each thread slows the other's syscalls) cost what it saved.
 * @internal Exported for the test that must reach it.
 */
export const WORKER_MIN_FILES = 5000;

/** config → discover → parse → validate → select → render, in memory. */
export async function compile(loaded: LoadedConfig, options: CompileOptions = {}): Promise<Compilation> {
  const { config, dir: configDir } = loaded;
  const display = (path: string) => relativeTo(configDir, path);
  const context: CompileContext = {
    loaded,
    options,
    outDir: options.outDir ?? resolve(configDir, config.outDir),
    display,
    configFile: display(loaded.file),
    configFinding: loaded.implicit ? undefined : display(loaded.file),
    findings: [],
  };
  const { findings } = context;
  options.skills?.startBuild(loaded);

  // Only when asked for; started first, so that the encoding loads (in its worker) while the skills are read.
  const countsTokens = config.tokens !== undefined || Object.values(config.agents).some((agent) => typeof agent.budget === "object" && "tokens" in agent.budget);
  const encoding = config.tokens?.encoding ?? DEFAULT_TOKEN_ENCODING;
  const tokens: AgentTokens = { encoding, counter: countsTokens ? tokenCounter(encoding, options.cache?.tokenCounts(encoding)) : undefined, counting: [] };

  const { listings, listed, plans, byFile, verified } = discoverSkills(context);
  options.afterDiscovery?.();
  // A cold build hashes the skills' other files in a worker thread while this one reads and parses the SKILL.md
  // files. Fewer than `WORKER_MIN_FILES` are not worth a thread's start; with a build cache, most files are known
  // by their signature and the few that changed are hashed here, when needed.
  const hashedInWorker =
    verified.size - byFile.size >= WORKER_MIN_FILES && !options.cache?.hasFileRecords() ? hashInWorker(hashRequests(verified, byFile)) : undefined;
  const { validByFile, skillFileHashes } = checkSkillFiles(context, byFile);
  const linksChecked = new Set<string>(); // a SKILL.md reached by two sources, or at two paths, has its links checked once
  for (const plan of plans) {
    for (const found of plan.skills) {
      const valid = validByFile.get(found.file);
      if (!valid || valid.links.length === 0 || linksChecked.has(found.realFile)) continue;
      linksChecked.add(found.realFile);
      append(findings, brokenLinks(valid.displayFile, valid.links, found.files));
    }
  }
  const selections = selectAgents(context, plans, validByFile);
  const layout = config.stage === true ? "shared" : config.stage ? config.stage.layout : undefined;
  const sharedDirs = layout === "shared" ? stagingFolders(selections.flatMap(({ selected }) => selected), "skills") : undefined;
  const contexts = await Promise.all(selections.map(({ id, agent }) => readContext(id, agent.context, configDir, context.configFile, findings)));
  const agents = await Promise.all(
    selections.map((selection, index) =>
      compileAgent(context, selection, contexts[index]!, layout === "per-agent" ? stagingFolders(selection.selected, `agents/${selection.id}/skills`) : sharedDirs, tokens),
    ),
  );

  append(findings, descriptionDuplicates(agents));
  for (const agent of agents) {
    const tooLong = promptLengthFinding(agent, context.configFile);
    if (tooLong) findings.push(tooLong);
  }
  if (ruleOnAnywhere(config, "body-too-long")) append(findings, await bodyLengthFindings([...validByFile.values()], encoding));
  const hashed = new Map<string, HashOutcome>();
  for (const [path, outcome] of (await hashedInWorker?.()) ?? []) if ("sha256" in outcome) hashed.set(identityKey(verified.get(path)!), outcome);
  hashSkillFiles(agents, display, findings, skillFileHashes, verified, options.cache, hashed);
  selections.forEach(({ id, agent, selected }, index) => {
    if (agent.files === "embed" || agent.publish) append(findings, serveSkills(id, agents[index]!, selected));
  });
  await Promise.all(tokens.counting);
  if (options.skills) {
    // Once each agent's skills are final (sized, listed, served): an unchanged one is the last build's object.
    const memo = options.skills;
    agents.forEach((agent, index) => (agent.skills = memo.agentSkillsOf(agent.id, agent.skills, selections[index]!.selected.map(({ skill }) => skill))));
    memo.endBuild();
  }
  const inputs = { folders: [...listings.values()].flatMap((listing) => listing.folders), files: contexts.flatMap((agentContext) => agentContext.files.map(({ file }) => join(configDir, file))) };
  options.discovery?.remember(listings, listed ?? new Map());
  // A SKILL.md reached through two roots (one a link to the other) is one skill.
  const skillsChecked = new Set(plans.flatMap((plan) => plan.skills.map((skill) => skill.realFile))).size;
  return { config: loaded, outDir: context.outDir, agents, skillsChecked, diagnostics: resolveFindings(findings, configSeverities(config)), inputs, verified };
}

/** What the stages of one compilation share. */
interface CompileContext {
  loaded: LoadedConfig;
  options: CompileOptions;
  outDir: string;
  /** A path as findings and records name it: relative to the config folder. */
  display: (path: string) => string;
  /** The config file, as findings name it. */
  configFile: string;
  /** What findings about the config name: nothing without one (`skills check PATH…`). */
  configFinding: string | undefined;
  /** Every finding so far, in the order they are made. */
  findings: Finding[];
}

/** A SKILL.md that discovery found: its folder's name, its root-relative folder, its path and the identity verified. */
interface SkillToCheck {
  folder: string;
  dir: string;
  file: string;
  realFile: string;
  stats: FileStats;
}

/** A SKILL.md's size and sha256, as read or as the cache recorded them. */
interface KnownFile {
  size: number;
  sha256: string;
}

/** Token counting, when the config asks for it: the counter, its encoding, and the counts on their way. */
interface AgentTokens {
  encoding: TokenEncoding;
  counter: ReturnType<typeof tokenCounter> | undefined;
  counting: Promise<void>[];
}

/**
 * Walks the roots (or takes a watching session's listings): the skills each source finds, each SKILL.md once (a
 * file reached through two roots, one nested in the other, is read and checked once), and every skill file with
 * the identity discovery verified inside its root. `listed`: each folder listed, with its entries and its stats
 * just before, for a watching session to go by next time.
 */
function discoverSkills(context: CompileContext) {
  const { loaded, options, outDir, display, findings } = context;
  const listings = new Map<string, RootListing>();
  const taken = options.statsTaken;
  const listed = options.discovery?.remembersFolders ? new Map<string, ListedFolder>() : undefined;
  const list = options.cache && ((dir: string) => options.cache!.listFolder(dir, display(dir), takeStats(taken?.folders, dir), listed));
  const remembered = options.discovery?.takeListings();
  const discover = (root: string, nested: boolean) => {
    const key = `${nested ? "nested" : "flat"}:${root}`;
    let listing = listings.get(key);
    if (listing) return listing;
    listing = remembered?.get(key);
    // Folders not listed again keep their records in the cache, for a later build that does list them.
    if (listing) options.cache?.keepFolders(listing.folders.map(display));
    listing ??= discoverRoot(root, display, { nested, ...(list ? { list } : {}), ...(taken ? { filesTaken: taken.files } : {}) });
    listings.set(key, listing);
    return listing;
  };
  const plans = planSources(loaded, discover);
  const sourceLabel = (plan: SourcePlan) => sourceName(loaded, plan.agent, plan.index);
  append(findings, rootFindings(plans, loaded, context.configFinding, sourceLabel));
  const byFile = new Map<string, SkillToCheck>();
  const verified = new Map<string, FileStats>();
  for (const listing of listings.values()) append(findings, listing.findings);
  for (const plan of plans) {
    // A root around the outDir would otherwise find the bundle's own staged copies (`stage: true`) as skills.
    plan.skills = plan.skills.filter((skill) => !skill.file.startsWith(outDir + sep));
    for (const skill of plan.skills) {
      if (!byFile.has(skill.file)) byFile.set(skill.file, { folder: basename(dirname(skill.file)), dir: skill.dir, file: skill.file, realFile: skill.realFile, stats: skill.identities.get("SKILL.md")! });
      for (const [path, identity] of skill.identities) {
        const absolute = pathIn(dirname(skill.file), path);
        if (!verified.has(absolute)) verified.set(absolute, identity);
      }
    }
  }
  append(findings, unbuiltFindings(plans, new Set(byFile.keys()), display, sourceLabel));
  return { listings, listed, plans, byFile, verified };
}

/** Each SKILL.md read, parsed and validated, or its outcome taken from the build cache: the valid ones, and each one's size and sha256. */
function checkSkillFiles(context: CompileContext, byFile: ReadonlyMap<string, SkillToCheck>) {
  const { frontmatter } = context.loaded.config;
  const customFields = frontmatter && declaredFields(frontmatter);
  const validByFile = new Map<string, ValidSkill>();
  const skillFileHashes = new Map<string, KnownFile>();
  const checked = new Set<string>();
  let done = 0;
  // With its signature unchanged, a file is not read: its hash and outcome come from the cache.
  const known = (skill: SkillToCheck) => context.options.cache?.knownFile(context.display(skill.file), skill.stats);
  for (const [skill, source] of readAhead(byFile.values(), known)) {
    // One file reached through two roots (one a link to the other) is checked at each path, as each agent may see it
    // at its own; what is wrong with it is reported once, at the first.
    const again = checked.has(skill.realFile);
    checked.add(skill.realFile);
    const valid = checkSkillFile(again ? { ...context, findings: [] } : context, skill, source, customFields, skillFileHashes);
    if (valid) validByFile.set(skill.file, valid);
    context.options.onProgress?.({ done: ++done, total: byFile.size });
  }
  return { validByFile, skillFileHashes };
}

/** One SKILL.md's checks (its findings go to the context's); its skill when it passed them. */
function checkSkillFile(
  { loaded, options, display, findings }: CompileContext,
  { file, folder, stats }: SkillToCheck,
  source: { known: KnownFile } | SkillRead | Finding,
  customFields: ReturnType<typeof declaredFields> | undefined,
  skillFileHashes: Map<string, KnownFile>,
): ValidSkill | undefined {
  const { config } = loaded;
  const displayFile = display(file);
  const cache = options.cache;
  // A file the cache knows is not read: its bytes are read (and checked against its hash) only if something needs them.
  let known: KnownFile;
  let bytes: Uint8Array | undefined;
  let text: string | undefined;
  if ("known" in source) known = source.known;
  else if (!("bytes" in source)) {
    findings.push({ ...source, file: displayFile });
    cache?.unrecorded();
    return undefined;
  } else {
    ({ bytes, text } = source);
    known = { size: Number(source.stats.size), sha256: sha256Hex(bytes) };
    // A file over the size limit is read only in part, so its hash cannot tell that it changed.
    if (known.size === bytes.byteLength) cache?.recordFile(displayFile, source.stats, known.size, known.sha256);
    else cache?.unrecorded();
  }
  const { size, sha256: hash } = known;
  skillFileHashes.set(file, known);
  const bytesNow = () => bytes ?? readUnchanged(file, displayFile, stats);
  const validate = () =>
    validateSkill(displayFile, folder, parseSkillFile(displayFile, bytesNow(), config.yaml === "recover", size, text), {
      descriptionFallback: config.descriptionFallback,
      customFields,
      locate: (path) => {
        const located = locateInFrontmatter(bytesNow(), path);
        return located.found ? (located.keyAt ?? located.valueAt) : undefined;
      },
    });
  const validated = cache && (bytes === undefined || size === bytes.byteLength) ? cache.skill(displayFile, folder, hash, validate) : validate();
  findings.push(...validated.findings);
  if (config.preset === "agentskills") findings.push(...agentSkillsFindings(displayFile, folder, new TextDecoder().decode(bytesNow())));
  // The custom fields are checked outside the cache: a zod schema (its refinements, its defaults) has no digest.
  let { content } = validated;
  if (content && config.frontmatter) {
    const checked = checkCustomFields(displayFile, config.frontmatter, content, (path) => locateInFrontmatter(bytesNow(), path));
    content = checked.content;
    findings.push(...checked.findings);
  }
  if (!content) return undefined;
  const skillContent = content;
  const make = (): ValidSkill => {
    // Field by field: a spread followed by more fields (`{ ...content, file }`) cost V8 ~5 µs a skill.
    const { name, description, fields, extra, bodyLine, links, body } = skillContent;
    const again = rereads(file, displayFile, stats, config.yaml === "recover", size);
    return new ValidSkillRecord({ name, description, fields, extra, bodyLine, links, file, displayFile, hash, written: again.written }, body ?? (bytes ? skillBody(bytes, text) : again.body));
  };
  // Unread, and the cache's own record (no `frontmatter` schema made another): a watching session's skill made from it last time.
  return options.skills && !bytes && content === validated.content ? options.skills.validSkill(content, file, stats, make) : make();
}

/** Each agent's selection from what its sources found; `agent-empty` for one left with no skill. */
function selectAgents(context: CompileContext, plans: readonly SourcePlan[], validByFile: ReadonlyMap<string, ValidSkill>) {
  const { loaded, options, configFinding, findings } = context;
  const selections = Object.entries(loaded.config.agents).map(([id, agent]) => {
    const sources = plans.filter((plan) => plan.agent === id).map((plan): SourceView => {
      const skills: RootSkill[] = [];
      const failed: string[] = [];
      for (const found of plan.skills) {
        const valid = validByFile.get(found.file);
        if (!valid) {
          failed.push(basename(dirname(found.file)));
          continue;
        }
        const make = () => {
          const { name, description, fields, extra, bodyLine, links, file, displayFile, hash, written } = valid;
          return new RootSkillRecord({ name, description, fields, extra, bodyLine, links, file, displayFile, hash, written, dir: found.dir, realFile: found.realFile, files: found.files }, bodyFrom(valid));
        };
        skills.push(options.skills ? options.skills.foundSkill(valid, found, make) : make());
      }
      return { config: plan.config, skills, failed };
    });
    const select = () => selectAgent(id, sources, configFinding, agent);
    const selection = options.skills ? options.skills.selection(id, sources, select) : select();
    append(findings, selection.findings);
    // A root that is missing says so already (or may be absent, `optional`).
    const rooted = plans.some((plan) => plan.agent === id && !plan.listing.unusable);
    const empty = selection.selected.length === 0 && rooted ? emptyAgent(loaded, id, sources, plans.filter((plan) => plan.agent === id), configFinding) : undefined;
    if (empty) findings.push(empty);
    return { id, agent, selected: selection.selected, notAllowed: selection.notAllowed, acrossSources: selection.acrossSources };
  });
  append(findings, acrossSourcesFindings(selections, configFinding));
  return selections;
}

type AgentSelection = ReturnType<typeof selectAgents>[number];

/**
 * One agent: its skills as it sees them (placed, staged as `stagedDirs` says), the budget applied to its catalogue,
 * and its prompt rendered; its tokens counted when `tokens` has a counter (awaited with `tokens.counting`).
 */
async function compileAgent(
  context: CompileContext,
  { id, agent, selected, notAllowed }: AgentSelection,
  agentContext: CompiledAgent["context"],
  stagedDirs: ReadonlyMap<string, string> | undefined,
  tokens: AgentTokens,
): Promise<CompiledAgent> {
  const { loaded, outDir, display } = context;
  const { config } = loaded;
  const all: AgentSkill[] = selected.map(({ skill, mode, source }) => {
    const staged = stagedDirs?.get(skill.file);
    const stagedFile = staged && join(outDir, staged, "SKILL.md");
    // Named, not spread: a spread inside an object literal cost V8 about a microsecond an object.
    const { location, baseDir } = stagedFile ? locate(stagedFile, display(stagedFile), config.location, `${staged}/SKILL.md`) : locate(skill.file, skill.displayFile, config.location);
    return new AgentSkillRecord(
      {
        name: skill.name,
        description: skill.description,
        location,
        baseDir,
        mode,
        source,
        file: skill.displayFile,
        fields: skill.fields,
        extra: skill.extra,
        hash: skill.hash,
        files: skill.files.map((path) => ({ path, size: 0, sha256: "" })), // sized and hashed below, once the bundle's skills are known
        sourceDir: dirname(skill.file),
        staged,
        listed: false, // settled below, once the budget is applied
      },
      bodyFrom(skill),
    );
  });
  const format = agent.format ?? config.format;
  const promptSkills = (skills: readonly AgentSkill[]) => skills.map((skill) => new PromptView(skill));
  const tool = agent.tool && { style: agent.tool.style, name: agent.tool.name ?? agent.tool.style };
  const invocation: Invocation = { invoke: agent.invoke ?? "read", catalogue: agent.catalogue ?? "prompt", tool: tool ?? DEFAULT_TOOL };
  if (typeof format !== "string" && agent.catalogue === "tool") {
    throw new ConfigError(loaded.file, `agents.${id}.catalogue: "tool" needs a named format ("pi" or "markdown") to write the catalogue: a format function writes the whole prompt`);
  }
  const render: AgentRender =
    typeof format === "string"
      ? {
          catalogue: (skills) => renderCatalogue(format, promptSkills(skills), invocation),
          prompt: (skills, text) => renderPrompt(format, promptSkills(skills), text, invocation),
        }
      : functionFormat(format, { agent: id, ...(agent.description === undefined ? {} : { description: agent.description }) }, agent.format ? `agents.${id}.format` : "format", loaded.file);
  // A budget drops skills from the catalogue only: they stay the agent's, found by name (a user may still invoke them).
  const { listed, budget } = await budgetOf(context, id, all, render, tokens);
  for (const skill of listed) skill.listed = skill.mode === "available" && !isHidden(skill);
  const { prompt, catalogueCharacters, toolDescription } = render.prompt(listed, agentContext.text);
  const compiled: CompiledAgent = {
    id,
    ...(agent.description === undefined ? {} : { description: agent.description }),
    format: typeof format === "string" ? format : "function",
    skills: all,
    notAllowed: notAllowed.map(({ skill }) => ({ name: skill.name, file: skill.displayFile })),
    context: agentContext,
    prompt,
    ...(toolDescription === undefined ? {} : { toolDescription }),
    catalogueCharacters,
    ...(budget ? { budget } : {}),
    ...(tool ? { tool } : {}),
  };
  if (tokens.counter) {
    const catalogue = render.catalogue(listed);
    // Most prompts are their catalogue alone: counted once. Awaited with the others, after the files are hashed.
    const counted = tokens.counter.count(catalogue === prompt ? [prompt] : [prompt, catalogue]).then(([promptTokens, catalogueTokens = promptTokens]) => {
      compiled.tokens = { encoding: tokens.encoding, prompt: promptTokens!, catalogue: catalogueTokens! };
    });
    counted.catch(() => {}); // a failure is thrown where it is awaited, not reported as unhandled while other agents render
    tokens.counting.push(counted);
  }
  return compiled;
}

/** How an agent's skills become its catalogue and its prompt: by a named format, or by the config's format function. */
interface AgentRender {
  catalogue(skills: readonly AgentSkill[]): string;
  prompt(skills: readonly AgentSkill[], context: string): { prompt: string; catalogueCharacters: number; toolDescription?: string };
}

/**
 * The skills an agent's catalogue lists, within its budget (its own, or the environment's), and the budget with
 * what it dropped; `budget-exceeded` when it dropped any.
 */
async function budgetOf(context: CompileContext, id: string, all: AgentSkill[], render: AgentRender, tokens: AgentTokens): Promise<{ listed: AgentSkill[]; budget?: CompiledAgent["budget"] }> {
  const agent = context.loaded.config.agents[id]!;
  const applied = agentBudget(agent.budget, context.loaded.environmentBudget);
  if (applied === undefined) return { listed: all };
  const { limit, unit } = applied;
  const size = async (skills: readonly AgentSkill[]) => (unit === "tokens" ? (await tokens.counter!.count([render.catalogue(skills)]))[0]! : render.catalogue(skills).length);
  const { kept, dropped, before, after } = await applyBudget(all, limit, size);
  if (dropped.length > 0) {
    const units = unit === "tokens" ? `${tokens.encoding} tokens` : "characters";
    const setting = agent.budget === undefined ? ` (${BUDGET_VARIABLE})` : typeof agent.budget === "object" && "contextWindow" in agent.budget ? ` (2% of a ${agent.budget.contextWindow}-token context window)` : "";
    context.findings.push({
      code: "budget-exceeded",
      file: context.configFile,
      message:
        `agent "${id}": the catalogue takes ${before} ${units}, over its budget of ${limit}${setting}; ` +
        `dropped the last ${dropped.length === 1 ? "skill" : `${dropped.length} skills`} in prompt order from it, leaving ${after}: ` +
        dropped.map((skill) => `${skill.name} (${skill.file})`).join(", "),
      hint: "Dropped skills are still invoked by name. Raise the agent's `budget`, shorten descriptions, or narrow its sources' `available` patterns or its `allow` list.",
    });
  }
  return { listed: kept, budget: { limit, unit, dropped: dropped.map((skill) => ({ name: skill.name, file: skill.file })) } };
}

/**
 * `agent-empty`, with what the agent's sources found, so the reason is plain; none when skills that failed their
 * checks explain it (their own errors say why).
 */
function emptyAgent(loaded: LoadedConfig, id: string, sources: readonly SourceView[], plans: readonly SourcePlan[], file: string | undefined): Finding | undefined {
  const found = sources.reduce((count, source) => count + source.skills.length, 0);
  if (found === 0 && sources.some((source) => (source.failed?.length ?? 0) > 0)) return undefined;
  const unbuilt = plans.reduce((count, plan) => count + leftOut(plan).length, 0);
  const why =
    found > 0
      ? `the patterns select none of the ${found} valid ${found === 1 ? "skill" : "skills"} found`
      : unbuilt > 0
        ? `the only SKILL.md files found (${unbuilt}) are in dot folders or inside other skills' folders, which are not built (see the warnings above)`
        : "no SKILL.md was found";
  return {
    code: "agent-empty",
    file,
    message: `${loaded.implicit ? "the paths hold" : `agent "${id}" has`} no skill: ${why}`,
    hint:
      found > 0
        ? "Check the `available`, `inline` and `allow` patterns against the skills' names."
        : unbuilt > 0
          ? "Each warning names the setting that builds its skill."
          : `Check ${loaded.implicit ? "the paths" : "each `root`"}; a skill is a folder holding a file named SKILL.md.`,
  };
}

/**
 * Settles which skills an agent that serves or publishes them (`files: "embed"`, `publish`) serves, once their files are sized:
 * `agent.served`, and each served skill's `frontmatter` as written. `selected` gives `agent.skills`, in its order.
 */
function serveSkills(id: string, agent: CompiledAgent, selected: readonly SelectedSkill[]): Finding[] {
  const candidates = agent.skills.map((skill, index) => ({ name: skill.name, file: skill.file, files: skill.files, written: selected[index]!.skill.written() }));
  const { names, findings } = servedSkills(id, candidates);
  const unplaced = new Set(names);
  agent.skills.forEach((skill, index) => {
    if (unplaced.delete(skill.name)) skill.frontmatter = candidates[index]!.written.values;
  });
  agent.served = names;
  return findings;
}

/** `body-too-long` for each skill, its body read and, when long enough to reach the limit, its tokens counted. */
async function bodyLengthFindings(skills: readonly { displayFile: string; body: string; bodyLine: number }[], encoding: TokenEncoding): Promise<Finding[]> {
  const long = skills.filter((skill) => mayReachTokenLimit(skill.body));
  const tokens = long.length > 0 ? await tokenCounter(encoding).count(long.map((skill) => skill.body)) : [];
  const counted = new Map(long.map((skill, index) => [skill, tokens[index]]));
  return skills.flatMap((skill) => bodyLengthFinding(skill.displayFile, skill.body, skill.bodyLine, counted.get(skill)) ?? []);
}

/**
 * A body taken from `source` when first asked for. Made here rather than where the source is at hand: a closure
 * keeps its whole scope alive, and a skill a watching session keeps would keep the build that made it (its prompt,
 * all its skills) through every later one.
 */
function bodyFrom(source: { readonly body: string }): () => string {
  return () => source.body;
}

/**
 * A SKILL.md's body, and its frontmatter as written (for the skills an agent serves: few, if any), read and parsed
 * again when first asked for; made here for the reason `bodyFrom` is.
 */
function rereads(file: string, displayFile: string, stats: FileStats, recover: boolean, size: number): { body: () => string; written: () => WrittenFrontmatter } {
  return {
    body: () => skillBody(readUnchanged(file, displayFile, stats)),
    written: () => writtenFrontmatter(parseSkillFile(displayFile, readUnchanged(file, displayFile, stats), recover, size))!,
  };
}

/**
 * A skill record whose `body` is read on first use and kept: an unchanged SKILL.md is read only when a rewritten
 * bundle, an inlined skill or a format function needs its body. The getter is on the prototype and the body in a
 * private field, so copies, deep comparisons, JSON (the bundle's fingerprint) and the cache leave both out; and
 * they cost a record nothing, where defining both on each object took ~2 µs (three records a skill: ~50 ms of a
 * cold build of 10,000). Fields are set in the order of the object literals the records replaced: JSON of a record
 * (the bundle's fingerprint, a snapshot) depends on it.
 */
abstract class LazyBody {
  #body: string | (() => string);

  constructor(body: string | (() => string)) {
    this.#body = body;
  }

  get body(): string {
    const body = this.#body;
    return typeof body === "string" ? body : (this.#body = body());
  }

  static isRead(record: object): boolean {
    return #body in record && typeof (record as LazyBody).#body === "string";
  }
}

/**
 * Whether a skill record of a compilation holds its body (read, or given when made) rather than a reader of it.
 * @internal For the tests that check that a build left unchanged skills' bodies unread.
 */
export function bodyWasRead(skill: object): boolean {
  return LazyBody.isRead(skill);
}

class ValidSkillRecord extends LazyBody implements ValidSkill {
  declare name: string;
  declare description: string;
  declare fields: ValidSkill["fields"];
  declare extra: Record<string, unknown>;
  declare bodyLine: number;
  declare links: ValidSkill["links"];
  declare file: string;
  declare displayFile: string;
  declare hash: string;
  declare written: ValidSkill["written"];

  constructor(skill: Omit<ValidSkill, "body">, body: string | (() => string)) {
    super(body);
    this.name = skill.name;
    this.description = skill.description;
    this.fields = skill.fields;
    this.extra = skill.extra;
    this.bodyLine = skill.bodyLine;
    this.links = skill.links;
    this.file = skill.file;
    this.displayFile = skill.displayFile;
    this.hash = skill.hash;
    this.written = skill.written;
  }
}

class RootSkillRecord extends ValidSkillRecord implements RootSkill {
  declare dir: string;
  declare realFile: string;
  declare files: readonly string[];

  constructor(skill: Omit<RootSkill, "body">, body: string | (() => string)) {
    super(skill, body);
    this.dir = skill.dir;
    this.realFile = skill.realFile;
    this.files = skill.files;
  }
}

class AgentSkillRecord extends LazyBody implements AgentSkill {
  declare name: string;
  declare description: string;
  declare location: string;
  declare baseDir: string;
  declare mode: AgentSkill["mode"];
  declare source: number;
  declare file: string;
  declare fields: AgentSkill["fields"];
  declare extra: Record<string, unknown>;
  declare hash: string;
  declare files: SkillFile[];
  declare sourceDir: string;
  declare staged?: string;
  declare listed: boolean;
  declare frontmatter?: Record<string, unknown>;

  constructor(skill: Omit<AgentSkill, "body">, body: string | (() => string)) {
    super(body);
    this.name = skill.name;
    this.description = skill.description;
    this.location = skill.location;
    this.baseDir = skill.baseDir;
    this.mode = skill.mode;
    this.source = skill.source;
    this.file = skill.file;
    this.fields = skill.fields;
    this.extra = skill.extra;
    this.hash = skill.hash;
    this.files = skill.files;
    this.sourceDir = skill.sourceDir;
    if (skill.staged) this.staged = skill.staged;
    this.listed = skill.listed;
    if (skill.frontmatter !== undefined) this.frontmatter = skill.frontmatter;
  }
}

/**
 * Agents as a snapshot kept them (JSON: no bodies), each skill given its body again, read on first use from its
 * SKILL.md, which must still be the file `verified` holds (as `readUnchanged` checks); undefined when a skill's
 * SKILL.md is not among them.
 */
export function restoreBodies(agents: CompiledAgent[], verified: ReadonlyMap<string, FileStats>): CompiledAgent[] | undefined {
  const bodies = new Map<string, () => string>();
  for (const agent of agents) {
    const skills: AgentSkill[] = [];
    for (const skill of agent.skills) {
      const file = pathIn(skill.sourceDir, "SKILL.md");
      let body = bodies.get(file);
      if (!body) {
        const stats = verified.get(file);
        if (!stats) return undefined;
        let read: string | undefined;
        body = () => (read ??= skillBody(readUnchanged(file, skill.file, stats)));
        bodies.set(file, body);
      }
      skills.push(new AgentSkillRecord(skill, body));
    }
    agent.skills = skills;
  }
  return agents;
}

/**
 * SKILL.md's bytes when the cache had its hash: the file must still be the one discovery found, with the same
 * size, mtime and ctime (the signature the cache matched), or the compilation built from the cache is not this
 * file's. A view of a shared buffer.
 */
function readUnchanged(file: string, displayFile: string, stats: FileStats): Uint8Array {
  const read = readSkillBytes(file, stats);
  if (!("bytes" in read) || read.stats.size !== stats.size || read.stats.mtimeNs !== stats.mtimeNs || read.stats.ctimeNs !== stats.ctimeNs) {
    throw new FileSystemError(`read ${displayFile}`, new Error("it changed during the build; build again"));
  }
  return read.bytes;
}

/**
 * What the hashing worker is sent: the skills' files other than SKILL.md, each file (device and inode) once, however
 * many links lead to it: 2,000 links in a root to one large file would otherwise cost 2,000 reads of it.
 */
function hashRequests(verified: ReadonlyMap<string, FileStats>, skillFiles: ReadonlyMap<string, unknown>): HashRequest[] {
  const requested = new Set<string>();
  const requests: HashRequest[] = [];
  for (const [path, expected] of verified) {
    const key = identityKey(expected);
    if (skillFiles.has(path) || requested.has(key)) continue;
    requested.add(key);
    requests.push({ path, expected });
  }
  return requests;
}

/**
 * A skill file's size and sha256: from the cache when its signature is unchanged, else as this build hashed the
 * same file (device and inode) already, through another path or in the hashing worker (`hashed`, by identity,
 * which gets what is read now), else read now; what was read is recorded under this path too.
 */
function hashResource(path: string, displayPath: string, found: FileStats | undefined, cache: BuildCache | undefined, hashed: Map<string, HashOutcome>): { size: number; sha256: string } | { failure: string } {
  const known = found && cache?.knownFile(displayPath, found);
  if (known) return known;
  const key = found && identityKey(found);
  let outcome = key === undefined ? undefined : hashed.get(key);
  if (!outcome) {
    outcome = hashOutcome({ path, expected: found });
    // A failure is this path's (a link swapped for another, say), not the file's: only what was read is shared.
    if (key !== undefined && "sha256" in outcome) hashed.set(key, outcome);
  }
  if ("sha256" in outcome) cache?.recordFile(displayPath, outcome.stats, outcome.size, outcome.sha256);
  return outcome;
}

/**
 * An agent's skill as a named format renders it. A copy, so that rendering cannot change what the bundle records;
 * its body is the skill's, read only if the format shows it (an inline skill's). A class, as the records are (see
 * `LazyBody`): a getter on the prototype costs nothing a skill.
 */
class PromptView implements PromptSkill {
  readonly name: string;
  readonly description: string;
  readonly location: string;
  readonly baseDir: string;
  readonly mode: AgentSkill["mode"];
  readonly hidden: boolean;
  readonly #skill: AgentSkill;

  constructor(skill: AgentSkill) {
    this.name = skill.name;
    this.description = skill.description;
    this.location = skill.location;
    this.baseDir = skill.baseDir;
    this.mode = skill.mode;
    this.hidden = isHidden(skill);
    this.#skill = skill;
  }

  get body(): string {
    return this.#skill.body;
  }
}

function isHidden(skill: AgentSkill): boolean {
  return skill.fields["disable-model-invocation"] === true;
}

/**
 * Drops catalogue entries (available, model-visible skills) from the end of the prompt order until the catalogue
 * fits: earlier sources and names win. A catalogue grows with every entry, so the cut is found by bisection.
 */
async function applyBudget(skills: readonly AgentSkill[], limit: number, catalogueOf: (skills: readonly AgentSkill[]) => Promise<number>) {
  const entries = skills.filter((skill) => skill.mode === "available" && !isHidden(skill));
  const keeping = (count: number) => {
    const dropped = new Set(entries.slice(count));
    return skills.filter((skill) => !dropped.has(skill));
  };
  const before = await catalogueOf(skills);
  if (before <= limit) return { kept: [...skills], dropped: [], before, after: before };
  let low = 0; // the most entries known to fit (none, at worst)
  let high = entries.length - 1; // the most that might
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if ((await catalogueOf(keeping(middle))) <= limit) low = middle;
    else high = middle - 1;
  }
  const kept = keeping(low);
  return { kept, dropped: entries.slice(low), before, after: await catalogueOf(kept) };
}

function formatSkill(skill: AgentSkill): FormatContext["skills"][number] {
  const { name, description, location, baseDir, body, mode, source, file, fields, extra } = skill;
  return { name, description, location, baseDir, body, mode, hidden: isHidden(skill), source, file, fields, extra };
}

/** A format function writes whole prompts: its catalogue is what it writes for the available skills alone. */
function functionFormat(format: FormatFunction, agent: Pick<FormatContext, "agent" | "description">, setting: string, configFile: string) {
  const call = (skills: readonly AgentSkill[], context: string) => callFormat(format, { ...agent, context, skills: skills.map(formatSkill) }, setting, configFile);
  const catalogue = (skills: readonly AgentSkill[]) => call(skills.filter((skill) => skill.mode === "available"), "");
  return { catalogue, prompt: (skills: readonly AgentSkill[], context: string) => ({ prompt: call(skills, context), catalogueCharacters: catalogue(skills).length }) };
}

/** Runs a config's format function on a copy of the agent, so it cannot change what the bundle records. */
function callFormat(format: FormatFunction, context: FormatContext, setting: string, configFile: string): string {
  let prompt: unknown;
  try {
    prompt = format(structuredClone(context));
  } catch (error) {
    throw new ConfigError(configFile, `${setting}: the format function threw for agent "${context.agent}": ${error instanceof Error ? error.message : String(error)}`);
  }
  if (typeof prompt !== "string") {
    const got = prompt instanceof Promise ? "a Promise (format functions are synchronous)" : prompt === null ? "null" : typeof prompt;
    throw new ConfigError(configFile, `${setting}: the format function returned ${got} for agent "${context.agent}", not the prompt string`);
  }
  return prompt;
}

/**
 * `stage`: each skill gets a folder `<parent>/<name>` (`skills`, or the agent's `agents/<id>/skills`). Names that
 * are not valid skill names are made safe; the first skill (agents in config order, then prompt order) of a name
 * gets it plain, later ones of the same name `<name>-2`, `<name>-3`…, skipping names another skill holds.
 */
function stagingFolders(selected: readonly SelectedSkill[], parent: string): Map<string, string> {
  const folders = new Map<string, string>();
  const taken = new Set<string>();
  // Skills whose base another holds, by file; and the suffix to try next for each base, so that thousands of one
  // name are each given theirs in constant time.
  const later = new Map<string, string>();
  const nextSuffix = new Map<string, number>();
  for (const { skill } of selected) {
    if (folders.has(skill.file) || later.has(skill.file)) continue;
    const base = NAME_PATTERN.test(skill.name) ? skill.name : suggestName(skill.name);
    if (taken.has(base)) {
      later.set(skill.file, base);
      continue;
    }
    taken.add(base);
    folders.set(skill.file, base);
  }
  for (const [file, base] of later) {
    let suffix = nextSuffix.get(base) ?? 2;
    while (taken.has(`${base}-${suffix}`)) suffix++;
    nextSuffix.set(base, suffix + 1);
    taken.add(`${base}-${suffix}`);
    folders.set(file, `${base}-${suffix}`);
  }
  for (const [file, name] of folders) folders.set(file, `${parent}/${name}`);
  return folders;
}

/** An agent's `context`: the Markdown files its globs match (relative to the config folder), in path order. */
async function readContext(agentId: string, patterns: readonly string[] | undefined, configDir: string, configFile: string, findings: Finding[]): Promise<CompiledAgent["context"]> {
  if (!patterns || patterns.length === 0) return { files: [], text: "" };
  // Loaded here, not with the module: its walker loads a second picomatch from node_modules as it starts, and
  // most configs have no context globs (a few milliseconds of every CLI start).
  const { glob } = await import("tinyglobby");
  const paths = (await glob([...patterns], { cwd: configDir, absolute: true, onlyFiles: true, expandDirectories: false }))
    .map((path) => ({ path, file: relativeTo(configDir, path) }))
    .sort((a, b) => comparePaths(a.file, b.file));
  for (const pattern of patterns) {
    if (pattern.startsWith("!")) continue;
    const matches = picomatch(pattern, { dot: false });
    if (paths.some(({ path, file }) => matches(file) || matches(path))) continue;
    findings.push({
      code: "pattern-unmatched",
      file: configFile,
      message: `agents.${agentId}.context: "${pattern}" matches no file`,
      hint: "Context globs are relative to the config file's folder, e.g. \"agent-context/*.md\".",
    });
  }
  const files: CompiledAgent["context"]["files"] = [];
  const texts: string[] = [];
  const configReal = realpathSync.native(configDir);
  const realPaths = new RealPaths();
  for (const { path, file } of paths) {
    const bytes = readContextFile(path, configDir, configReal, realPaths);
    if (bytes === "escapes") {
      findings.push({ code: "symlink-escape", file, message: `the context file ${file} is a link that resolves outside the config's folder; it is not followed` });
      continue;
    }
    if (bytes === "changed") {
      findings.push(pathChanged(file, `the context file ${file}`, "it is left out"));
      continue;
    }
    if (typeof bytes === "object" && "tooLarge" in bytes) {
      findings.push({ code: "file-too-large", file, line: 1, column: 1, message: `the context file ${file} is ${formatBytes(bytes.tooLarge)}, over the 1 MiB limit; it is left out`, hint: "Keep context files to what every conversation needs; link longer material from them." });
      continue;
    }
    if (!(bytes instanceof Uint8Array)) {
      findings.push({ code: "path-unreadable", file, message: `the context file ${file} cannot be read (${bytes.code ?? bytes.message}); it is left out` });
      continue;
    }
    let text: string;
    try {
      text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      findings.push({ code: "encoding-invalid", file, line: 1, column: 1, message: `the context file ${file} is not valid UTF-8; it is left out`, hint: "Save the file as UTF-8." });
      continue;
    }
    files.push({ file, hash: sha256Hex(bytes) });
    const trimmed = text.replace(/\r\n?/g, "\n").trim();
    if (trimmed !== "") texts.push(trimmed);
  }
  return { files, text: texts.join("\n\n---\n\n") };
}

/**
 * A context file's bytes. A pull request may put a link where a context glob matches: a file under the config's
 * folder whose real path leaves it is not followed (`escapes`; a glob may name files elsewhere, `../shared/*.md`,
 * as the config is trusted), and the file read must be the one that check found. A file over a SKILL.md's limit is
 * not read (`tooLarge`, its size): it would go whole into every prompt.
 */
function readContextFile(path: string, configDir: string, configReal: string, realPaths: RealPaths): Uint8Array | "escapes" | "changed" | { tooLarge: number } | NodeJS.ErrnoException {
  let fd: number | undefined;
  try {
    const real = realPaths.of(path);
    if (path.startsWith(configDir + sep) && !real.startsWith(configReal + sep)) return "escapes";
    const found = statSync(real, { bigint: true });
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
    const stats = fstatSync(fd, { bigint: true });
    if (!stats.isFile()) return Object.assign(new Error("not a regular file"), { code: "EISDIR" });
    if (!isSameFile(stats, found)) return "changed";
    if (stats.size > MAX_SKILL_FILE_BYTES) return { tooLarge: Number(stats.size) };
    return readFileSync(fd);
  } catch (error) {
    return error as NodeJS.ErrnoException;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Sizes and hashes the files of every skill in the bundle, each folder once; `known` holds what was read already,
 * the cache what an earlier build read of a file whose signature (as discovery found it) is unchanged, and
 * `hashed` what the hashing worker read.
 */
function hashSkillFiles(
  agents: readonly CompiledAgent[],
  display: (path: string) => string,
  findings: Finding[],
  known: ReadonlyMap<string, { size: number; sha256: string }>,
  verified: ReadonlyMap<string, FileStats>,
  cache: BuildCache | undefined,
  hashed: Map<string, HashOutcome>,
): void {
  const bySkill = new Map<string, AgentSkill[]>();
  for (const agent of agents) {
    for (const skill of agent.skills) {
      const copies = bySkill.get(skill.file);
      if (copies) copies.push(skill);
      else bySkill.set(skill.file, [skill]);
    }
  }
  const unreadable = new Set<string>();
  for (const copies of bySkill.values()) {
    const { files, sourceDir } = copies[0]!;
    files.forEach((file, index) => {
      const path = pathIn(sourceDir, file.path);
      const outcome = known.get(path) ?? hashResource(path, display(path), verified.get(path), cache, hashed);
      if ("failure" in outcome) {
        unreadable.add(path);
        cache?.unrecorded();
        if (outcome.failure === PATH_CHANGED) findings.push(pathChanged(display(path), display(path), "it is left out of the skill"));
        else findings.push({ code: "path-unreadable", file: display(path), message: `the file ${display(path)} cannot be read (${outcome.failure}); it is left out of the skill` });
        return;
      }
      files[index] = { path: file.path, sha256: outcome.sha256, size: outcome.size }; // keys in the manifest's (sorted) order: written without a copy
    });
  }
  for (const copies of bySkill.values()) {
    const files = unreadable.size === 0 ? copies[0]!.files : copies[0]!.files.filter((file) => !unreadable.has(pathIn(copies[0]!.sourceDir, file.path)));
    for (const skill of copies) skill.files = files;
  }
}

/** `target.push(...items)` without the spread: past ~150,000 items (a finding per skill of a huge catalogue) a spread exceeds the call stack. */
function append<T>(target: T[], items: readonly T[]): void {
  for (const item of items) target.push(item);
}
