import type { ParseArgsConfig } from "node:util";
import { OutputError } from "../../bundle/emit.js";
import { ConfigError } from "../../compile/config.js";
import { describeSystemError, FileSystemError, isSystemError } from "../../compile/fs-error.js";

export interface CommandIO {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
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

export function write(stream: NodeJS.WritableStream, text: string): void {
  if (text) stream.write(text.endsWith("\n") ? text : `${text}\n`);
}

/**
 * The one line for a failure that is not a bug: a config that does not load, an outDir skillbake will not
 * replace, a filesystem that refuses (permissions, read-only, full, a path that cannot be). Undefined for a bug.
 */
export function failureMessage(error: unknown): string | undefined {
  if (error instanceof ConfigError || error instanceof OutputError || error instanceof FileSystemError) return error.message;
  return isSystemError(error) ? describeSystemError(error) : undefined;
}
