import { constants } from "node:fs";
import { lstat, open } from "node:fs/promises";
import { join, resolve } from "node:path";
import { diffBundles, EMPTY_MANIFEST, ManifestError, parseManifest, type Manifest } from "../../review/diff.js";
import { formatDiffJson, formatDiffMarkdown, formatDiffPretty, type DiffFormat } from "../../review/diff-format.js";
import { escapeInvisible, styleFor } from "../../compile/terminal.js";
import { UsageError, write, writeJson, type Command } from "./command.js";

const FORMATS: readonly DiffFormat[] = ["pretty", "markdown", "json"];

export const diffCommand: Command = {
  name: "diff",
  summary: "show how each agent's prompt changed between two bundles",
  help: `Usage: skills diff BEFORE AFTER [--format pretty|markdown|json] [--exit-code]

Compares two bundles agent by agent: skills added, removed or moved between available and inline,
changed descriptions (old → new), changed bodies (a diff of their lines, cut after 60), other frontmatter,
location changes, files beside a skill added, removed or changed, prompt characters and estimated
tokens before → after, and the budget.

BEFORE and AFTER are each a bundle folder (an outDir) or its manifest.json; only the manifest is read.
A path that does not exist is an empty bundle, so a new agent or a first bundle shows as added.
Tokens are estimated as characters ÷ 4, rounded up; they are not a tokenizer's count.

Options:
  --format FORMAT    pretty (default) | markdown (for a pull-request comment) | json
  --exit-code        exit 1 when anything changed (default: exit 0 either way)

Examples:
  skills diff base/dist/skills dist/skills
  skills diff before.json dist/skills/manifest.json --format markdown > comment.md
  skills diff "$RUNNER_TEMP/before" "$RUNNER_TEMP/after" --exit-code`,
  options: { format: { type: "string" }, "exit-code": { type: "boolean" } },
  maxPositionals: 2,
  async run(values, positionals, io) {
    const format = (values.format ?? "pretty") as DiffFormat;
    if (!FORMATS.includes(format)) throw new UsageError(`--format must be pretty, markdown or json (got "${String(values.format)}")`);
    if (positionals.length < 2) throw new UsageError("give two bundles to compare: skills diff BEFORE AFTER");
    const [beforePath, afterPath] = positionals as [string, string];
    let before: Manifest | undefined;
    let after: Manifest | undefined;
    try {
      // One after the other, so a problem with BEFORE is always the one reported.
      before = await loadManifest(resolve(io.cwd, beforePath), beforePath);
      after = await loadManifest(resolve(io.cwd, afterPath), afterPath);
    } catch (error) {
      if (!(error instanceof ManifestError)) throw error;
      write(io.stderr, `skills diff: ${escapeInvisible(error.message)}`);
      return 2;
    }
    if (!before && !after) {
      write(io.stderr, `skills diff: neither ${beforePath} nor ${afterPath} exists; give at least one bundle folder or manifest.json`);
      return 2;
    }
    const diff = diffBundles(before ?? EMPTY_MANIFEST, after ?? EMPTY_MANIFEST);
    if (format === "json") writeJson(io.stdout, formatDiffJson(diff));
    else if (format === "markdown") write(io.stdout, formatDiffMarkdown(diff));
    else write(io.stdout, formatDiffPretty(diff, { before: beforePath, after: afterPath }, styleFor(io.stdout, io.env)));
    return values["exit-code"] === true && diff.changed ? 1 : 0;
  },
};

/**
 * The manifest of a bundle folder or a manifest.json path; undefined when nothing is there. A pull request may
 * commit either: a link is not followed (it could lead out of the project) and only a regular file is read.
 */
async function loadManifest(path: string, label: string): Promise<Manifest | undefined> {
  const stats = await lstat(path).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw new ManifestError(`${label}: ${error.message}`);
  });
  if (!stats) return undefined;
  if (stats.isSymbolicLink()) throw new ManifestError(`${label} is a symlink; not followed. Give the bundle folder or manifest.json it points to.`);
  const file = stats.isDirectory() ? join(path, "manifest.json") : path;
  const shown = stats.isDirectory() ? join(label, "manifest.json") : label;
  const notAFile = `${shown} is not a regular file; give a bundle folder (an outDir) or a manifest.json`;
  let text: string;
  try {
    // Non-blocking: a FIFO or a device would be read forever (or block until something writes to it).
    const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    try {
      if (!(await handle.stat()).isFile()) throw new ManifestError(notAFile);
      text = await handle.readFile("utf8");
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (error instanceof ManifestError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") throw new ManifestError(`${label} is a folder without a manifest.json; give a bundle folder (an outDir) or a manifest.json`);
    if (code === "ELOOP") throw new ManifestError(`${shown} is a symlink; not followed. Give the bundle folder or manifest.json it points to.`);
    throw new ManifestError(`${shown}: ${(error as Error).message}`);
  }
  try {
    return parseManifest(JSON.parse(text), shown);
  } catch (error) {
    if (error instanceof SyntaxError) throw new ManifestError(`${shown}: not valid JSON (${error.message})`);
    throw error;
  }
}
