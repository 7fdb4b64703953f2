import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import type { LoadedConfig } from "./config.js";
import { declaredFields } from "./custom-fields.js";
import { RULES, type Finding } from "./diagnostics.js";
import { skillBody } from "./parse.js";
import type { SkillContent, ValidationResult } from "./validate.js";
import { TOOL_VERSION } from "./version.js";

/** Bumped when the file's layout changes. */
const FORMAT = 1;

/**
 * What one SKILL.md yields, less its body: the body is most of the bytes, and every build reads the SKILL.md
 * anyway (to hash it, and because the bundle holds the body), so caching it would only double the reading.
 */
interface SkillRecord {
  /** sha256 of the SKILL.md bytes: with the path and folder name, what the record is valid for. */
  hash: string;
  /** The folder name `name` was checked against. */
  folder: string;
  findings: Finding[];
  content?: Omit<SkillContent, "body">;
}

/** The bundle last written, and how to tell that nobody has touched it since. */
interface BundleRecord {
  outDir: string;
  /** Digest of the compilation it was written from (`bundleFingerprint`). */
  fingerprint: string;
  /** Each file and folder written, relative to outDir, with its stat signature right after writing. */
  paths: Record<string, string>;
}

interface CacheContents {
  /** By SKILL.md path relative to the config folder. */
  skills: Record<string, SkillRecord>;
  bundle?: BundleRecord;
  /** The tokens of each line of text the last build counted, in its encoding, as the token worker wrote them (`TokenCounter.used`). */
  tokens?: { encoding: string; counts: string };
}

/**
 * The build cache (`node_modules/.cache/skillbake/<config file name>.json` beside the config). It holds each
 * SKILL.md's parse and validation outcome, keyed by the sha256 of its bytes, so a rebuild re-parses only what
 * changed; and the fingerprint of the last bundle written, so a rebuild whose compilation is unchanged writes
 * nothing. The whole file is keyed by the tool's version and the settings that change what a SKILL.md yields
 * (`yaml`, `descriptionFallback`, the names of the `frontmatter` schema's fields: their values are checked after
 * the cache); a file that is unreadable, corrupt (its checksum disagrees), or written by another version or for
 * other settings is ignored and replaced. Never mtime alone: skills are matched by
 * content hash; the bundle by the compilation's digest and, for its files, inode + size + mtime + ctime.
 */
export class BuildCache {
  /** SKILL.md files parsed this run, and those whose outcome came from the cache. */
  readonly stats = { parsed: 0, reused: 0 };
  private readonly next: CacheContents = { skills: {} };
  private dirty = false;

  private constructor(
    private readonly file: string,
    private readonly key: string,
    private readonly previous: CacheContents,
  ) {}

  static open(loaded: LoadedConfig): BuildCache {
    const { config } = loaded;
    const customFields = config.frontmatter ? declaredFields(config.frontmatter) : [];
    const key = sha256(JSON.stringify({ tool: TOOL_VERSION, yaml: config.yaml, descriptionFallback: config.descriptionFallback ?? null, customFields }));
    const file = join(loaded.dir, "node_modules", ".cache", "skillbake", `${basename(loaded.file)}.json`);
    const previous = readContents(file, key);
    const cache = new BuildCache(file, key, previous ?? { skills: {} });
    cache.dirty = previous === undefined;
    return cache;
  }

  /** A SKILL.md's outcome: from the cache when its bytes, path and folder match a record, else from `validate`. */
  skill(displayFile: string, folder: string, bytes: Uint8Array, hash: string, validate: () => ValidationResult): ValidationResult {
    const record = this.previous.skills[displayFile];
    if (record && isSkillRecord(record) && record.hash === hash && record.folder === folder) {
      this.stats.reused++;
      this.next.skills[displayFile] = record;
      return { findings: record.findings, ...(record.content ? { content: { ...record.content, body: skillBody(bytes) } } : {}) };
    }
    this.stats.parsed++;
    const result = validate();
    const { body: _body, ...content } = result.content ?? { body: "" };
    const fresh: SkillRecord = { hash, folder, findings: result.findings, ...(result.content ? { content: content as SkillRecord["content"] } : {}) };
    // A value JSON cannot carry exactly (NaN, Infinity, -0 from YAML) would come back changed: not cached.
    if (isJsonExact(fresh)) {
      this.next.skills[displayFile] = fresh;
      this.dirty = true;
    }
    return result;
  }

  /** The token counts the last build made in `encoding` (see `TokenCounter.used`), to be reused where the text is the same. */
  tokenCounts(encoding: string): string | undefined {
    const tokens = this.previous.tokens;
    return tokens?.encoding === encoding && typeof tokens.counts === "string" ? tokens.counts : undefined;
  }

  /** Keeps this build's token counts for the next build. */
  recordTokenCounts(encoding: string, counts: string): void {
    const previous = this.previous.tokens;
    this.next.tokens = { encoding, counts };
    if (previous?.encoding !== encoding || previous.counts !== counts) this.dirty = true;
  }

  /** Whether `outDir` still holds, untouched, the bundle last written from a compilation with this fingerprint. */
  bundleIsCurrent(outDir: string, fingerprint: string): boolean {
    const bundle = this.previous.bundle;
    if (!bundle || bundle.outDir !== outDir || bundle.fingerprint !== fingerprint || typeof bundle.paths !== "object" || bundle.paths === null) return false;
    const paths = Object.entries(bundle.paths);
    return paths.length > 0 && paths.every(([path, signature]) => statSignature(join(outDir, path)) === signature);
  }

  /** Records the bundle just written: every file (and the folders holding them) with its stat signature. */
  recordBundle(outDir: string, fingerprint: string, files: Iterable<string>): void {
    const paths: Record<string, string> = {};
    const add = (path: string) => {
      const signature = statSignature(join(outDir, path));
      if (signature !== undefined) paths[path] = signature;
    };
    add(".");
    for (const file of files) {
      for (let slash = file.indexOf("/"); slash >= 0; slash = file.indexOf("/", slash + 1)) if (!(file.slice(0, slash) in paths)) add(file.slice(0, slash));
      add(file);
    }
    this.next.bundle = { outDir, fingerprint, paths };
    this.dirty = true;
  }

  /** Writes the cache if anything changed (a record added, dropped or replaced); failures are ignored. */
  save(): void {
    if (this.previous.bundle && !this.next.bundle) this.next.bundle = this.previous.bundle;
    const dropped = Object.keys(this.previous.skills).some((path) => !(path in this.next.skills));
    if (!this.dirty && !dropped) return;
    const payload = JSON.stringify(this.next);
    const header = JSON.stringify({ format: FORMAT, key: this.key, sha256: sha256(payload) });
    // A sibling temporary file renamed into place: a concurrent build reads the old cache or the new one.
    const temporary = `${this.file}.${process.pid}.tmp`;
    try {
      mkdirSync(dirname(this.file), { recursive: true });
      writeFileSync(temporary, `${header}\n${payload}`);
      renameSync(temporary, this.file);
    } catch {
      rmSync(temporary, { force: true });
    }
  }
}

function readContents(file: string, key: string): CacheContents | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  try {
    const newline = text.indexOf("\n");
    const header = JSON.parse(text.slice(0, newline)) as { format?: unknown; key?: unknown; sha256?: unknown };
    if (header.format !== FORMAT || header.key !== key) return undefined;
    const payload = text.slice(newline + 1);
    if (header.sha256 !== sha256(payload)) return undefined;
    const contents = JSON.parse(payload) as CacheContents;
    return typeof contents.skills === "object" && contents.skills !== null ? contents : undefined;
  } catch {
    return undefined;
  }
}

/** The shape a record must have to be used; anything else is treated as absent. */
function isSkillRecord(value: SkillRecord): boolean {
  const content = value.content;
  return (
    typeof value.hash === "string" &&
    typeof value.folder === "string" &&
    Array.isArray(value.findings) &&
    value.findings.every((finding) => typeof finding?.message === "string" && Object.hasOwn(RULES, finding.code)) &&
    (content === undefined ||
      (typeof content.name === "string" &&
        typeof content.description === "string" &&
        Number.isInteger(content.bodyLine) &&
        isObject(content.fields) &&
        isObject(content.extra)))
  );
}

function isObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isJsonExact(value: unknown): boolean {
  if (typeof value === "number") return Number.isFinite(value) && !Object.is(value, -0);
  if (value === null || typeof value === "string" || typeof value === "boolean") return true;
  if (Array.isArray(value)) return value.every(isJsonExact);
  if (typeof value === "object" && Object.getPrototypeOf(value) === Object.prototype) return Object.values(value).every((item) => item === undefined || isJsonExact(item));
  return false;
}

/** inode, size, and mtime and ctime in nanoseconds: any write, rename over or replacement changes one of them. */
function statSignature(path: string): string | undefined {
  try {
    const stats = statSync(path, { bigint: true });
    return `${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}`;
  } catch {
    return undefined;
  }
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
