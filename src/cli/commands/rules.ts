import { RULE_CODES, RULES, ruleUrl, SKIP_WORDS, type RuleCode } from "../../compile/rules.js";
import { didYouMean } from "../../compile/suggest.js";
import { UsageError, write, writeJson, type Command } from "./command.js";

/** A code as `skills rules --format json` gives it. */
export interface RuleEntry {
  code: RuleCode;
  severity: string;
  skip: string;
  fixable: boolean;
  url: string;
  description: string;
}

export function ruleEntries(): RuleEntry[] {
  return RULE_CODES.map((code) => {
    const { severity, skip, fixable, description } = RULES[code];
    return { code, severity, skip, fixable: fixable === true, url: ruleUrl(code), description };
  });
}

export const rulesCommand: Command = {
  name: "rules",
  summary: "list every diagnostic code: its default, what it does to the skill, --fix, its docs",
  help: `Usage: skills rules [--format pretty|json]

Lists every diagnostic code with its default severity (change it with \`rules\` in the config), whether
a skill it hits is left out of the agents (skip), whether \`--fix\` fixes it, and when it fires.
Each code's docs, with a bad and a good example, are at its url.

Options:
  --format FORMAT    pretty (default) | json: an array of { code, severity, skip, fixable, url, description }

Examples:
  skills rules
  skills rules --format json | jq -r '.[] | select(.fixable) | .code'`,
  options: { format: { type: "string" } },
  maxPositionals: 0,
  async run(values, _positionals, io) {
    const format = (values.format as string | undefined) ?? "pretty";
    if (format !== "pretty" && format !== "json") throw new UsageError(`--format must be pretty or json (got "${format}").${didYouMean(format, ["pretty", "json"])}`);
    const entries = ruleEntries();
    if (format === "json") {
      writeJson(io.stdout, JSON.stringify(entries, null, 2));
      return 0;
    }
    const width = Math.max(...entries.map((entry) => entry.code.length));
    const lines = [`${"code".padEnd(width)}  default  skip        fix  when`];
    for (const entry of entries) {
      lines.push(`${entry.code.padEnd(width)}  ${entry.severity.padEnd(7)}  ${SKIP_WORDS[RULES[entry.code].skip].padEnd(10)}  ${entry.fixable ? "yes" : "   "}  ${entry.description}`);
    }
    lines.push("", `Each code's docs, with a bad and a good example: ${ruleUrl(RULE_CODES[0]!).replace(/#.*$/, "")}#<code>`);
    write(io.stdout, lines.join("\n"));
    return 0;
  },
};
