import { appendFileSync } from "node:fs";
import type { ParseArgsConfig } from "node:util";
import { OutputError } from "../../bundle/emit.js";
import { BundleError } from "../../bundle/served.js";
import { ConfigError } from "../../compile/config.js";
import { describeSystemError, FileSystemError, isSystemError } from "../../compile/fs-error.js";
import { escapeInvisible, escapeWorkflowCommands, escapeWorkflowCommandsInJson } from "../../compile/terminal.js";
import type { Output } from "../output.js";

export interface CommandIO {
  stdout: Output;
  stderr: Output;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

/** Flag values as `util.parseArgs` returns them. */
export type FlagValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** A subcommand of `skills`: its help text, its flags (parsed strictly by the CLI) and what it does. */
export interface Command {
  name: string;
  summary: string;
  /** Full help: usage line, options, examples. */
  help: string;
  options: NonNullable<ParseArgsConfig["options"]>;
  /** Positional arguments allowed, at most. */
  maxPositionals: number;
  /** Returns the exit code. */
  run(values: FlagValues, positionals: string[], io: CommandIO): Promise<number>;
}

/** A mistake in how the command was called: exit 2 with the message and the command's help. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** What the command needs is not installed (an optional peer dependency): exit 2 with the message, which says how to install it. */
export class MissingDependencyError extends Error {
  override name = "MissingDependencyError";
}

/** Writes text for a person, a line break after it. No line of it can act as a GitHub workflow command. */
export function write(stream: Output, text: string): void {
  writeRaw(stream, escapeWorkflowCommands(text));
}

/** Writes a JSON document (`--format json`); its data is unchanged for a JSON parser. */
export function writeJson(stream: Output, json: string): void {
  writeRaw(stream, escapeWorkflowCommandsInJson(json));
}

/** Writes the workflow commands of `--format github`, whose every value `formatGithub` escaped. */
export function writeWorkflowCommands(stream: Output, commands: string): void {
  writeRaw(stream, commands);
}

function writeRaw(stream: Output, text: string): void {
  if (text) stream.write(text.endsWith("\n") ? text : `${text}\n`);
}

/**
 * The one line for a failure that is not a bug: a config that does not load, an outDir skillbake will not
 * replace, a filesystem that refuses (permissions, read-only, full, a path that cannot be). Undefined for a bug.
 */
export function failureMessage(error: unknown): string | undefined {
  if (error instanceof ConfigError || error instanceof OutputError || error instanceof FileSystemError || error instanceof BundleError || error instanceof MissingDependencyError) return error.message;
  return isSystemError(error) ? describeSystemError(error) : undefined;
}

/** Under GitHub Actions, adds to the job's summary page; a failure to do so is one line, not a failed run. */
export function appendStepSummary(io: CommandIO, markdown: string): void {
  const path = io.env.GITHUB_STEP_SUMMARY;
  if (io.env.GITHUB_ACTIONS !== "true" || !path) return;
  try {
    appendFileSync(path, `${markdown}\n\n`);
  } catch (error) {
    write(io.stderr, `skills: cannot append the job summary to ${escapeInvisible(path)}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}
