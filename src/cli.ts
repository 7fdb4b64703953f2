import { parseArgs, type ParseArgsConfig } from "node:util";
import { relative } from "node:path";
import { build, check, type BuildResult, type CheckResult } from "./api.js";
import { ConfigError } from "./config.js";
import { OutputError } from "./emit.js";
import { formatGithub, formatPretty, formatSummary, styleFor, type OutputFormat } from "./report.js";

const USAGE = `Usage: skills <command> [options]

Commands:
  build    compile skills.config.ts and write the bundle (default outDir dist/skills)
  check    everything build does, without writing

Options:
  --config FILE      config file (default: skills.config.{ts,mts,js,mjs,json} in the current folder)
  --out DIR          write the bundle here instead of the config's outDir (build)
  --check            compare the bundle on disk with a fresh build; write nothing (build)
  --strict           warnings fail the run too
  --format FORMAT    pretty | json | github (default: github when GITHUB_ACTIONS=true, else pretty)
  -h, --help         show this help

Exit codes: 0 success, 1 errors (or a stale bundle with --check), 2 usage or config error.`;

const OPTIONS = {
  config: { type: "string" },
  out: { type: "string" },
  check: { type: "boolean" },
  strict: { type: "boolean" },
  format: { type: "string" },
  help: { type: "boolean", short: "h" },
} satisfies ParseArgsConfig["options"];

class UsageError extends Error {}

export async function main(argv: string[], io: { stdout: NodeJS.WriteStream; stderr: NodeJS.WriteStream; env: NodeJS.ProcessEnv; cwd: string }): Promise<number> {
  const style = styleFor(io.stderr, io.env);
  const print = (stream: NodeJS.WriteStream, text: string) => {
    if (text) stream.write(text.endsWith("\n") ? text : `${text}\n`);
  };
  try {
    const [command, ...rest] = argv;
    if (command === undefined || command === "-h" || command === "--help" || command === "help") {
      print(io.stdout, USAGE);
      return command === undefined ? 2 : 0;
    }
    if (command !== "build" && command !== "check") throw new UsageError(`unknown command "${command}"`);
    const { values, positionals } = parseArgs({ args: rest, options: OPTIONS, strict: true, allowPositionals: true });
    if (values.help) {
      print(io.stdout, USAGE);
      return 0;
    }
    if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0]}"`);
    if (command === "check" && (values.out !== undefined || values.check)) throw new UsageError(`${values.out !== undefined ? "--out" : "--check"} belongs to \`skills build\``);
    const format = (values.format ?? (io.env.GITHUB_ACTIONS === "true" ? "github" : "pretty")) as OutputFormat;
    if (!["pretty", "json", "github"].includes(format)) throw new UsageError(`--format must be pretty, json or github (got "${format}")`);

    const options = { config: values.config, cwd: io.cwd, strict: values.strict ?? false };
    const result = command === "build" ? await build({ ...options, outDir: values.out, check: values.check ?? false }) : await check(options);
    const stale: string[] = "stale" in result ? (result as BuildResult).stale : [];

    if (format === "json") {
      print(io.stdout, JSON.stringify(jsonReport(command, result, io.cwd), null, 2));
    } else {
      print(io.stderr, format === "github" ? formatGithub(result.diagnostics) : formatPretty(result.diagnostics, style));
      if (format === "pretty") print(io.stderr, summaryLine(command, result, io.cwd, style));
      for (const file of stale) print(io.stderr, `stale: ${file}`);
      if (stale.length > 0) print(io.stderr, `The bundle is out of date; run \`skills build\` to update it.`);
    }
    return result.ok && stale.length === 0 ? 0 : 1;
  } catch (error) {
    if (error instanceof UsageError || (error as { code?: string }).code?.startsWith("ERR_PARSE_ARGS")) {
      print(io.stderr, `skills: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    if (error instanceof ConfigError || error instanceof OutputError) {
      print(io.stderr, `skills: ${error.message}`);
      return 2;
    }
    throw error;
  }
}

function summaryLine(command: string, result: CheckResult & { outDir?: string; written?: boolean; stale?: string[] }, cwd: string, style: ReturnType<typeof styleFor>): string {
  const skills = new Set(result.agents.flatMap((agent) => agent.skills.map((skill) => skill.file))).size;
  const counts = formatSummary(result.diagnostics, style);
  const scope = `${result.agents.length} ${result.agents.length === 1 ? "agent" : "agents"}, ${skills} ${skills === 1 ? "skill" : "skills"}`;
  if (!result.ok) return `${counts}; ${command === "build" ? "nothing written" : "check failed"} (${scope})`;
  if (result.written) return `Wrote ${relative(cwd, result.outDir!) || "."} (${scope}); ${counts}`;
  if (result.stale?.length === 0 && command === "build") return `Bundle is up to date (${scope}); ${counts}`;
  return `Checked ${scope}; ${counts}`;
}

function jsonReport(command: string, result: CheckResult & { outDir?: string; written?: boolean; stale?: string[] }, cwd: string) {
  return {
    command,
    ok: result.ok && (result.stale?.length ?? 0) === 0,
    errors: result.errors,
    warnings: result.warnings,
    diagnostics: result.diagnostics,
    agents: result.agents.map((agent) => ({ id: agent.id, skills: agent.skills.length, promptCharacters: agent.prompt.length })),
    ...(result.outDir ? { outDir: relative(cwd, result.outDir) || ".", written: result.written, stale: result.stale } : {}),
  };
}
