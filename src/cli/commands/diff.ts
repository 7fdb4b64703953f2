import { diffBundles } from "../../review/diff.js";
import { COMMENT_LIMIT, formatDiffJson, formatDiffMarkdown, formatDiffPretty, SUMMARY_LIMIT_BYTES, type DiffFormat } from "../../review/diff-format.js";
import { countPromptTokens, loadBundle } from "../../review/load.js";
import { EMPTY_MANIFEST, ManifestError } from "../../review/manifest.js";
import { escapeInvisible, styleFor } from "../../compile/terminal.js";
import { appendStepSummary, UsageError, write, writeJson, type Command, type CommandIO } from "./command.js";

const FORMATS: readonly DiffFormat[] = ["pretty", "markdown", "json"];

export const diffCommand: Command = {
  name: "diff",
  summary: "show how each agent's prompt changed between two bundles",
  help: `Usage: skills diff BEFORE AFTER [--format pretty|markdown|json] [--exit-code] [--estimate-tokens] [--allow-missing-before]

Compares two bundles agent by agent: skills added or removed (and why: the agent's \`allow\`, a skill that
failed a rule), dropped from the catalogue by the budget or restored to it, moved between the catalogue,
inline and hidden (disable-model-invocation); changed descriptions (old → new) and bodies (a diff of their
lines, cut after 60); the old and new values of allowed-tools, disable-model-invocation, user-invocable,
context, agent and model, and the names of other frontmatter fields that changed; locations; files beside a
skill; context files; the skill tool's description; prompt characters and tokens before → after; the budget
and the skills it drops.

BEFORE and AFTER are each a bundle folder (an outDir) or its manifest.json. Tokens are counted with the
encoding the bundles record, else o200k_base, from each bundle's prompts/<agent>.txt.

Options:
  --format FORMAT          pretty (default) | markdown (a pull-request comment, under GitHub's 65,536-character
                           limit) | json
  --exit-code              exit 1 when anything changed (default: exit 0 either way)
  --estimate-tokens        estimate tokens as characters ÷ 4 instead of counting them
  --allow-missing-before   a BEFORE that does not exist is an empty bundle (a first bundle, or a base branch
                           that does not build yet): every agent shows as new

Under GitHub Actions the markdown comparison is also appended to the job summary (up to 900 KB), which holds
what a comment has no room for.

Examples:
  skills diff base/dist/skills dist/skills
  skills diff before.json dist/skills/manifest.json --format markdown > comment.md
  skills diff "$RUNNER_TEMP/before" "$RUNNER_TEMP/after" --exit-code --allow-missing-before`,
  options: { format: { type: "string" }, "exit-code": { type: "boolean" }, "estimate-tokens": { type: "boolean" }, "allow-missing-before": { type: "boolean" } },
  maxPositionals: 2,
  async run(values, positionals, io) {
    const format = (values.format ?? "pretty") as DiffFormat;
    if (!FORMATS.includes(format)) throw new UsageError(`--format must be pretty, markdown or json (got "${String(values.format)}")`);
    if (positionals.length < 2) throw new UsageError("give two bundles to compare: skills diff BEFORE AFTER");
    const [beforePath, afterPath] = positionals as [string, string];
    let diff;
    try {
      // One after the other, so a problem with BEFORE is always the one reported.
      const before = loadBundle(io.cwd, beforePath, { allowMissing: values["allow-missing-before"] === true });
      const after = loadBundle(io.cwd, afterPath)!;
      const tokens = values["estimate-tokens"] === true ? { estimate: "--estimate-tokens" } : await countPromptTokens(before, after);
      diff = diffBundles(before?.manifest ?? EMPTY_MANIFEST, after.manifest, tokens);
    } catch (error) {
      if (!(error instanceof ManifestError)) throw error;
      write(io.stderr, `skills diff: ${escapeInvisible(error.message)}`);
      return 2;
    }
    if (format === "json") writeJson(io.stdout, formatDiffJson(diff));
    else if (format === "markdown") write(io.stdout, formatDiffMarkdown(diff, { limit: COMMENT_LIMIT, ...(summaryUrl(io) ? { rest: summaryUrl(io) } : {}) }));
    else write(io.stdout, formatDiffPretty(diff, { before: beforePath, after: afterPath }, styleFor(io.stdout, io.env)));
    appendStepSummary(io, formatDiffMarkdown(diff, { limit: SUMMARY_LIMIT_BYTES, bytes: true }));
    return values["exit-code"] === true && diff.changed ? 1 : 0;
  },
};

/** The page of this workflow run, where its job summary is, when running under GitHub Actions. */
function summaryUrl(io: CommandIO): string | undefined {
  const { GITHUB_ACTIONS, GITHUB_STEP_SUMMARY, GITHUB_SERVER_URL, GITHUB_REPOSITORY, GITHUB_RUN_ID } = io.env;
  if (GITHUB_ACTIONS !== "true" || !GITHUB_STEP_SUMMARY) return undefined;
  if (!/^https:\/\/[\w.-]+(:\d+)?$/.test(GITHUB_SERVER_URL ?? "") || !/^[\w.-]+\/[\w.-]+$/.test(GITHUB_REPOSITORY ?? "") || !/^\d+$/.test(GITHUB_RUN_ID ?? "")) return "the job summary of this run";
  return `${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}/actions/runs/${GITHUB_RUN_ID}`;
}
