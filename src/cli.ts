import { parseArgs } from "node:util";
import { ConfigError } from "./config.js";
import { OutputError } from "./emit.js";
import { buildCommand, checkCommand } from "./commands/build.js";
import { UsageError, write, type Command, type CommandIO } from "./commands/command.js";

/** Every subcommand, in the order `skills --help` lists them. */
const COMMANDS: readonly Command[] = [buildCommand, checkCommand];

function usage(): string {
  const width = Math.max(...COMMANDS.map((command) => command.name.length));
  return `Usage: skills <command> [options]

Commands:
${COMMANDS.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`).join("\n")}

Run \`skills <command> --help\` for a command's options and examples.
Exit codes: 0 success, 1 errors (or a stale bundle with --check), 2 usage or config error.`;
}

/** The whole CLI: returns the exit code. Library errors for bad input become messages, never stack traces. */
export async function main(argv: string[], io: CommandIO): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === "-h" || name === "--help" || name === "help") {
    write(name === undefined ? io.stderr : io.stdout, usage());
    return name === undefined ? 2 : 0;
  }
  const command = COMMANDS.find((candidate) => candidate.name === name);
  if (!command) {
    write(io.stderr, `skills: unknown command "${name}"\n\n${usage()}`);
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
    if (error instanceof UsageError || String((error as { code?: unknown }).code).startsWith("ERR_PARSE_ARGS")) {
      write(io.stderr, `skills ${command.name}: ${(error as Error).message}\n\n${command.help}`);
      return 2;
    }
    if (error instanceof ConfigError || error instanceof OutputError) {
      write(io.stderr, `skills: ${error.message}`);
      return 2;
    }
    throw error;
  }
}
