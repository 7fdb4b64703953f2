/**
 * Runs the README's five-minute tutorial in a temporary project, step by step, as a new user would. The steps
 * come from the README itself, so the two cannot drift: a fenced block preceded by a marker comment is a step.
 *
 *   <!-- tutorial: run -->            each command line of the block runs in the project; each must exit 0
 *   <!-- tutorial: run, exit 1 -->    ... except the last, which must exit 1
 *   <!-- tutorial: output -->         the block is the last command's output (stdout, then stderr)
 *   <!-- tutorial: file PATH -->      the block is written to PATH in the project
 *   <!-- tutorial: workflow -->       a GitHub Actions workflow: its `npx skills` steps run as under Actions
 */
import { spawn } from "node:child_process";
import { chmod, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { REPO, tempDir } from "./helpers.js";

interface Step {
  kind: "run" | "output" | "file" | "workflow";
  /** `run`: the exit code of the block's last command; `file`: the path. */
  argument?: string;
  text: string;
  /** README line of the marker, to name the step. */
  line: number;
}

function tutorialSteps(readme: string): Step[] {
  const steps: Step[] = [];
  const marker = /<!-- tutorial: (run|output|file|workflow)(?:,? ?(?:exit )?([^ ]+))? -->\n+```[^\n]*\n([\s\S]*?)^```$/gm;
  for (const match of readme.matchAll(marker)) {
    steps.push({ kind: match[1] as Step["kind"], argument: match[2], text: match[3]!, line: readme.slice(0, match.index).split("\n").length });
  }
  return steps;
}

/** The block's commands: one per line, without `#` comments and blank lines. */
function commands(block: string): string[] {
  return block
    .split("\n")
    .map((line) => line.replace(/(^|\s+)#.*$/, "").trim())
    .filter(Boolean);
}

const INSTALL = "npm install --save-dev skillbake";

/**
 * What `npm install --save-dev skillbake` leaves behind, made from this checkout (the test runs offline, before
 * any release): the package linked into node_modules, its `skills` bin, and the devDependency.
 */
async function installFromCheckout(project: string): Promise<void> {
  await mkdir(join(project, "node_modules/.bin"), { recursive: true });
  await symlink(REPO, join(project, "node_modules/skillbake"), "dir");
  const bin = join(project, "node_modules/.bin/skills");
  await writeFile(bin, `#!/bin/sh\nexec node "$(dirname "$0")/../skillbake/dist/cli.js" "$@"\n`);
  await chmod(bin, 0o755);
  const packageJson = JSON.parse(await readFile(join(project, "package.json"), "utf8"));
  packageJson.devDependencies = { skillbake: "^0.1.0" };
  await writeFile(join(project, "package.json"), `${JSON.stringify(packageJson, null, 2)}\n`);
}

interface Run {
  command: string;
  code: number | null;
  output: string;
}

function shell(command: string, cwd: string, env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn("sh", ["-c", command], { cwd, env: { ...baseEnv, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ command, code, output: stdout + stderr }));
  });
}

/** A new user's shell: no colour (output is compared), no CI, and npm without this machine's own settings. */
const baseEnv: Record<string, string> = Object.fromEntries(
  Object.entries({
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NO_COLOR: "1",
    npm_config_userconfig: "/dev/null",
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_offline: "true",
  }).filter((entry): entry is [string, string] => entry[1] !== undefined),
);

const readme = await readFile(join(REPO, "README.md"), "utf8");
const steps = tutorialSteps(readme);

describe("the README tutorial", () => {
  it("has its steps marked: install, scaffold, a mistake and its fix, build, list, a server, CI and a diff", () => {
    const runs = steps.filter((step) => step.kind === "run").flatMap((step) => commands(step.text));
    expect(runs).toEqual(expect.arrayContaining(["npm init -y", INSTALL, "npx skills init", "npx skills check", "npx skills build", "npx skills list", "node server.mjs"]));
    expect(runs.some((command) => command.startsWith("npx skills diff"))).toBe(true);
    expect(steps.filter((step) => step.kind === "workflow")).toHaveLength(1);
  });

  let project = "";
  let last: Run | undefined;
  for (const step of steps) {
    const what = step.kind === "file" ? step.argument : step.kind === "run" ? commands(step.text).join(" && ") : "";
    const title = `README line ${step.line}: ${step.kind} ${what}`.trimEnd();
    it(title, async () => {
      project ||= await tempDir("skillbake-tutorial-");
      switch (step.kind) {
        case "file":
          await mkdir(dirname(join(project, step.argument!)), { recursive: true });
          await writeFile(join(project, step.argument!), step.text);
          break;
        case "run": {
          const list = commands(step.text);
          for (const [index, command] of list.entries()) {
            if (command === INSTALL) {
              await installFromCheckout(project);
              continue;
            }
            last = await shell(command, project, {});
            const expected = index === list.length - 1 && step.argument !== undefined ? Number(step.argument) : 0;
            expect(last.code, `\`${command}\` printed:\n${last.output}`).toBe(expected);
          }
          break;
        }
        case "output":
          expect(last, "an output block follows a run block").toBeDefined();
          expect(last!.output, `the output of \`${last!.command}\``).toBe(step.text);
          break;
        case "workflow": {
          const workflow = parseYaml(step.text) as { jobs: Record<string, { steps: { run?: string }[] }> };
          const skillsSteps = Object.values(workflow.jobs)
            .flatMap((job) => job.steps)
            .flatMap((workflowStep) => (workflowStep.run ? commands(workflowStep.run) : []))
            .filter((command) => command.startsWith("npx skills"));
          expect(skillsSteps.length).toBeGreaterThan(0);
          for (const command of skillsSteps) {
            const run = await shell(command, project, { GITHUB_ACTIONS: "true" });
            expect(run.code, `\`${command}\` printed:\n${run.output}`).toBe(0);
          }
          break;
        }
      }
    });
  }
});
