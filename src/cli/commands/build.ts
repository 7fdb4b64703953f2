import { join, relative } from "node:path";
import { build, check, type BuildResult, type CheckResult } from "../../api.js";
import type { FileFixes } from "../../lint/files.js";
import { ConfigError } from "../../compile/config.js";
import { withThousands, type Diagnostic } from "../../compile/diagnostics.js";
import { escapeInvisible, styleFor, type Style } from "../../compile/terminal.js";
import { watchBuild } from "../watch.js";
import {
  ciPath,
  configErrorAnnotation,
  countAnnotations,
  COUNTS_PER_CODE_AFTER,
  formatCodeCounts,
  diagnosticAnnotations,
  formatGithub,
  formatPretty,
  formatSarif,
  formatStepSummary,
  formatSummary,
  readSourceLines,
  type Annotation,
  type OutputFormat,
} from "../report.js";
import { didYouMean } from "../../compile/suggest.js";
import { appendStepSummary, failureMessage, UsageError, write, writeJson, writeWorkflowCommands, type Command, type CommandIO, type FlagValues } from "./command.js";

const COMMON_HELP = `  --config FILE      config file (default: skills.config.{ts,mts,js,mjs,json} in the current folder)
  --strict           warnings fail the run too
  --max-warnings N   more than N warnings fail the run
  --format FORMAT    pretty | json | github | sarif (default: github when GITHUB_ACTIONS=true, else pretty);
                     github and sarif name files relative to the current folder. Under GitHub Actions a
                     Markdown summary is also appended to $GITHUB_STEP_SUMMARY
  --fix              first rewrite the SKILL.md files whose findings can be fixed without changing what
                     they mean (quote a value YAML misreads, set a missing name to the folder's); each
                     fix is listed
  --fix-dry-run      list those fixes and print their diff on stdout; write nothing`;

export const buildCommand: Command = {
  name: "build",
  summary: "compile the config's skills and write the bundle",
  help: `Usage: skills build [--config FILE] [--out DIR] [--check] [--watch] [--strict] [--max-warnings N] [--fix | --fix-dry-run] [--format pretty|json|github|sarif]

Compiles every agent in the config and writes the bundle (manifest.json, prompts/) to the config's
outDir (default dist/skills). Nothing is written when there is an error.

Options:
${COMMON_HELP}
  --out DIR          write the bundle here instead of the config's outDir
  --check            compare the bundle on disk with a fresh build; write nothing, exit 1 if stale
  --watch            build, then rebuild on every change of a skill, the config or a file it imports;
                     a build with errors writes nothing, so the last good bundle stays (Ctrl-C stops)

Examples:
  skills build
  skills build --config config/skills.config.ts --out build/skills
  skills build --check          # in CI: fail when the committed bundle is out of date
  skills build --watch          # while editing skills`,
  options: {
    config: { type: "string" },
    out: { type: "string" },
    check: { type: "boolean" },
    watch: { type: "boolean" },
    strict: { type: "boolean" },
    "max-warnings": { type: "string" },
    format: { type: "string" },
    fix: { type: "boolean" },
    "fix-dry-run": { type: "boolean" },
  },
  maxPositionals: 0,
  run: (values, _positionals, io) => (values.watch === true ? watchAndReport(values, io) : compileAndReport("build", values, io)),
};

export const checkCommand: Command = {
  name: "check",
  summary: "validate the skills and agents without writing (a CI gate)",
  help: `Usage: skills check [PATH…] [--config FILE] [--strict] [--max-warnings N] [--quiet] [--suppress] [--prune-suppressions] [--fix | --fix-dry-run] [--format pretty|json|github|sarif]

Does everything \`skills build\` does except writing: exits 1 on any error (with --strict, on any
warning), so it can fail a pull request on invalid frontmatter. Given PATHs, it checks the folders
without a config: every SKILL.md under them (in dot folders and inside other skills' folders too),
with the default rules; a path to a SKILL.md checks the skill of its folder (as a pre-commit hook
passes the files it changed).

Options:
${COMMON_HELP}
  --quiet            errors only: warnings are neither shown nor counted
  --suppress         record today's findings (per file and code, with counts) in skills-suppressions.json
                     beside the config; later runs report only findings beyond it, and name stale entries
  --prune-suppressions
                     lower each entry of skills-suppressions.json to what remains, removing stale ones

Examples:
  skills check
  skills check --max-warnings 0 --format github   # in CI: annotate the pull request, fail on any warning
  skills check --fix                              # quote values YAML misreads, add missing names, then check
  skills check --suppress                         # accept a vendored catalogue's findings as they are today
  skills check vendor/skills                      # no config: every skill under the folder
  skills check a/SKILL.md b/SKILL.md              # no config: the skills of these two files`,
  options: {
    config: { type: "string" },
    strict: { type: "boolean" },
    "max-warnings": { type: "string" },
    format: { type: "string" },
    fix: { type: "boolean" },
    "fix-dry-run": { type: "boolean" },
    quiet: { type: "boolean" },
    suppress: { type: "boolean" },
    "prune-suppressions": { type: "boolean" },
  },
  maxPositionals: Infinity,
  run: (values, positionals, io) => compileAndReport("check", values, io, positionals),
};

async function compileAndReport(command: "build" | "check", values: FlagValues, io: CommandIO, paths: readonly string[] = []): Promise<number> {
  const { format, maxWarnings } = reportSettings(values, io);
  const progress = progressOnTty(io.stderr);
  if (paths.length > 0 && values.config !== undefined) throw new UsageError("PATH arguments check folders without a config: give --config or paths, not both");
  if (paths.some((path) => path === "")) throw new UsageError("a PATH argument cannot be empty");
  if (values.suppress === true && values["prune-suppressions"] === true) throw new UsageError("--suppress and --prune-suppressions do not go together: --suppress records every finding, --prune-suppressions only lowers counts");
  const options = {
    config: values.config as string | undefined,
    cwd: io.cwd,
    strict: values.strict === true,
    maxWarnings,
    onProgress: progress.update,
    fix: fixSetting(values),
    quiet: values.quiet === true,
    suppress: values.suppress === true,
    pruneSuppressions: values["prune-suppressions"] === true,
    paths,
  };
  let result: CheckResult & Partial<BuildResult>;
  try {
    result = await (command === "build" ? build({ ...options, outDir: values.out as string | undefined, check: values.check === true }) : check(options)).finally(
      progress.clear,
    );
  } catch (error) {
    // The CLI prints the error and exits 2; CI formats get it as an annotation on the config too.
    if (error instanceof ConfigError) await reportConfigError(command, error, io, format);
    throw error;
  }
  return report(command, result, values, io, format, { strict: options.strict, maxWarnings });
}

async function reportConfigError(command: string, error: ConfigError, io: CommandIO, format: OutputFormat): Promise<void> {
  const annotations = [configErrorAnnotation(error.file, error.detail, io.cwd)];
  if (format === "github") writeWorkflowCommands(io.stderr, formatGithub(annotations));
  if (format === "sarif") writeJson(io.stdout, formatSarif(annotations));
  appendStepSummary(io, formatStepSummary(`skills ${command}: config error`, annotations));
}

/**
 * Stale files a report names; one line (or annotation) counts the rest. A pull request can commit any number of
 * extra files into the bundle folder, and the first hundred say what to do as well as fifty thousand would.
 */
const STALE_FILES_SHOWN = 100;

/** `build --check` found stale files: an annotation on each of the first few, at its path in the bundle. */
function staleAnnotations(result: CheckResult & Partial<BuildResult>, cwd: string): Annotation[] {
  const stale = result.stale ?? [];
  const outDir = ciPath(result.outDir!, cwd) || "."; // escaped with the rest of the message
  const states = { changed: "differs from", missing: "is missing from", extra: "is not in" };
  const hint = "Run `skills build` and commit the bundle.";
  const annotations: Annotation[] = stale.slice(0, STALE_FILES_SHOWN).map(({ path, state }) => ({
    severity: "error",
    rule: "stale-bundle",
    message: `${outDir} is out of date: ${path} ${states[state]} a fresh build`,
    hint,
    file: ciPath(join(result.outDir!, path), cwd),
  }));
  const left = stale.length - STALE_FILES_SHOWN;
  if (left > 0) annotations.push({ severity: "error", rule: "stale-bundle", message: `${outDir} is out of date: ${withThousands(left)} more ${left === 1 ? "file differs" : "files differ"} from a fresh build (\`--format json\` lists every one)`, hint, file: outDir });
  return annotations;
}

function reportSettings(values: FlagValues, io: CommandIO): { format: OutputFormat; maxWarnings: number | undefined } {
  const format = (values.format ?? (io.env.GITHUB_ACTIONS === "true" ? "github" : "pretty")) as OutputFormat;
  const formats = ["pretty", "json", "github", "sarif"];
  if (!formats.includes(format)) throw new UsageError(`--format must be pretty, json, github or sarif (got "${String(values.format)}").${didYouMean(format, formats)}`);
  return { format, maxWarnings: parseMaxWarnings(values["max-warnings"]) };
}

/** Prints a build's or check's diagnostics and summary in the chosen format; returns the exit code. */
async function report(
  command: "build" | "check",
  result: CheckResult & Partial<BuildResult>,
  values: FlagValues,
  io: CommandIO,
  format: OutputFormat,
  limits: { strict: boolean; maxWarnings: number | undefined },
  since?: readonly Diagnostic[],
): Promise<number> {
  const stale = result.stale ?? [];
  const style = styleFor(io.stderr, io.env);

  if (result.fixes && format !== "json") reportFixes(result.fixes, io, style);
  const annotations = [...diagnosticAnnotations(result.diagnostics, result.config.dir, io.cwd), ...staleAnnotations(result, io.cwd)];
  if (format === "json") {
    writeJson(io.stdout, JSON.stringify(jsonReport(command, result, io.cwd), null, 2));
  } else if (format === "github") {
    writeWorkflowCommands(io.stderr, formatGithub(annotations));
  } else if (format === "sarif") {
    writeJson(io.stdout, formatSarif(annotations));
  } else {
    // In watch mode, after its first build: what is new since the last build, and how much stays as it was.
    const { shown, unchanged, gone } = since ? changedDiagnostics(since, result.diagnostics) : { shown: result.diagnostics, unchanged: 0, gone: 0 };
    const report = formatPretty(shown, style, readSourceLines(shown, result.config.dir, result.verified));
    const perCode = shown.length > COUNTS_PER_CODE_AFTER ? `\n\n${formatCodeCounts(shown, style)}` : "";
    const asBefore = unchanged + gone === 0 ? "" : `${style.dim(`${unchanged} ${unchanged === 1 ? "diagnostic" : "diagnostics"} as before${gone === 0 ? "" : `, ${gone} gone`}.`)}\n`;
    const summary = `${asBefore}${summaryLine(command, result, limits, io.cwd, style)}`;
    write(io.stderr, report ? `${report}${perCode}\n\n${summary}` : summary);
  }
  if (result.suppressionsWritten) write(io.stderr, suppressionsNote(result, io.cwd));
  if (format !== "json" && stale.length > 0) write(io.stderr, staleReport(result as BuildResult, values, io.cwd));
  const passed = result.ok && stale.length === 0;
  // A run with nothing to report adds nothing to the job's page (a workflow may run several).
  if (annotations.length > 0) appendStepSummary(io, formatStepSummary(`skills ${command}: ${passed ? "passed" : "failed"}, ${summaryCounts(result, annotations)}`, annotations));
  return passed ? 0 : 1;
}

/** `--fix` / `--fix-dry-run`: which of the two, if any; with `build --check` only the dry run (`--check` writes nothing). */
function fixSetting(values: FlagValues): boolean | "dry-run" | undefined {
  if (values.fix === true && values["fix-dry-run"] === true) throw new UsageError("--fix and --fix-dry-run do not go together: --fix-dry-run shows what --fix would write");
  if (values.fix === true && values.check === true) throw new UsageError("--fix and --check do not go together: --check writes nothing (--fix-dry-run shows the fixes)");
  return values.fix === true ? true : values["fix-dry-run"] === true ? "dry-run" : undefined;
}

/**
 * What `--fix` did to each file (or, with `--fix-dry-run`, would do) on stderr, and with `--fix-dry-run` the diff on
 * stdout. Every line of skill text is escaped: the diff quotes the files.
 */
function reportFixes(files: readonly FileFixes[], io: CommandIO, style: Style): void {
  const lines: string[] = [];
  for (const file of files) {
    const state = file.notWritten ? `not fixed: ${file.notWritten}` : file.written ? "fixed" : "would be fixed";
    lines.push(`${style.bold(escapeInvisible(file.file))} ${state}`);
    for (const fix of file.fixes) lines.push(`  ${style.dim(`${fix.line}:${fix.column}`)}  ${escapeInvisible(fix.message)}  ${style.dim(`[${fix.code}]`)}`);
  }
  if (lines.length > 0) write(io.stderr, `${lines.join("\n")}\n`);
  const diffs = files.filter((file) => !file.written && !file.notWritten).map((file) => file.diff.split("\n").map((line) => escapeInvisible(line, { keepTabs: true })).join("\n"));
  if (diffs.length > 0) write(io.stdout, diffs.join("\n"));
}

/**
 * `build --watch`: reports every build as `build` would, with what changed and how long it took, until Ctrl-C.
 * Exits 2 when the first build cannot load the config (there is nothing to watch yet), else 0 when stopped.
 */
async function watchAndReport(values: FlagValues, io: CommandIO): Promise<number> {
  if (values.check === true) throw new UsageError("--watch and --check do not go together: --check compares once and writes nothing");
  if (fixSetting(values)) throw new UsageError("--watch and --fix do not go together: run `skills check --fix` once, then watch");
  const { format, maxWarnings } = reportSettings(values, io);
  const strict = values.strict === true;
  const options = { config: values.config as string | undefined, cwd: io.cwd, strict, maxWarnings, outDir: values.out as string | undefined };
  const stop = new AbortController();
  const abort = () => stop.abort();
  process.once("SIGINT", abort).once("SIGTERM", abort);
  let firstError: unknown;
  let builds = 0;
  /** The diagnostics of the last build that had an outcome: a rebuild prints only what is new since. */
  let last: readonly Diagnostic[] | undefined;
  try {
    await watchBuild(
      options,
      async ({ changed, result, error, retryInMs, missingRoots, ms, watching }) => {
        const first = builds++ === 0;
        if (first && !result) {
          firstError = error; // nothing to watch: the CLI reports it as it exits
          return;
        }
        if (changed.length > 0) write(io.stderr, `\nChanged: ${describeChanges(changed, io.cwd)}`);
        if (missingRoots) {
          const roots = missingRoots.map((root) => shownPath(root, io.cwd)).join(", ");
          write(io.stderr, `Waiting for ${roots} to come back (moved or deleted); nothing built, the last good bundle stays.`);
        } else if (result) {
          await report("build", result, values, io, format, { strict, maxWarnings }, format === "pretty" ? last : undefined);
          last = result.diagnostics;
          const parsed = `${result.cache.parsed} of ${result.cache.parsed + result.cache.reused} SKILL.md parsed`;
          write(io.stderr, `Built in ${Math.round(ms)} ms (${parsed})${result.ok ? "" : "; the last good bundle stays"}.`);
        } else {
          const failure = failureMessage(error);
          write(io.stderr, `skills: ${failure ?? `internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`}`);
          const retry = retryInMs === undefined ? "" : ` Trying again in ${retryInMs / 1000} s.`;
          write(io.stderr, `Stopped after ${Math.round(ms)} ms; nothing written, the last good bundle stays.${retry}`);
        }
        if (first) write(io.stderr, `Watching ${watching.folders} ${watching.folders === 1 ? "folder" : "folders"} for changes (Ctrl-C to stop).`);
        if (watching.failed) write(io.stderr, `skills: some folders are not watched: ${escapeInvisible(watching.failed)}`);
      },
      stop.signal,
    );
  } finally {
    process.off("SIGINT", abort).off("SIGTERM", abort);
  }
  if (firstError !== undefined) throw firstError;
  return 0;
}

/**
 * The diagnostics of `now` that `before` did not have (to show), and how many of `now` it had (unchanged) and of its
 * own are gone. A diagnostic is the same when all it says is (its code, severity, place, message and hint).
 */
function changedDiagnostics(before: readonly Diagnostic[], now: readonly Diagnostic[]): { shown: Diagnostic[]; unchanged: number; gone: number } {
  const key = (diagnostic: Diagnostic) => JSON.stringify([diagnostic.code, diagnostic.severity, diagnostic.file, diagnostic.line, diagnostic.column, diagnostic.message, diagnostic.hint]);
  const earlier = new Map<string, number>();
  for (const diagnostic of before) earlier.set(key(diagnostic), (earlier.get(key(diagnostic)) ?? 0) + 1);
  const shown: Diagnostic[] = [];
  let unchanged = 0;
  for (const diagnostic of now) {
    const left = earlier.get(key(diagnostic)) ?? 0;
    if (left === 0) shown.push(diagnostic);
    else {
      earlier.set(key(diagnostic), left - 1);
      unchanged++;
    }
  }
  return { shown, unchanged, gone: before.length - unchanged };
}

/** Changed paths relative to the working folder, the first few by name. */
function describeChanges(paths: readonly string[], cwd: string): string {
  const shown = [...new Set(paths.map((path) => shownPath(path, cwd)))].sort();
  return shown.length > 3 ? `${shown.slice(0, 3).join(", ")} and ${shown.length - 3} more` : shown.join(", ");
}

/** `build --check` found the bundle out of date: which files, how the first prompt differs, and the fix. */
function staleReport(result: BuildResult, values: FlagValues, cwd: string): string {
  const width = result.stale.reduce((widest, { state }) => Math.max(widest, state.length), 0);
  const lines = [`${shownPath(result.outDir, cwd)} is out of date: ${result.stale.length} ${result.stale.length === 1 ? "file differs" : "files differ"} from a fresh build.`];
  for (const { path, state, notFollowed } of result.stale.slice(0, STALE_FILES_SHOWN)) {
    const note = state === "extra" ? " (not written by skillbake; a build will not delete it)" : notFollowed ? ` (${escapeInvisible(notFollowed)})` : "";
    lines.push(`  ${state.padEnd(width)}  ${escapeInvisible(path)}${note}`);
  }
  const left = result.stale.length - STALE_FILES_SHOWN;
  if (left > 0) lines.push(`  … and ${withThousands(left)} more (\`--format json\` lists every one)`);
  // Line by line: the diff's line breaks are its layout and the prompt's tabs are text, but a skill's name or
  // description in the prompt may hold control or bidi characters.
  if (result.staleDiff) lines.push("", ...result.staleDiff.split("\n").map((line) => escapeInvisible(line, { keepTabs: true })));
  const fix = ["skills build", ...(["config", "out"] as const).flatMap((flag) => (typeof values[flag] === "string" ? [`--${flag}`, shellQuote(values[flag])] : []))];
  const extra = result.stale.some(({ state }) => state === "extra");
  lines.push("", `${extra ? "Move the extra files out, then run" : "Run"} \`${fix.join(" ")}\` to update it.`);
  return lines.join("\n");
}

/** A path as the terminal shows it: relative to the working folder, control and bidi characters escaped. */
function shownPath(path: string, cwd: string): string {
  return escapeInvisible(relative(cwd, path) || ".");
}

/** A word as a POSIX shell reads it back. */
function shellQuote(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, "'\\''")}'`;
}

/** `--max-warnings N`: a whole number, or undefined when the flag is absent. */
function parseMaxWarnings(value: FlagValues[string]): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || !/^\d+$/.test(value)) throw new UsageError(`--max-warnings takes a whole number of warnings, e.g. --max-warnings 0 (got "${String(value)}")`);
  return Number(value);
}

/** Runs with more SKILL.md files than this show progress, on a terminal only (CI logs and pipes stay clean). */
const PROGRESS_THRESHOLD = 1000;

function progressOnTty(stream: CommandIO["stderr"]): { update?: (progress: { done: number; total: number }) => void; clear: () => void } {
  if (stream.isTTY !== true) return { clear: () => {} };
  let shown = -1;
  return {
    update({ done, total }) {
      const percent = Math.floor((done * 100) / total);
      if (total <= PROGRESS_THRESHOLD || percent === shown) return;
      shown = percent;
      stream.write(`\r\u001b[Kchecking skills: ${done}/${total} (${percent}%)`);
    },
    clear() {
      if (shown >= 0) stream.write("\r\u001b[K");
    },
  };
}

/** "1 error, 0 warnings (1 agent, 2 skills)" without colour, counting the rows below it (stale bundle files too). */
function summaryCounts(result: CheckResult, annotations: readonly Annotation[]): string {
  return `${formatSummary({ ...countAnnotations(annotations), suppressed: result.suppressed.length }, styleFor({ isTTY: false }, {}))} (${scopeOf(result)})`;
}

/** What `--suppress` or `--prune-suppressions` wrote. */
function suppressionsNote(result: CheckResult, cwd: string): string {
  const files = new Set(result.suppressed.map((diagnostic) => diagnostic.file)).size;
  const findings = result.suppressed.length;
  return `Wrote ${shownPath(result.suppressionsWritten!, cwd)}: ${findings} ${findings === 1 ? "finding" : "findings"} in ${files} ${files === 1 ? "file" : "files"} suppressed.`;
}

function scopeOf(result: CheckResult): string {
  const skills = `${result.skillsChecked} ${result.skillsChecked === 1 ? "skill" : "skills"}`;
  // `skills check PATH…` has an agent of its own making: only the skills count.
  if (result.config.implicit) return skills;
  return `${result.agents.length} ${result.agents.length === 1 ? "agent" : "agents"}, ${skills}`;
}

function summaryLine(
  command: string,
  result: CheckResult & Partial<BuildResult>,
  limits: { strict: boolean; maxWarnings?: number },
  cwd: string,
  style: Style,
): string {
  const counts = formatSummary({ errors: result.errors, warnings: result.warnings, suppressed: result.suppressed.length }, style);
  const scope = scopeOf(result);
  if (!result.ok) {
    const limit = result.errors > 0 ? "" : limits.strict ? " (--strict allows none)" : ` (--max-warnings allows ${limits.maxWarnings})`;
    return `${counts}${limit}; ${command === "build" ? "nothing written" : "check failed"} (${scope})`;
  }
  if (result.written) return `Wrote ${shownPath(result.outDir!, cwd)} (${scope}); ${counts}`;
  if (command === "build" && result.stale?.length === 0) return `Bundle is up to date (${scope}); ${counts}`;
  return `Checked ${scope}; ${counts}`;
}

function jsonReport(command: string, result: CheckResult & Partial<BuildResult>, cwd: string) {
  return {
    command,
    ok: result.ok && (result.stale?.length ?? 0) === 0,
    errors: result.errors,
    warnings: result.warnings,
    suppressed: result.suppressed.length,
    diagnostics: result.diagnostics,
    agents: result.agents.map((agent) => ({ id: agent.id, skills: agent.skills.length, promptCharacters: agent.prompt.length })),
    ...(result.outDir ? { outDir: relative(cwd, result.outDir) || ".", written: result.written, stale: result.stale, staleDiff: result.staleDiff } : {}),
    ...(result.fixes ? { fixes: result.fixes } : {}),
  };
}
