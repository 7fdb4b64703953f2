/**
 * Reading a bundle to review (`skills diff`): its manifest.json and, to count tokens, its prompts. A pull request may
 * commit a bundle, and the folders above it: nothing is read through a link that a pull request could have put
 * there, nor any special file, nor more than `MANIFEST_MAX_BYTES`; a failure is one line naming the path, and
 * never quotes what the file holds.
 */
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readFileSync, type Stats } from "node:fs";
import { basename, dirname, join, relative, resolve } from "node:path";
import { createHash } from "node:crypto";
import { linkBelow, openBundleFile } from "../bundle/emit.js";
import { closest } from "../compile/suggest.js";
import { trimEnd } from "../compile/trim.js";
import { DEFAULT_TOKEN_ENCODING, TOKEN_ENCODINGS, tokenCounter, type TokenEncoding } from "../compile/tokens.js";
import type { PromptTokens } from "./diff.js";
import { ManifestError, parseManifest, type ReviewManifest } from "./manifest.js";

/** A manifest past this is refused rather than read: a 10,000-skill bundle's is a few tens of megabytes. */
export const MANIFEST_MAX_BYTES = 256 * 1024 * 1024;

export interface LoadedBundle {
  /** How messages name it: the path as given. */
  label: string;
  manifest: ReviewManifest;
  /** The folder of the manifest, where its `prompts/` are. */
  folder: string;
}

/**
 * The bundle at `path` (a bundle folder or its manifest.json, relative to `cwd`); with `allowMissing`, undefined
 * when nothing is there. `cwd` is the working tree: a path inside it is followed through folders alone, as a link
 * there may come from a pull request.
 */
export function loadBundle(cwd: string, path: string, { allowMissing = false } = {}): LoadedBundle | undefined {
  const label = path;
  const absolute = resolve(cwd, path);
  const link = linkBelow(cwd, absolute);
  if (link !== undefined) throw new ManifestError(`${link === absolute ? label : relative(cwd, link) || "."} is a symlink; not followed. Give the bundle folder or manifest.json it points to.`);
  const stats = lstatSync(absolute, { throwIfNoEntry: false });
  if (!stats && allowMissing) return undefined;
  if (!stats) throw new ManifestError(`${label}: no such bundle${nearFolder(absolute, label)}; give a bundle folder (an outDir) or a manifest.json`);
  const isFolder = stats.isDirectory();
  const file = isFolder ? join(absolute, "manifest.json") : absolute;
  const shown = isFolder ? `${trimEnd(label, "\\/")}/manifest.json` : label;
  const text = readManifestText(file, shown, isFolder ? label : undefined);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // The parser's message quotes the text, which may be a secret a link led to: only where it stopped is said.
    throw new ManifestError(`${shown}: not valid JSON. Is it a skillbake manifest.json? Rebuild it with \`skills build\`.`);
  }
  return { label: isFolder ? label : dirname(label), manifest: parseManifest(json, shown), folder: dirname(file) };
}

function readManifestText(file: string, shown: string, folderLabel: string | undefined): string {
  let fd: number;
  try {
    // Non-blocking: a FIFO or a device would be read forever (or block until something writes to it).
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && folderLabel !== undefined) throw new ManifestError(`${folderLabel} is a folder without a manifest.json; give a bundle folder (an outDir) or a manifest.json`);
    if (code === "ELOOP") throw new ManifestError(`${shown} is a symlink; not followed. Give the bundle folder or manifest.json it points to.`);
    throw new ManifestError(`${shown}: cannot be read (${code ?? (error as Error).message})`);
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw new ManifestError(`${shown} is not a regular file; give a bundle folder (an outDir) or a manifest.json`);
    if (stats.size > MANIFEST_MAX_BYTES) throw new ManifestError(`${shown} is ${mebibytes(stats)} MiB; skills diff reads manifests of up to ${MANIFEST_MAX_BYTES / 1024 / 1024} MiB`);
    return readFileSync(fd, "utf8");
  } finally {
    closeSync(fd);
  }
}

function mebibytes(stats: Stats): string {
  return (stats.size / 1024 / 1024).toFixed(0);
}

/** `; did you mean X?` for a folder beside a missing path whose name is close to its own. */
function nearFolder(path: string, label: string): string {
  let names: string[];
  try {
    names = readdirSync(dirname(path), { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  } catch {
    return "";
  }
  // Only names of about the same length can be close; a folder of many entries costs no more than a listing.
  const wanted = basename(path);
  const near = closest(wanted, names.filter((name) => Math.abs(name.length - wanted.length) <= Math.max(1, wanted.length / 3)));
  return near === undefined ? "" : ` (did you mean ${join(dirname(label), near)}?)`;
}

/**
 * Every agent's prompt tokens on both sides, in the encoding the manifests record (when they agree on one) or
 * `o200k_base`: taken from a manifest that counted in it, else counted from `prompts/<id>.txt` beside it, which
 * must be the prompt the manifest records; and each skill tool's description's, counted. `{ estimate }` says why
 * they cannot be counted (a manifest.json copied without its prompts, or gpt-tokenizer not installed).
 */
export async function countPromptTokens(before: LoadedBundle | undefined, after: LoadedBundle): Promise<PromptTokens | { estimate: string }> {
  const sides = before ? [before, after] : [after];
  const recorded = new Set(sides.flatMap(({ manifest }) => [...manifest.agents.values()].flatMap((agent) => (agent.tokens ? [agent.tokens.encoding] : []))));
  const [only] = recorded;
  const encoding: TokenEncoding = recorded.size === 1 && (TOKEN_ENCODINGS as readonly string[]).includes(only!) ? (only as TokenEncoding) : DEFAULT_TOKEN_ENCODING;
  const texts: { into: Map<string, number>; id: string; text: string }[] = [];
  const counts = new Map<LoadedBundle, { prompts: Map<string, number>; tools: Map<string, number> }>(sides.map((side) => [side, { prompts: new Map(), tools: new Map() }]));
  for (const side of sides) {
    const { prompts, tools } = counts.get(side)!;
    for (const [id, agent] of side.manifest.agents) {
      if (agent.toolDescription !== undefined) texts.push({ into: tools, id, text: agent.toolDescription });
      if (agent.tokens?.encoding === encoding) prompts.set(id, agent.tokens.prompt);
      else {
        const text = readPrompt(side, id, agent.promptHash);
        if (text === undefined) return { estimate: `${side.label}/prompts/${id}.txt is missing` };
        texts.push({ into: prompts, id, text });
      }
    }
  }
  if (texts.length > 0) {
    let counter;
    try {
      counter = tokenCounter(encoding);
    } catch {
      return { estimate: "gpt-tokenizer is not installed" };
    }
    const tokens = await counter.count(texts.map(({ text }) => text)).catch(() => undefined);
    if (!tokens) return { estimate: `the ${encoding} tokenizer failed` };
    texts.forEach(({ into, id }, index) => into.set(id, tokens[index]!));
  }
  const none = { prompts: new Map<string, number>(), tools: new Map<string, number>() };
  const [was, is] = [before ? counts.get(before)! : none, counts.get(after)!];
  return { encoding, before: was.prompts, after: is.prompts, tools: { before: was.tools, after: is.tools } };
}

/** `prompts/<id>.txt` of a bundle folder, read as `build --check` reads bundle files, and checked against the manifest's hash. */
function readPrompt(side: LoadedBundle, id: string, sha256: string): string | undefined {
  const path = `prompts/${id}.txt`;
  const shown = `${trimEnd(side.label, "\\/")}/${path}`;
  const opened = openBundleFile(side.folder, path);
  if ("missing" in opened) return undefined;
  if ("notFollowed" in opened) throw new ManifestError(`${shown} is ${opened.notFollowed}`);
  let bytes: Buffer;
  try {
    if (fstatSync(opened.fd).size > MANIFEST_MAX_BYTES) throw new ManifestError(`${shown} is over ${MANIFEST_MAX_BYTES / 1024 / 1024} MiB; not read`);
    bytes = readFileSync(opened.fd);
  } finally {
    closeSync(opened.fd);
  }
  if (createHash("sha256").update(bytes).digest("hex") !== sha256) throw new ManifestError(`${shown} is not the prompt its manifest records (another sha256); rebuild the bundle with \`skills build\``);
  return bytes.toString("utf8");
}
