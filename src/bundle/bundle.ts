import { createHash } from "node:crypto";
import { join, resolve } from "node:path";
import type { AgentSkill, Compilation, CompiledAgent } from "../compile/compile.js";
import { relativeTo } from "../compile/discover.js";
import { resolveRoot } from "../compile/config.js";
import { customFieldsJsonSchema, isObjectSchema } from "../compile/custom-fields.js";
import { compareStrings } from "../compile/diagnostics.js";
import { copyOf } from "../compile/parse.js";
import { GENERATOR, manifestSchemaPath, SCHEMA_VERSION, type Manifest } from "./manifest.js";
import { entryKey, inputLine, moduleFiles, placedElsewhere } from "./module.js";
import { Each, escapePastAscii, Entry, indentedJson, jsonParts, jsonString, lazyParts, MANIFEST_STYLE, plainJson, quoted, sliceEnd, Slot, sortedData, stableJson, Written, type BodyPart, type BundleFile, type EntryPart, type Part } from "./parts.js";
import type { FileIdentity, SkillFile } from "../compile/resources.js";
import type { FilePlaces } from "../compile/cache.js";
import { PrefixHash, type HashCheckpoints } from "./prefix-hash.js";
import { TOOL_VERSION } from "../compile/version.js";
import { summarizeStructure } from "../runtime/helpers.js";

export interface Bundle {
  /** Every file of the bundle; a file comes after any file it takes a hash of or is the same as. */
  files: BundleFile[];
  /** The bundled skills' bodies, by skill in manifest order. */
  bodies: BundleBody[];
  /** Made for a build cache: where the files hold each skill is recorded, for the next bundle to copy from (see `renderBundle`). */
  keyed: boolean;
}

export interface BundleBody {
  /** sha256 of the SKILL.md the body is from: the same bytes, the same body. */
  hash: string;
  /** The body, read from its SKILL.md on first use: unneeded where an earlier bundle file's copy is used. */
  text(): string;
}

/**
 * The digest of everything a bundle is made from, taken from the hashes of what it is made of rather than from
 * all the compilation holds: the tool, the outDir, `inputsHash` (the resolved config, the environment's budget,
 * every bundled skill's path and file hashes, the context files' hashes), the diagnostics, and each agent less
 * its skills (a format function by what it rendered; a budget by the skills it dropped). The rest (each skill's
 * fields, description and body, which skills each agent selects, where) follows from those; only the fields a
 * `frontmatter` schema outputs are hashed as they came out, as its transforms are code. Equal digests, equal bundles.
 */
export function bundleFingerprint(compilation: Compilation): string {
  const { file, dir, inputs, config } = compilation.config;
  const { skills, inputsHash } = bundleInputs(compilation);
  const hash = createHash("sha256").update(
    JSON.stringify({ tool: TOOL_VERSION, outDir: compilation.outDir, config: { file, dir, inputs }, inputs: inputsHash, diagnostics: compilation.diagnostics }),
  );
  // The prompt (megabytes at 10,000 skills) is hashed as it is, after its length: not JSON-escaped first.
  for (const { skills: _skills, prompt, ...agent } of compilation.agents) hash.update(`\n${JSON.stringify(agent)}\n${prompt.length}\n`).update(prompt);
  if (config.frontmatter) for (const skill of skills) hash.update(`\n${JSON.stringify(skill.fields)}`);
  return hash.digest("hex");
}

/** The manifest's `inputsHash` of the bundle of `compilation` (see `inputsHash`). */
export function bundleInputsHash(compilation: Compilation): string {
  return bundleInputs(compilation).inputsHash;
}

const madeFrom = new WeakMap<Compilation, { skills: AgentSkill[]; inputsHash: string }>();

/** The bundled skills and `inputsHash`: what both the fingerprint and the bundle are made from, made once for a compilation. */
function bundleInputs(compilation: Compilation): { skills: AgentSkill[]; inputsHash: string } {
  let inputs = madeFrom.get(compilation);
  if (!inputs) {
    const skills = bundledSkills(compilation);
    inputs = { skills, inputsHash: inputsHash(compilation, skills) };
    madeFrom.set(compilation, inputs);
  }
  return inputs;
}

/** Each skill of the bundle once (the first agent's record of it), sorted by SKILL.md path: the bodies' order. */
export function bundledSkills(compilation: Compilation): AgentSkill[] {
  const skills = new Map<string, AgentSkill>();
  for (const agent of compilation.agents) for (const skill of agent.skills) if (!skills.has(skill.file)) skills.set(skill.file, skill);
  return [...skills.values()].sort((a, b) => compareStrings(a.file, b.file));
}

/**
 * The bundle's files. Pure: every output is derived from the compilation alone, with sorted keys, LF
 * line ends and a final newline (prompts excepted: they are byte-exact prompt text). The manifest and the
 * modules are made as they are written (see `lazyParts`). `keyed`: each skill's entry is named by `entryKey`, and
 * where the files hold it and its body is recorded, so that the next build can copy them (only for a build cache).
 */
export function bundleOf(compilation: Compilation, { keyed = false }: { keyed?: boolean } = {}): Bundle {
  const { skills: ordered, inputsHash: inputs } = bundleInputs(compilation);
  const shared = new Map(ordered.map((skill) => [skill.file, skill]));

  const files: BundleFile[] = [];
  const agents: Record<string, Omit<Manifest["agents"][string], "skills"> & { skills: Each<AgentSkill> }> = {};
  const { contextFile } = compilation.config.config;
  for (const agent of compilation.agents) {
    files.push({ path: `prompts/${agent.id}.txt`, parts: [agent.prompt] });
    const writesContext = contextFile !== undefined && agent.context.files.length > 0;
    if (writesContext) files.push({ path: `agents/${agent.id}/${contextFile}`, parts: [`${agent.context.text}\n`] });
    agents[agent.id] = {
      format: agent.format,
      prompt: `prompts/${agent.id}.txt`,
      // Recorded so `skills diff` can compare sizes from a manifest alone; the catalogue is what a budget limits.
      characters: { prompt: agent.prompt.length, catalogue: agent.catalogueCharacters },
      ...(agent.tokens ? { tokens: agent.tokens } : {}),
      skills: new Each(agent.skills, (skill) => new Written((depth) => agentRow(skill, shared.get(skill.file)!, depth, keyed))),
      ...(agent.description === undefined ? {} : { description: agent.description }),
      ...(agent.toolDescription === undefined ? {} : { toolDescription: agent.toolDescription }),
      ...(agent.budget ? { budget: agent.budget.unit === "tokens" ? { tokens: agent.budget.limit } : agent.budget.limit } : {}),
      ...(agent.context.files.length > 0 ? { context: agent.context.files.map((file) => file.file), contextSha256: Object.fromEntries(agent.context.files.map((file) => [file.file, file.hash])) } : {}),
      ...(agent.notAllowed.length > 0 ? { notAllowed: agent.notAllowed.map((skill) => skill.file) } : {}),
      ...(agent.tool ? { tool: agent.tool } : {}),
      ...(writesContext ? { contextFile: `agents/${agent.id}/${contextFile}` } : {}),
      ...servingOf(compilation, agent),
    };
  }
  files.push(...moduleFiles(compilation, ordered, keyed));

  const outputs: Record<string, Slot> = {};
  for (const file of files) outputs[file.path] = new Slot({ sha256Of: file.path });
  const manifest = {
    $schema: manifestSchemaPath(compilation.outDir, compilation.config.dir),
    schemaVersion: SCHEMA_VERSION,
    generator: GENERATOR,
    agents,
    skills: new Each(ordered, (skill, index) => new Entry(keyed ? entryKey(skill, compilation.config.config.frontmatter !== undefined) : undefined, index, (depth) => manifestSkill(skill, index, depth))),
    diagnostics: compilation.diagnostics,
    // Last, so it covers every other file of the bundle.
    hashes: { inputs, outputs },
  } satisfies Record<keyof Manifest, unknown>;
  files.push({
    path: "manifest.json",
    parts: lazyParts(function* () {
      yield* jsonParts(manifest, MANIFEST_STYLE);
      yield "\n";
    }),
  });
  return { files, bodies: ordered.map((skill) => ({ hash: skill.hash, text: () => skill.body })), keyed };
}

/**
 * An agent's row of a skill in the manifest, `depth` levels deep; for a keyed bundle, made once for a skill placed
 * where the bundle's record of it says (a watching session's unchanged skill is the same object build after build).
 */
function agentRow(skill: AgentSkill, shared: AgentSkill, depth: number, keyed: boolean): string {
  const kept = agentRows.get(skill);
  if (kept?.depth === depth && skill === shared) return kept.text;
  const { baseDir, location, staged } = placedElsewhere(skill, shared);
  const text = agentRowJson({ baseDir, file: skill.file, listed: skill.listed, location, mode: skill.mode, name: skill.name, source: skill.source, staged }, depth);
  if (skill !== shared || !keyed) return text;
  const flat = copyOf(text);
  agentRows.set(skill, { depth, text: flat });
  return flat;
}

const agentRows = new WeakMap<AgentSkill, { depth: number; text: string }>();

/** An agent's row of a skill in the manifest; `baseDir`, `location` and `staged` only where it is placed otherwise than the bundle's record of it. */
interface AgentRow {
  baseDir: string | undefined;
  file: string;
  listed: boolean;
  location: string | undefined;
  mode: string;
  name: string;
  source: number;
  staged: string | undefined;
}

/**
 * `indentedJson` of `row` (keys sorted, those undefined left out), `depth` levels deep, written for its one shape:
 * ~2.5 times faster than an object made with conditional spreads and walked by `JSON.stringify` with an indent.
 * @internal Exported for the test that compares the two.
 */
export function agentRowJson(row: AgentRow, depth: number): string {
  const field = `\n${"  ".repeat(depth + 1)}`;
  let text = "{";
  if (row.baseDir !== undefined) text += `${field}"baseDir": ${quoted(row.baseDir)},`;
  text += `${field}"file": ${quoted(row.file)},${field}"listed": ${JSON.stringify(row.listed)},`;
  if (row.location !== undefined) text += `${field}"location": ${quoted(row.location)},`;
  text += `${field}"mode": ${quoted(row.mode)},${field}"name": ${quoted(row.name)},${field}"source": ${JSON.stringify(row.source)}`;
  if (row.staged !== undefined) text += `,${field}"staged": ${quoted(row.staged)}`;
  return `${text}\n${"  ".repeat(depth)}}`;
}

/**
 * A skill's record in the manifest, `depth` levels deep, as `jsonParts` would write the object of its keys (sorted,
 * two-space indented) with its body in a slot: written for this shape, each string value by `quoted`.
 */
function manifestSkill(skill: AgentSkill, body: number, depth: number): Part[] {
  const line = `,\n${"  ".repeat(depth + 1)}`;
  const nested = (value: unknown) => plainJson(value, "  ".repeat(depth + 1)) ?? indentedJson(sortedData(value), depth + 1);
  return [
    `{${line.slice(1)}"baseDir": ${quoted(skill.baseDir)}${line}"body": `,
    { body, ascii: false },
    `${line}"description": ${quoted(skill.description)}${line}"extra": ${nested(skill.extra)}${line}"fields": ${nested(skill.fields)}` +
      `${line}"file": ${quoted(skill.file)}${line}"files": ${filesJson(skill.files, depth + 1)}${line}"hash": ${quoted(skill.hash)}` +
      `${line}"location": ${quoted(skill.location)}${line}"name": ${quoted(skill.name)}` +
      `${skill.staged ? `${line}"staged": ${quoted(skill.staged)}` : ""}${line}"structure": ${nested(summarizeStructure(skill.files))}\n${"  ".repeat(depth)}}`,
  ];
}

/**
 * `indentedJson` of a skill's files, `depth` levels deep, written for their one shape: `JSON.stringify` with an
 * indent walks any value (and is slow at it in Node 20), ~2 µs for a skill's few files.
 * @internal Exported for the test that compares the two.
 */
export function filesJson(files: readonly SkillFile[], depth: number): string {
  if (files.length === 0) return "[]";
  const item = `\n${"  ".repeat(depth + 1)}`;
  const field = `\n${"  ".repeat(depth + 2)}`;
  let text = "[";
  for (let index = 0; index < files.length; index++) {
    const { path, sha256, size } = files[index]!;
    text += `${index === 0 ? "" : ","}${item}{${field}"path": ${quoted(path)},${field}"sha256": ${quoted(sha256)},${field}"size": ${JSON.stringify(size)}${item}}`;
  }
  return `${text}\n${"  ".repeat(depth)}]`;
}

/** How an agent serves its skills, as the manifest records it. */
function servingOf(compilation: Compilation, agent: CompiledAgent): Pick<Manifest["agents"][string], "files" | "publish" | "served"> {
  const { files, publish } = compilation.config.config.agents[agent.id]!;
  const { dir } = compilation.config;
  return {
    ...(files ? { files } : {}),
    ...(publish ? { publish: { wellKnown: relativeTo(dir, resolve(dir, publish.wellKnown)) || "." } } : {}),
    ...(agent.served ? { served: agent.served } : {}),
  };
}

/** A skill file `stage` puts into the bundle. */
export interface StagedCopy {
  /** Absolute path of the file in the skill folder. */
  from: string;
  /** The skills root it was found under (absolute): a link may only point inside it. */
  root: string;
  /** Path inside the bundle, `skills/<name>/…` or `agents/<id>/skills/<name>/…`. */
  path: string;
  /** What the manifest records for it. */
  sha256: string;
  /** `copy`, or `link`: a hard link to the file (a copy where the filesystem cannot link). */
  method: "copy" | "link";
  /** The file discovery verified inside the root: it is staged only while `from` is still it. */
  identity: FileIdentity;
}

/** The files `stage` puts into the bundle, each staged folder once, by bundle path. Pure. */
export function stagedCopies(compilation: Compilation): StagedCopy[] {
  const { config, dir } = compilation.config;
  const method = typeof config.stage === "object" ? config.stage.method : "copy";
  const copies = new Map<string, StagedCopy>();
  for (const agent of compilation.agents) {
    for (const skill of agent.skills) {
      if (!skill.staged) continue;
      const root = resolveRoot(config.agents[agent.id]!.skills[skill.source]!.root, dir);
      for (const file of skill.files) {
        const path = `${skill.staged}/${file.path}`;
        const from = join(skill.sourceDir, file.path);
        copies.set(path, { from, root, path, sha256: file.sha256, method, identity: compilation.verified.get(from)! });
      }
    }
  }
  return [...copies.values()].sort((a, b) => compareStrings(a.path, b.path));
}

/**
 * Identifies what the bundle was built from, so a server can log it: the resolved config (a format function by
 * its source text) and `SKILLS_PROMPT_CHAR_BUDGET`, and the path and content hash of every skill in the bundle, its files and its agents'
 * context files. Paths are config-relative, so the hash does not depend on the folder the project sits in.
 * `skills`: the bundled skills, sorted by file.
 */
function inputsHash(compilation: Compilation, skills: readonly AgentSkill[]): string {
  const config = JSON.parse(JSON.stringify(compilation.config.config, (key, value: unknown) => (typeof value === "function" ? `function ${String(value)}` : schemaAsJson(key, value))));
  const context = compilation.agents.flatMap((agent) => agent.context.files.map((file) => [file.file, file.hash]));
  // SKILLS_PROMPT_CHAR_BUDGET counts as config: a changed variable makes `build --check` report the bundle stale.
  const environment = compilation.config.environmentBudget === undefined ? {} : { environment: { SKILLS_PROMPT_CHAR_BUDGET: compilation.config.environmentBudget } };
  const hash = createHash("sha256").update(stableJson({ config, context, ...environment }));
  for (const skill of skills) hash.update(inputLine(skill));
  return hash.digest("hex");
}

/** The config's `frontmatter` schema by its JSON Schema: what the bundle's types are written from. */
function schemaAsJson(_key: string, value: unknown): unknown {
  return isObjectSchema(value) ? customFieldsJsonSchema(value, "output") : value;
}

/** What a bundle file's bytes go to: a file being written, or one on disk being compared. */
export interface Sink {
  /** Appends bytes; `bytes` may be reused once the call returns. */
  write(bytes: Uint8Array): void;
  /** Appends placeholder bytes that a patch will replace. */
  reserve(bytes: Uint8Array): void;
  /** Overwrites bytes written earlier, at `offset`. */
  patch(offset: number, bytes: Uint8Array): void;
  /** After the last write and patch. */
  end(): void;
}

/** What a hash part holds until the hash is known. */
const HASH_PLACEHOLDER = Buffer.from("0".repeat(64), "latin1");

/** Bytes gathered before they go to a sink: large enough that writes are few. */
const CHUNK_BYTES = 1 << 18;

/**
 * A file of the bundle as the last build wrote it, still untouched (see `earlierFiles` in emit.ts): where it holds
 * each skill's entry and body, and a read of its bytes, false when fewer than `length` bytes could be read.
 */
export interface EarlierFile {
  places: FilePlaces;
  read(into: Uint8Array, at: number, length: number, position: number): boolean;
  /** Reads up to `into.byteLength` bytes at `position`, past the window `read` keeps; how many were read. */
  readAt(into: Uint8Array, position: number): number;
}

/**
 * The hash checkpoints of each file `renderBundle` hashed, by the places it returned for the file: a watching
 * session keeps the last build's places in memory, and with them the states its hash of the file went through.
 */
const checkpointsOf = new WeakMap<FilePlaces, HashCheckpoints>();

/**
 * Streams the bundle's files into sinks and returns where each file holds each skill (none for a bundle that is
 * not keyed: no later build copies from it). The files advance together, body by body, so each body is escaped
 * once and dropped once every file that holds it has it: no file's whole text and no second copy of the bodies
 * is ever in memory. What `earlier`'s version of the same file holds is copied from there instead of made again:
 * a skill's whole entry, where one of the same key is there; else its body, where the same SKILL.md's is (escaped
 * for that file), neither read from the SKILL.md nor escaped again. A hash part is written as a string of zeros
 * and patched once the file it names is complete. A file the same as another is handed to `same` once that one
 * ended.
 */
export function renderBundle(
  bundle: Bundle,
  open: (path: string) => Sink,
  same: (path: string, sameAs: string) => void,
  earlier: (path: string) => EarlierFile | undefined = () => undefined,
): Map<string, FilePlaces> {
  const writers = new Map<string, FileWriter>();
  const twins: { path: string; sameAs: string }[] = [];
  // A file comes after any file it takes a hash of, so no file takes the last one's (the manifest's, ~half the
  // bytes): it is not hashed.
  const last = bundle.files.at(-1)?.path;
  for (const file of bundle.files) {
    if ("sameAs" in file) twins.push(file);
    else writers.set(file.path, new FileWriter(file.parts, open(file.path), earlier(file.path), file.path !== last, bundle.keyed));
  }
  let escaped: { json: string; ascii: string | undefined } | undefined;
  const bodyText = (part: BodyPart) => {
    escaped ??= jsonString(bundle.bodies[part.body]!.text());
    return part.ascii ? (escaped.ascii ??= escapePastAscii(escaped.json)) : escaped.json;
  };
  for (let body = 0; body < bundle.bodies.length; body++) {
    escaped = undefined;
    for (const writer of writers.values()) writer.advance(body, bundle.bodies[body]!.hash, bodyText);
  }
  for (const writer of writers.values()) writer.advance(Infinity, "", bodyText);

  const hashes = new Map<string, string | undefined>();
  for (const [path, writer] of writers) {
    const checkpoints = writer.finish();
    if (checkpoints) checkpointsOf.set(writer.places, checkpoints);
    hashes.set(path, checkpoints?.digest);
  }
  for (const { path, sameAs } of twins) hashes.set(path, hashes.get(sameAs));
  for (const writer of writers.values()) {
    for (const { offset, of } of writer.hashSlots) {
      const hashed = writers.get(twins.find((twin) => twin.path === of)?.sameAs ?? of);
      const hash = hashes.get(of);
      // A file's hash is taken once its bytes are final, so it cannot hold hashes itself.
      if (!hashed || hashed.hashSlots.length > 0 || hash === undefined) throw new Error(`skillbake: the bundle file ${of} cannot be hashed into another`);
      writer.sink.patch(offset, Buffer.from(hash, "latin1"));
    }
    writer.sink.end();
  }
  for (const { path, sameAs } of twins) same(path, sameAs);
  const holdsSkills = ({ entries, bodies }: FilePlaces) => Object.keys(entries).length > 0 || Object.keys(bodies).length > 0;
  return new Map([...writers].flatMap(([path, writer]) => (holdsSkills(writer.places) ? [[path, writer.places] as const] : [])));
}

/** One file's parts on their way to its sink: encoded into a chunk, hashed, and written a chunk at a time. */
class FileWriter {
  readonly hashSlots: { offset: number; of: string }[] = [];
  /** Where this file holds each skill (patching a hash in moves nothing: it has the placeholder's length). */
  readonly places: FilePlaces = { entries: Object.create(null) as FilePlaces["entries"], bodies: Object.create(null) as FilePlaces["bodies"] };
  private parts: Iterator<Part>;
  /** While an entry is made from its parts: the file's parts after it, its key, and where it began. */
  private outer: { parts: Iterator<Part>; entry: string; start: number } | undefined;
  /** A body or entry part taken from `parts` before its body's turn. */
  private waiting: BodyPart | EntryPart | undefined;
  private offset = 0;
  private filled = 0;
  private readonly chunk = Buffer.allocUnsafe(CHUNK_BYTES);
  /** Undefined for a file no other takes the hash of. */
  private readonly hash: PrefixHash | undefined;

  constructor(
    parts: Iterable<Part>,
    readonly sink: Sink,
    private readonly earlier: EarlierFile | undefined,
    hashed: boolean,
    /** Whether `places` is kept: ~3 MB at 10,000 skills that only a build cache uses. */
    private readonly placed: boolean,
  ) {
    this.parts = parts[Symbol.iterator]();
    const checkpoints = earlier && checkpointsOf.get(earlier.places);
    this.hash = hashed ? new PrefixHash(checkpoints && { checkpoints, readAt: (into, position) => earlier.readAt(into, position) }) : undefined;
  }

  /** Writes parts up to and including the body `body` (from the SKILL.md of sha256 `hash`), stopping before any later body. */
  advance(body: number, hash: string, bodyText: (part: BodyPart) => string): void {
    for (let part = this.waiting ?? this.next(); part !== undefined; part = this.next()) {
      this.waiting = undefined;
      if (typeof part === "string") this.text(part);
      else if ("sha256Of" in part) {
        this.text('"');
        this.flush();
        this.hashSlots.push({ offset: this.offset, of: part.sha256Of });
        this.emit(HASH_PLACEHOLDER, true);
        this.text('"');
      } else if (part.body > body) {
        this.waiting = part;
        return;
      } else if (part.body < body) throw new Error(`skillbake: body ${part.body} is out of order in a bundle file`);
      else if ("entry" in part) this.entry(part, hash);
      else {
        const start = this.at();
        if (!this.copyEarlier(this.earlier?.places.bodies, hash)) this.text(bodyText(part));
        if (this.placed) this.places.bodies[hash] = [start, this.at() - start];
      }
    }
  }

  /** Copies a skill's entry (holding the body of `hash`) from the earlier file, or goes on with the parts that make it. */
  private entry(part: EntryPart, hash: string): void {
    const start = this.at();
    const earlier = this.earlier?.places;
    if (this.copyEarlier(earlier?.entries, part.entry)) {
      this.places.entries[part.entry] = [start, this.at() - start];
      // The body inside it moved with it, if the earlier file's body of that hash was inside that entry.
      const [entryAt, entryLength] = earlier!.entries[part.entry]!;
      const body = Object.hasOwn(earlier!.bodies, hash) ? earlier!.bodies[hash] : undefined;
      if (Array.isArray(body) && body[0] >= entryAt && body[0] + body[1] <= entryAt + entryLength) this.places.bodies[hash] = [start + body[0] - entryAt, body[1]];
      return;
    }
    if (this.outer) throw new Error("skillbake: a skill's entry inside another in a bundle file");
    this.outer = { parts: this.parts, entry: part.entry, start };
    this.parts = part.parts[Symbol.iterator]();
  }

  /** Bytes of the file so far, written or in the chunk. */
  private at(): number {
    return this.offset + this.filled;
  }

  /** Copies the bytes of `key`'s place (in `places`, of the earlier version of this file), if there is one and it fits a chunk. */
  private copyEarlier(places: Record<string, [number, number]> | undefined, key: string): boolean {
    const place = places && Object.hasOwn(places, key) ? places[key] : undefined;
    if (!Array.isArray(place)) return false;
    const [position, length] = place;
    if (!(length <= CHUNK_BYTES)) return false;
    if (length > CHUNK_BYTES - this.filled) this.flush();
    if (!this.earlier!.read(this.chunk, this.filled, length, position)) return false;
    this.filled += length;
    return true;
  }

  private next(): Part | undefined {
    let next = this.parts.next();
    if (next.done && this.outer) {
      // An entry made from its parts ended: where it is, then the file's parts after it.
      this.places.entries[this.outer.entry] = [this.outer.start, this.at() - this.outer.start];
      this.parts = this.outer.parts;
      this.outer = undefined;
      next = this.parts.next();
    }
    return next.done ? undefined : next.value;
  }

  /** Flushes what is left; returns the sha256 of everything written, before any patch, if the file is hashed, and its checkpoints. */
  finish(): HashCheckpoints | undefined {
    this.flush();
    return this.hash?.finish();
  }

  private text(text: string): void {
    // A UTF-16 code unit takes at most 3 bytes in UTF-8.
    if (text.length * 3 > CHUNK_BYTES - this.filled) this.flush();
    if (text.length * 3 <= CHUNK_BYTES) {
      this.filled += this.chunk.write(text, this.filled, "utf8");
      return;
    }
    // Longer text (a prompt, a module's tables) goes a chunk at a time, not encoded whole into memory of its size.
    for (let start = 0; start < text.length; ) {
      const end = sliceEnd(text, start, Math.floor(CHUNK_BYTES / 3));
      this.filled = this.chunk.write(text.slice(start, end), 0, "utf8");
      this.flush();
      start = end;
    }
  }

  private flush(): void {
    if (this.filled === 0) return;
    this.emit(this.chunk.subarray(0, this.filled));
    this.filled = 0;
  }

  private emit(bytes: Uint8Array, placeholder = false): void {
    this.hash?.update(bytes);
    if (placeholder) this.sink.reserve(bytes);
    else this.sink.write(bytes);
    this.offset += bytes.byteLength;
  }
}

/** Every file's text, in memory: for tests and small bundles; `renderBundle` is what builds use. */
export function bundleTexts(bundle: Bundle): Map<string, string> {
  const buffers = new Map<string, Buffer>();
  const texts = new Map<string, string>();
  renderBundle(
    bundle,
    (path) => {
      const pieces: Buffer[] = [];
      return {
        write: (bytes) => void pieces.push(Buffer.from(bytes)),
        reserve: (bytes) => void pieces.push(Buffer.from(bytes)),
        patch: (offset, bytes) => {
          const whole = Buffer.concat(pieces.splice(0));
          whole.set(bytes, offset);
          pieces.push(whole);
        },
        end: () => void buffers.set(path, Buffer.concat(pieces)),
      };
    },
    (path, sameAs) => void buffers.set(path, buffers.get(sameAs)!),
  );
  for (const file of bundle.files) texts.set(file.path, buffers.get(file.path)!.toString("utf8"));
  return texts;
}
