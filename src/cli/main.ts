import { parseArgs } from "node:util";
import { buildCommand, checkCommand } from "./commands/build.js";
import { failureMessage, UsageError, write, type Command, type CommandIO } from "./commands/command.js";
import { diffCommand } from "./commands/diff.js";
import { initCommand } from "./commands/init.js";
import { listCommand } from "./commands/list.js";
import { rulesCommand } from "./commands/rules.js";
import { schemaCommand } from "./commands/schema.js";
import { serveCommand } from "./commands/serve.js";
import { didYouMean } from "../compile/suggest.js";
import { PACKAGE_VERSION } from "../compile/version.js";

/** Every subcommand, in the order `skills --help` lists them. */
const COMMANDS: readonly Command[] = [initCommand, buildCommand, checkCommand, rulesCommand, listCommand, diffCommand, serveCommand, schemaCommand];

function usage(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  return `Usage: skills <command> [options]

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`).join("\n")}

Run \`skills <command> --help\` for a command's options and examples; \`skills --version\` prints the version.
Exit codes: 0 success, 1 errors (or a stale bundle with --check), 2 usage or config error.`;
}

/** The whole CLI: returns the exit code. Library errors for bad input become messages, never stack traces. */
export async function main(argv: string[], io: CommandIO): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === "-h" || name === "--help") {
    write(name === undefined ? io.stderr : io.stdout, usage());
    return name === undefined ? 2 : 0;
  }
  if (name === "-v" || name === "--version") {
    write(io.stdout, PACKAGE_VERSION);
    return 0;
  }
  if (name === "help") return help(args[0], io);
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (!command) {
    const names = COMMANDS.map((candidate) => candidate.name);
    write(io.stderr, `skills: unknown command "${name}".${didYouMean(name, names)}\n\n${usage()}`);
    return 2;
  }
  try {
    if (args.includes("--help") || args.includes("-h")) {
      write(io.stdout, command.help);
      return 0;
    }
    const { values, positionals } = parseArgs({ args, options: command.options, strict: true, allowPositionals: true });
    if (positionals.length > command.maxPositionals) throw new UsageError(`unexpected argument "${positionals[command.maxPositionals]}"`);
    return await command.run(values, positionals, io);
  } catch (error) {
    const usageMessage = usageErrorMessage(error, command);
    if (usageMessage !== undefined) {
      write(io.stderr, `skills ${command.name}: ${usageMessage}\nRun \`skills ${command.name} --help\` for its options and examples.`);
      return 2;
    }
    const failure = failureMessage(error);
    if (failure !== undefined) {
      write(io.stderr, `skills: ${failure}`);
      return 2;
    }
    throw error;
  }
}

/** `skills help [command]`. */
function help(name: string | undefined, io: CommandIO): number {
  if (name === undefined) {
    write(io.stdout, usage());
    return 0;
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (command) {
    write(io.stdout, command.help);
    return 0;
  }
  write(io.stderr, `skills: unknown command "${name}".${didYouMean(name, COMMANDS.map((candidate) => candidate.name))}\n\n${usage()}`);
  return 2;
}

/** The message for a mistake in how a command was called, or undefined when `error` is something else. */
function usageErrorMessage(error: unknown, command: Command): string | undefined {
  if (error instanceof UsageError) return error.message;
  const code = String((error as { code?: unknown }).code);
  if (!code.startsWith("ERR_PARSE_ARGS")) return undefined;
  const message = (error as Error).message;
  const unknown = code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" ? /^Unknown option '([^']+)'/.exec(message)?.[1] : undefined;
  if (unknown === undefined) return message;
  const flags = ["--help", ...Object.keys(command.options).map((option) => `--${option}`)];
  const flag = unknown.split("=")[0]!;
  return `unknown option ${flag}.${didYouMean(flag, flags, (text) => text)}`;
}
