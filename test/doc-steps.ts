/**
 * The examples of the README and docs/ as steps a test runs, so that what a page shows is what the product does.
 * A marker comment before a fenced block makes the block a step; docs/developing.md documents the vocabulary:
 *
 *   <!-- tutorial: run -->              each command line of the block runs in the project; each must exit 0
 *   <!-- tutorial: run, exit N -->      ... except the last, which must exit N
 *   <!-- tutorial: output -->           the block is the last command's output (stdout, then stderr)
 *   <!-- tutorial: session -->          `$ command` lines, each followed by its output: each runs, its output checked
 *   <!-- tutorial: session, exit N -->  ... the last command must exit N (the others 0)
 *   <!-- tutorial: file PATH -->        the block is written to PATH in the project
 *   <!-- tutorial: excerpt PATH -->     the block's lines are lines of the project's file PATH (a generated .d.ts, say)
 *   <!-- tutorial: workflow -->         a GitHub Actions workflow: its `npx skills` steps run as under Actions
 *   <!-- tutorial: not run: REASON -->  a block no reader runs as it stands (a fragment, a long-running server's log)
 *
 * and, without a block of their own (what a reader need not see):
 *
 *   <!-- tutorial: project -->          the steps after it run in a new project (skillbake installed, nothing else)
 *   <!-- tutorial: setup run COMMAND --> a command run in the project, which must exit 0
 *   <!-- tutorial: setup file PATH
 *   TEXT
 *   -->                                 TEXT (with a final newline) written to PATH
 *
 * In outputs, a line that is only `…` stands for any lines, and any other `…` for any text within a line.
 */
import { spawn } from "node:child_process";
import { chmod, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { expect } from "vitest";
import { parse as parseYaml } from "yaml";
import { REPO, tempDir } from "./helpers.js";

export type StepKind = "run" | "output" | "session" | "file" | "excerpt" | "workflow" | "not run" | "project" | "setup run" | "setup file";

/** The kinds that take the fenced block after them; the others stand alone. */
const BLOCK_KINDS: readonly StepKind[] = ["run", "output", "session", "file", "excerpt", "workflow", "not run"];
const HEAD = /^(run|output|session|file|excerpt|workflow|not run|project|setup run|setup file)(?:(?:,? exit |: | )(.+))?$/;

export interface Step {
  kind: StepKind;
  /** `run`/`session`: the exit code of the last command; `file`/`excerpt`/`setup file`: the path; `setup run`: the command; `not run`: why. */
  argument?: string;
  /** The block's text (a setup file's text), its indentation removed. */
  text: string;
  /** Line of the marker in its page, to name the step. */
  line: number;
}

export interface Block {
  /** Line of the opening fence. */
  line: number;
  /** The comment on the last non-blank line before the fence, if any (`<!-- x -->`). */
  marker?: string;
  /** That line, trimmed, whatever it is. */
  previous: string;
}

/** A page as lines, and the fenced block (opening and closing fence, indentation) that starts at `index`, if one does. */
function fenceAt(lines: string[], index: number): { indent: string; end: number } | undefined {
  const open = /^( *)(`{3,})/.exec(lines[index] ?? "");
  if (!open) return undefined;
  const [, indent, fence] = open as unknown as [string, string, string];
  for (let end = index + 1; end < lines.length; end++) if (lines[end] === `${indent}${fence}`) return { indent, end };
  return undefined;
}

/** The page's steps, in order; a marker that is not one of the vocabulary, or lacks its block, throws naming its line. */
export function docSteps(page: string): Step[] {
  const lines = page.split("\n");
  const steps: Step[] = [];
  for (let index = 0; index < lines.length; index++) {
    const marker = /^ *<!-- tutorial: (.*)$/.exec(lines[index]!);
    if (!marker) continue;
    const line = index + 1;
    let head = marker[1]!;
    let text = "";
    if (head.endsWith(" -->")) head = head.slice(0, -4);
    else {
      const close = lines.indexOf("-->", index + 1);
      if (close < 0) throw new Error(`line ${line}: the marker's comment is not closed by a line \`-->\``);
      text = `${lines.slice(index + 1, close).join("\n")}\n`;
      index = close;
    }
    const parsed = HEAD.exec(head.trim());
    if (!parsed) throw new Error(`line ${line}: \`<!-- tutorial: ${head} -->\` is not a marker of test/doc-steps.ts`);
    const kind = parsed[1] as StepKind;
    if (BLOCK_KINDS.includes(kind)) {
      let next = index + 1;
      while (lines[next]?.trim() === "") next++;
      const fence = fenceAt(lines, next);
      if (!fence) throw new Error(`line ${line}: \`${kind}\` needs a fenced block after it`);
      text = lines
        .slice(next + 1, fence.end)
        .map((row) => (row.startsWith(fence.indent) ? row.slice(fence.indent.length) : row.trimStart()))
        .join("\n");
      text = text === "" ? "" : `${text}\n`;
      index = fence.end;
    }
    steps.push({ kind, argument: parsed[2]?.trim(), text, line });
  }
  return steps;
}

/** Every fenced block of the page, with the comment just before it. */
export function fencedBlocks(page: string): Block[] {
  const lines = page.split("\n");
  const blocks: Block[] = [];
  for (let index = 0; index < lines.length; index++) {
    const fence = fenceAt(lines, index);
    if (!fence) continue;
    let previous = index - 1;
    while (previous >= 0 && lines[previous]!.trim() === "") previous--;
    const comment = /^ *(<!-- .* -->)$/.exec(lines[previous] ?? "")?.[1];
    blocks.push({ line: index + 1, ...(comment ? { marker: comment } : {}), previous: (lines[previous] ?? "").trim() });
    index = fence.end;
  }
  return blocks;
}

/** The block's commands: one per line, without `#` comments and blank lines. */
export function commands(block: string): string[] {
  return block
    .split("\n")
    .map((line) => line.replace(/(^|\s+)#.*$/, "").trim())
    .filter(Boolean);
}

export const INSTALL = "npm install --save-dev skillbake";
const INSTALL_PACKAGES = /^npm install --save-dev ((?:@?[a-z0-9][\w./-]*(?: |$))+)$/;

/**
 * What `npm install --save-dev skillbake` leaves behind, made from this checkout (the test runs offline, before
 * any release): the package linked into node_modules, its `skills` bin, and the devDependency. Other packages
 * (`vite`, `@anthropic-ai/sdk` …) are linked from this checkout's node_modules, where its tests have them.
 */
export async function installFromCheckout(project: string, packages: readonly string[] = ["skillbake"]): Promise<void> {
  await mkdir(join(project, "node_modules/.bin"), { recursive: true });
  const packageJson = JSON.parse(await readFile(join(project, "package.json"), "utf8"));
  for (const name of packages) {
    const source = name === "skillbake" ? REPO : join(REPO, "node_modules", name);
    await mkdir(dirname(join(project, "node_modules", name)), { recursive: true });
    await symlink(source, join(project, "node_modules", name), "dir");
    const manifest = JSON.parse(await readFile(join(source, "package.json"), "utf8")) as { version: string; bin?: string | Record<string, string> };
    const bins = typeof manifest.bin === "string" ? { [name.split("/").pop()!]: manifest.bin } : (manifest.bin ?? {});
    for (const [bin, path] of Object.entries(bins)) {
      await writeFile(join(project, "node_modules/.bin", bin), `#!/bin/sh\nexec node "$(dirname "$0")/../${name}/${path.replace(/^\.\//, "")}" "$@"\n`);
      await chmod(join(project, "node_modules/.bin", bin), 0o755);
    }
    packageJson.devDependencies = { ...packageJson.devDependencies, [name]: `^${manifest.version}` };
  }
  await writeFile(join(project, "package.json"), `${JSON.stringify(packageJson, null, 2)}\n`);
}

export interface Run {
  command: string;
  code: number | null;
  output: string;
}

/**
 * A folder to run a page's steps in, with a home folder of its own beside it (so `~/skills` is the project's
 * business, not this machine's), the project's node_modules/.bin on PATH (so `skills` is the installed one).
 */
export class Project {
  constructor(
    readonly dir: string,
    readonly home: string,
  ) {}

  static async create(): Promise<Project> {
    const base = await tempDir("skillbake-docs-");
    const project = new Project(join(base, "project"), join(base, "home"));
    await mkdir(project.dir);
    await mkdir(project.home);
    return project;
  }

  /** A project as a reader of a docs page has one: a package.json and skillbake installed. */
  static async installed(): Promise<Project> {
    const project = await Project.create();
    await writeFile(join(project.dir, "package.json"), `${JSON.stringify({ name: "app", version: "1.0.0", private: true, type: "module" }, null, 2)}\n`);
    await installFromCheckout(project.dir);
    return project;
  }

  async write(path: string, text: string): Promise<void> {
    await mkdir(dirname(join(this.dir, path)), { recursive: true });
    await writeFile(join(this.dir, path), text);
  }

  shell(command: string, env: Record<string, string> = {}): Promise<Run> {
    const environment = { ...baseEnv, HOME: this.home, PATH: `${join(this.dir, "node_modules/.bin")}:${process.env.PATH}`, ...env };
    return new Promise((resolve, reject) => {
      const child = spawn("sh", ["-c", command], { cwd: this.dir, env: environment, stdio: ["ignore", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
      child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
      child.on("error", reject);
      child.on("close", (code) => resolve({ command, code, output: stdout + stderr }));
    });
  }
}

/** A new user's shell: no colour (output is compared), no CI, and npm without this machine's own settings. */
const baseEnv: Record<string, string> = {
  NO_COLOR: "1",
  npm_config_userconfig: "/dev/null",
  npm_config_update_notifier: "false",
  npm_config_fund: "false",
  npm_config_offline: "true",
  npm_config_cache: join(process.env.HOME ?? "/tmp", ".npm"),
};

/** `expected` as a whole-text pattern: a line that is only `…` stands for any lines, any other `…` for any text within a line. */
export function outputPattern(expected: string): RegExp {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const lines = expected.split("\n").map((line) => (line === "…" ? "[\\s\\S]*?" : line.split("…").map(escape).join("[^\\n]*")));
  return new RegExp(`^${lines.join("\\n")}$`);
}

/**
 * Checks `actual` against the page's `expected`, exactly where it has no `…`. A final line break is not compared:
 * a page cannot show whether output ends with one (a prompt file, printed with `cat`, has none).
 */
export function expectOutput(actual: string, expected: string, what: string): void {
  const [shown, printed] = [expected, actual].map((text) => text.replace(/\n$/, ""));
  if (shown!.includes("…") && outputPattern(shown!).test(printed!)) return;
  expect(printed, what).toBe(shown);
}

/** The `$ command` lines of a session block and the output shown after each. */
export function sessionCommands(block: string): { command: string; output: string }[] {
  const parts = block.split(/^\$ /m).slice(1);
  return parts.map((part) => {
    const [command, ...output] = part.split("\n");
    return { command: command!, output: output.join("\n") };
  });
}

/** Runs one step in `project`; returns the last command run, for an `output` step after it. */
export async function runStep(step: Step, project: Project, last: Run | undefined): Promise<Run | undefined> {
  switch (step.kind) {
    case "file":
    case "setup file":
      await project.write(step.argument!, step.text);
      return last;
    case "excerpt": {
      // Compared line by line, each without its indentation: an excerpt may be indented as its place on the page needs.
      const unindent = (text: string) => text.split("\n").map((row) => row.trimStart()).join("\n");
      const file = await readFile(join(project.dir, step.argument!), "utf8");
      expect(unindent(file), `${step.argument} holds the excerpt`).toContain(unindent(step.text).trimEnd());
      return last;
    }
    case "run":
    case "setup run": {
      const list = step.kind === "run" ? commands(step.text) : [step.argument!];
      for (const [index, command] of list.entries()) {
        const install = INSTALL_PACKAGES.exec(command);
        if (install) {
          await installFromCheckout(project.dir, install[1]!.trim().split(" "));
          continue;
        }
        last = await project.shell(command);
        const expected = step.kind === "run" && index === list.length - 1 && step.argument !== undefined ? Number(step.argument) : 0;
        expect(last.code, `\`${command}\` printed:\n${last.output}`).toBe(expected);
      }
      return last;
    }
    case "output":
      expect(last, "an output block follows a run block").toBeDefined();
      expectOutput(last!.output, step.text, `the output of \`${last!.command}\``);
      return last;
    case "session": {
      const list = sessionCommands(step.text);
      expect(list.length, "a session block has `$ command` lines").toBeGreaterThan(0);
      for (const [index, { command, output }] of list.entries()) {
        last = await project.shell(command);
        const expected = index === list.length - 1 && step.argument !== undefined ? Number(step.argument) : 0;
        expect(last.code, `\`${command}\` printed:\n${last.output}`).toBe(expected);
        expectOutput(last.output, output, `the output of \`${command}\``);
      }
      return last;
    }
    case "workflow": {
      const workflow = parseYaml(step.text) as { jobs: Record<string, { steps: { run?: string }[] }> };
      const skillsSteps = Object.values(workflow.jobs)
        .flatMap((job) => job.steps)
        .flatMap((workflowStep) => (workflowStep.run ? commands(workflowStep.run) : []))
        .filter((command) => command.startsWith("npx skills"));
      expect(skillsSteps.length).toBeGreaterThan(0);
      for (const command of skillsSteps) {
        const run = await project.shell(command, { GITHUB_ACTIONS: "true" });
        expect(run.code, `\`${command}\` printed:\n${run.output}`).toBe(0);
      }
      return last;
    }
    case "not run":
      expect(step.argument, "a block that is not run says why").toBeTruthy();
      return last;
    case "project":
      return undefined;
  }
}
