/**
 * The GitHub Actions recipe (examples/github/skills-review.yml) run as GitHub would run it, as far as that
 * is possible here: its shell steps in order with bash -eo pipefail and the runner's variables, the
 * checkouts as folders, `npx skills` resolving to the built CLI, and the comment script against a recorded
 * GitHub client. Only `npm ci` and the setup actions are skipped.
 */
import { spawn } from "node:child_process";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { CLI, REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  id?: string;
  "working-directory"?: string;
  with?: Record<string, string>;
  env?: Record<string, string>;
}

const WORKFLOW_FILE = join(REPO, "examples/github/skills-review.yml");

async function workflowSteps(): Promise<Step[]> {
  const workflow = parse(await readFile(WORKFLOW_FILE, "utf8"));
  expect(Object.keys(workflow.on)).toEqual(["pull_request"]);
  expect(workflow.permissions).toEqual({ contents: "read", "pull-requests": "write" });
  return workflow.jobs.skills.steps;
}

/** The default `location: "absolute"`: base and head must be built in one folder for their prompts to compare. */
const CONFIG = (agents: object) => `import { defineConfig } from "skillbake";\nexport default defineConfig(${JSON.stringify({ agents })});\n`;

interface Workspace {
  root: string;
  temp: string;
  /** The base branch's commit. */
  base: string;
}

/**
 * A pull request's workspace as actions/checkout leaves it: a git clone with the head checked out, whose
 * `origin` holds the base commit; skillbake installed (untracked) as node_modules/.bin/skills.
 */
async function workspace(base: Record<string, string>, head: Record<string, string>): Promise<Workspace> {
  const root = await tempDir("skillbake-workspace-");
  const temp = await tempDir("skillbake-runner-temp-");
  const common = { ".gitignore": "node_modules/\n", "package.json": JSON.stringify({ name: "app", private: true, devDependencies: { skillbake: "*" } }) };
  const git = async (script: string) => {
    const run = await bash(script, root, { GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" });
    expect(run.code, run.output).toBe(0);
    return run.output.trim();
  };
  await git("git init --quiet --initial-branch=main . && git remote add origin .");
  await writeTree(root, { ...common, ...base });
  await git("git add -A && git commit --quiet -m base");
  const baseCommit = await git("git rev-parse HEAD");
  await git("git rm --quiet -r . && git clean --quiet -fdx");
  await writeTree(root, { ...common, ...head });
  await git("git add -A && git commit --quiet -m head && git checkout --quiet --detach");
  await mkdir(join(root, "node_modules/.bin"), { recursive: true });
  await symlink(CLI, join(root, "node_modules/.bin/skills"));
  return { root, temp, base: baseCommit };
}

function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["--noprofile", "--norc", "-eo", "pipefail", "-c", script], { cwd, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, output }));
  });
}

/** Runs the workflow's shell steps up to the comment, with the expressions they use filled in. */
async function runWorkflow(steps: Step[], { root, temp, base }: Workspace): Promise<{ outputs: string; summary: string; log: string }> {
  const expressions: Record<string, string> = { "${{ github.event.pull_request.base.sha }}": base };
  const env = {
    GITHUB_ACTIONS: "true",
    GITHUB_WORKSPACE: root,
    RUNNER_TEMP: temp,
    GITHUB_OUTPUT: join(temp, "github-output"),
    GITHUB_STEP_SUMMARY: join(temp, "step-summary"),
    NO_COLOR: "1",
  };
  await writeFile(env.GITHUB_OUTPUT, "");
  await writeFile(env.GITHUB_STEP_SUMMARY, "");
  let log = "";
  for (const step of steps) {
    if (step.uses || step.run === "npm ci") continue;
    const stepEnv = Object.fromEntries(Object.entries(step.env ?? {}).map(([name, value]) => [name, expressions[value] ?? expect.fail(`unknown expression ${value}`)]));
    const head = await bash("git rev-parse HEAD", root, {});
    const run = await bash(step.run!, join(root, step["working-directory"] ?? "."), { ...env, ...stepEnv });
    expect((await bash("git rev-parse HEAD", root, {})).output, `step "${step.name ?? step.run}" left another commit checked out`).toBe(head.output);
    log += run.output;
    expect(run.code, `step "${step.name ?? step.run}" failed:\n${run.output}`).toBe(0);
  }
  return { outputs: await readFile(env.GITHUB_OUTPUT, "utf8"), summary: await readFile(env.GITHUB_STEP_SUMMARY, "utf8"), log };
}

/** The github-script step's script, run as github-script runs it, against a client that records its calls. */
async function runCommentScript(step: Step, env: { DIFF_FILE: string; CHANGED: string }, existing: { id: number; body: string }[]) {
  const calls: [string, Record<string, unknown>][] = [];
  const record = (name: string) => async (params: Record<string, unknown>) => void calls.push([name, params]);
  const github = {
    rest: { issues: { listComments: "listComments", createComment: record("createComment"), updateComment: record("updateComment") } },
    paginate: async (method: string) => (method === "listComments" ? existing.map((comment) => ({ ...comment, user: { type: "Bot" } })) : []),
  };
  const context = { repo: { owner: "acme", repo: "app" }, issue: { number: 7 } };
  const AsyncFunction = (async () => {}).constructor as new (...args: string[]) => (...values: unknown[]) => Promise<void>;
  const script = new AsyncFunction("require", "github", "context", "process", step.with!.script!);
  await script(createRequire(import.meta.url), github, context, { env });
  return calls;
}

describe("the GitHub Actions recipe", () => {
  const base = {
    "skills.config.ts": CONFIG({ coding: { skills: [{ root: "skills" }] } }),
    "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha reports."),
  };
  const head = {
    "skills.config.ts": CONFIG({ coding: { skills: [{ root: "skills" }] } }),
    "skills/alpha/SKILL.md": skillMd("alpha", "Drafts alpha and omega reports."),
    "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks."),
  };

  it("checks, builds base and head, and posts the markdown diff as one comment, updated on the next push", async () => {
    const steps = await workflowSteps();
    const { root, temp, base: baseCommit } = await workspace(base, head);
    const { outputs, summary } = await runWorkflow(steps, { root, temp, base: baseCommit });
    expect(outputs).toBe("changed=true\n");
    // Built in one folder, the absolute locations agree: only the skills' own changes show.
    expect(summary).not.toContain("location");

    const expected = await runCli(["diff", join(temp, "skills-before"), join(temp, "skills-after"), "--format", "markdown"], { cwd: root });
    expect(summary).toBe(expected.stdout);
    expect(summary).toContain("- Added `beta` (available)");
    expect(summary).toContain("- Changed the description of `alpha`:");

    const comment = steps.find((step) => step.uses?.startsWith("actions/github-script@"))!;
    expect(comment.if).toBe("github.event.pull_request.head.repo.full_name == github.repository");
    expect(comment.env).toEqual({ DIFF_FILE: "${{ runner.temp }}/skills-diff.md", CHANGED: "${{ steps.diff.outputs.changed }}" });
    const env = { DIFF_FILE: join(temp, "skills-diff.md"), CHANGED: "true" };
    const first = await runCommentScript(comment, env, []);
    expect(first).toEqual([["createComment", { owner: "acme", repo: "app", issue_number: 7, body: `<!-- skills-diff -->\n${expected.stdout}` }]]);
    const second = await runCommentScript(comment, { ...env, CHANGED: "false" }, [{ id: 42, body: first[0]![1].body as string }]);
    expect(second).toEqual([["updateComment", { owner: "acme", repo: "app", comment_id: 42, body: `<!-- skills-diff -->\n${expected.stdout}` }]]);
    expect(await runCommentScript(comment, { ...env, CHANGED: "false" }, [])).toEqual([]);
  });

  it("compares with an empty bundle when the base branch has no skills yet, and fails on a stale committed bundle", async () => {
    const steps = await workflowSteps();
    const fresh = await workspace({ "README.md": "no skills yet\n" }, head);
    const { outputs, summary, log } = await runWorkflow(steps, fresh);
    expect(outputs).toBe("changed=true\n");
    expect(log).toContain("::notice::The base branch's skills did not build; comparing with an empty bundle.");
    expect(summary).toContain("| `coding` | new agent, 2 added |");

    const stale = await workspace(base, head);
    expect((await runCli(["build"], { cwd: stale.root })).code).toBe(0);
    await writeTree(stale.root, { "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks twice.") });
    const check = steps.find((step) => step.name === "Check the committed bundle is up to date")!;
    const run = await bash(check.run!, stale.root, { GITHUB_ACTIONS: "true", NO_COLOR: "1" });
    expect(run.code).toBe(1);
    expect(run.output).toContain("Run `skills build` to update it.");
  });

  it("calls only commands and options the CLI has", async () => {
    const scripts = (await workflowSteps()).flatMap((step) => (step.run ? [step.run] : []));
    const invocations = scripts.flatMap((script) => [...script.replace(/\\\n\s*/g, " ").matchAll(/(?:\bnpx |\/\.bin\/)skills"? ([a-z]+)((?: +(?:--[a-z-]+|"[^"]*"|[^\s"|>&;]+))*)/g)]);
    expect(invocations.map((match) => match[1])).toEqual(["check", "build", "build", "build", "diff"]);
    for (const [, command, rest] of invocations) {
      const help = await runCli([command!, "--help"], { cwd: REPO });
      expect(help.code).toBe(0);
      for (const flag of rest!.match(/--[a-z-]+/g) ?? []) expect(help.stdout, `skills ${command} ${flag}`).toContain(flag);
    }
  });
});
