import type { ParseArgsConfig } from "node:util";

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
