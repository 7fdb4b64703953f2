/**
 * The repository's GitHub Action (action.yml) run as the runner runs a composite action, as far as that is possible
 * here: each `run` step in order with bash, its `env` expressions filled in from the inputs, the pull-request event
 * and earlier steps' outputs, the runner's variables (a fresh GITHUB_OUTPUT per step, GITHUB_ENV carried to later
 * steps, one GITHUB_STEP_SUMMARY), the checkout as a git clone with skillbake installed as node_modules/.bin/skills,
 * and the REST API's comment endpoints as a local stub server. `uses` steps are not run; their `if` is evaluated.
 */
import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { CLI, REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

interface Step {
  id?: string;
  uses?: string;
  run?: string;
  if?: string;
  shell?: string;
  "working-directory"?: string;
  with?: Record<string, string>;
  env?: Record<string, string>;
}

interface Action {
  inputs: Record<string, { default?: string }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: Step[] };
}

const action = parse(await readFile(join(REPO, "action.yml"), "utf8")) as Action;

/** A comment as the REST API returns it. */
interface Comment {
  id: number;
  body: string;
  user: { type: string };
}

/** The REST API's issue-comment endpoints for acme/app#7, in memory, 2 comments a page; every call recorded. */
function commentApi() {
  const comments: Comment[] = [];
  const calls: string[] = [];
  let next = 100;
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    let text = "";
    for await (const chunk of request) text += chunk;
    const url = new URL(request.url!, "http://stub");
    calls.push(`${request.method} ${url.pathname}${url.search}`);
    const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      response.writeHead(status, { "content-type": "application/json", ...headers });
      response.end(JSON.stringify(body));
    };
    if (request.headers.authorization !== "Bearer secret-token") return reply(401, { message: "Bad credentials" });
    if (request.method === "GET" && url.pathname === "/repos/acme/app/issues/7/comments") {
      const page = Number(url.searchParams.get("page") ?? "1");
      const more = comments.length > page * 2;
      const link: Record<string, string> = more ? { link: `<http://${request.headers.host}/repos/acme/app/issues/7/comments?per_page=100&page=${page + 1}>; rel="next"` } : {};
      return reply(200, comments.slice((page - 1) * 2, page * 2), link);
    }
    if (request.method === "POST" && url.pathname === "/repos/acme/app/issues/7/comments") {
      const comment = { id: next++, body: JSON.parse(text).body, user: { type: "Bot" } };
      comments.push(comment);
      return reply(201, comment);
    }
    const edit = /^\/repos\/acme\/app\/issues\/comments\/(\d+)$/.exec(url.pathname);
    const target = edit && comments.find((comment) => comment.id === Number(edit[1]));
    if (request.method === "PATCH" && target) {
      target.body = JSON.parse(text).body;
      return reply(200, target);
    }
    reply(404, { message: "Not Found" });
  });
  return { server, comments, calls };
}

const api = commentApi();
let apiUrl = "";
beforeAll(async () => {
  await new Promise<void>((resolve) => api.server.listen(0, "127.0.0.1", resolve));
  apiUrl = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => api.server.close(() => resolve())));

const CONFIG = (agents: object) => `import { defineConfig } from "skillbake";\nexport default defineConfig(${JSON.stringify({ location: "relative", agents })});\n`;

interface Workspace {
  root: string;
  temp: string;
  base: string;
}

/**
 * A pull request's workspace as actions/checkout leaves it: a clone with the head checked out, whose `origin`
 * holds the base commit; skillbake installed (untracked) as node_modules/.bin/skills, with `npm ci` done.
 */
async function workspace(base: Record<string, string>, head: Record<string, string>, { commitBundle = false } = {}): Promise<Workspace> {
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
  await mkdir(join(root, "node_modules/.bin"), { recursive: true });
  await symlink(CLI, join(root, "node_modules/.bin/skills"));
  await symlink(REPO, join(root, "node_modules/skillbake")); // what the config imports
  if (commitBundle) expect((await runCli(["build"], { cwd: root })).code).toBe(0);
  await git("git add -A && git commit --quiet --allow-empty -m head && git checkout --quiet --detach");
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

/** `NAME=value` lines, as the runner reads GITHUB_OUTPUT and GITHUB_ENV. */
function keyValues(text: string): Record<string, string> {
  return Object.fromEntries(text.split("\n").filter(Boolean).map((line) => [line.slice(0, line.indexOf("=")), line.slice(line.indexOf("=") + 1)]));
}

interface Run {
  /** The action's outputs. */
  outputs: Record<string, string>;
  summary: string;
  log: string;
  /** Each step's exit code, by id. */
  codes: Record<string, number | null>;
  /** The `uses` steps whose `if` held, with their inputs. */
  used: { uses: string; with: Record<string, string> }[];
}

/** Runs the action's steps for pull request #7 of acme/app (head from `headRepository`), with `inputs`. */
async function runAction({ root, temp, base }: Workspace, inputs: Record<string, string> = {}, headRepository = "acme/app"): Promise<Run> {
  const event = { pull_request: { number: 7, base: { sha: base }, head: { repo: { full_name: headRepository } } } };
  const values: Record<string, unknown> = { inputs: { ...Object.fromEntries(Object.entries(action.inputs).map(([name, input]) => [name, input.default ?? ""])), "github-token": "secret-token", ...inputs }, github: { token: "secret-token", event }, steps: {} };
  const lookup = (path: string): string => String(path.split(".").reduce<unknown>((value, key) => (value as Record<string, unknown> | undefined)?.[key], values) ?? "");
  const fill = (text: string) => text.replace(/\$\{\{\s*([\w.-]+)\s*\}\}/g, (_, path: string) => lookup(path));
  const holds = (condition: string) => condition.split("&&").every((part) => {
    const [, left, op, right] = /^\s*([\w.-]+)\s*(==|!=)\s*'([^']*)'\s*$/.exec(part) ?? expect.fail(`cannot evaluate ${part}`);
    return (lookup(left!) === right) === (op === "==");
  });
  const summaryFile = join(temp, "step-summary");
  const envFile = join(temp, "github-env");
  await writeFile(summaryFile, "");
  await writeFile(envFile, "");
  const runner = { GITHUB_ACTIONS: "true", GITHUB_WORKSPACE: root, RUNNER_TEMP: temp, GITHUB_ACTION_PATH: REPO, GITHUB_STEP_SUMMARY: summaryFile, GITHUB_ENV: envFile, GITHUB_REPOSITORY: "acme/app", GITHUB_API_URL: apiUrl, GITHUB_SERVER_URL: "https://github.com", GITHUB_RUN_ID: "42", NO_COLOR: "1" };
  const run: Run = { outputs: {}, summary: "", log: "", codes: {}, used: [] };
  for (const step of action.runs.steps) {
    if (step.uses) {
      if (!step.if || holds(step.if)) run.used.push({ uses: step.uses, with: Object.fromEntries(Object.entries(step.with ?? {}).map(([name, value]) => [name, fill(value)])) });
      continue;
    }
    expect(step.shell).toBe("bash");
    const outputFile = join(temp, `output-${step.id}`);
    await writeFile(outputFile, "");
    const stepEnv = Object.fromEntries(Object.entries(step.env ?? {}).map(([name, value]) => [name, fill(value)]));
    const head = await bash("git rev-parse HEAD", root, {});
    const result = await bash(step.run!, join(root, fill(step["working-directory"] ?? ".")), { ...runner, ...keyValues(await readFile(envFile, "utf8")), ...stepEnv, GITHUB_OUTPUT: outputFile });
    expect((await bash("git rev-parse HEAD", root, {})).output, `step ${step.id} left another commit checked out`).toBe(head.output);
    run.log += result.output;
    run.codes[step.id!] = result.code;
    (values.steps as Record<string, unknown>)[step.id!] = { outputs: keyValues(await readFile(outputFile, "utf8")) };
    if (result.code !== 0 && step.id !== "verdict") expect.fail(`step ${step.id} failed:\n${result.output}`);
  }
  run.outputs = Object.fromEntries(Object.entries(action.outputs).map(([name, output]) => [name, fill(output.value)]));
  run.summary = await readFile(summaryFile, "utf8");
  return run;
}

describe("the GitHub Action", () => {
  const skills = (alphaDescription: string) => ({
    "skills.config.ts": CONFIG({ coding: { skills: [{ root: "skills" }], budget: 700 }, chat: { skills: [{ root: "skills", available: ["alpha"] }] } }),
    "skills/alpha/SKILL.md": skillMd("alpha", alphaDescription),
    "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks."),
  });
  const base = skills("Drafts alpha reports.");
  // A longer description pushes beta out of the coding agent's catalogue: the comment must name it.
  const head = skills("Drafts alpha reports, and many more reports of every kind, at great length, for everyone who asks.");

  it("checks, compares with the base branch built in a worktree, and keeps one comment that names a skill the budget dropped", { timeout: 180_000 }, async () => {
    const pr = await workspace(base, head);
    api.comments.splice(0, api.comments.length, { id: 1, body: "LGTM", user: { type: "User" } }, { id: 2, body: "<!-- skillbake review -->\nby a person", user: { type: "User" } });
    api.calls.length = 0;
    const first = await runAction(pr);
    expect(first.codes.verdict).toBe(0);
    expect(first.outputs).toEqual({ errors: "0", warnings: "1", changed: "true", "changed-agents": "chat,coding" });
    expect(first.log).toMatch(/^::warning file=skills\.config\.ts.*title=budget-exceeded::/m); // annotated
    expect(first.used).toEqual([]); // no SARIF upload unless asked
    const diff = await readFile(join(pr.temp, "skillbake-review/diff.md"), "utf8");
    expect(diff).toContain("- Dropped `beta` from the catalogue: over the budget");
    expect(first.summary).toContain(diff); // the job summary has the comparison, whole
    expect(first.summary).toContain("### skills check\\: passed");
    expect(api.calls).toEqual(["GET /repos/acme/app/issues/7/comments?per_page=100", "POST /repos/acme/app/issues/7/comments"]);
    expect(api.comments.at(-1)!.body).toBe(`<!-- skillbake review -->\n${diff}`);

    // The next push (the change undone) updates that comment, found on the second page, and posts no other.
    api.calls.length = 0;
    const undone = await workspace(base, base);
    const second = await runAction(undone);
    expect(second.outputs.changed).toBe("false");
    expect(api.calls).toEqual([
      "GET /repos/acme/app/issues/7/comments?per_page=100",
      "GET /repos/acme/app/issues/7/comments?per_page=100&page=2",
      "PATCH /repos/acme/app/issues/comments/100",
    ]);
    expect(api.comments.map((comment) => comment.id)).toEqual([1, 2, 100]);
    expect(api.comments[2]!.body).toContain("no changes (2 agents)");
  });

  it("compares with an empty bundle when the base has no skills yet; a stale committed bundle fails the job after the comment", { timeout: 180_000 }, async () => {
    api.comments.length = 0;
    const fresh = await runAction(await workspace({ "README.md": "no skills yet\n" }, head));
    expect(fresh.log).toContain("::notice title=skillbake::The base branch's skills did not build; comparing with an empty bundle.");
    expect(fresh.summary).toContain("| `coding` | new agent, 2 added |");

    api.comments.length = 0;
    const stale = await workspace(base, head, { commitBundle: true });
    await writeTree(stale.root, { "skills/beta/SKILL.md": skillMd("beta", "Runs beta checks twice.") });
    await bash("git commit --quiet -am 'edit without rebuilding'", stale.root, { GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.com", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.com" });
    const run = await runAction(stale);
    expect(run.log).toContain("Run `skills build` to update it.");
    expect(api.comments).toHaveLength(1); // posted all the same
    expect(run.codes.verdict).toBe(1);
  });

  it("past a comment's limit, the comment says so and links the job summary, which holds the rest", { timeout: 180_000 }, async () => {
    const many = (description: string) => ({
      "skills.config.ts": CONFIG({ coding: { skills: [{ root: "skills" }] } }),
      ...Object.fromEntries(Array.from({ length: 600 }, (_, index) => [`skills/skill-${index}/SKILL.md`, skillMd(`skill-${index}`, `${description} ${"x".repeat(150)}`)])),
    });
    api.comments.length = 0;
    const run = await runAction(await workspace(many("Drafts."), many("Drafts better.")));
    const body = api.comments[0]!.body;
    expect(body.length).toBeLessThanOrEqual(65_536);
    expect(body.trimEnd().split("\n").at(-1)).toMatch(/^\*\*Cut short at 65,000 characters: [\d,]+ more lines left out; the job summary has the rest: https:\/\/github\.com\/acme\/app\/actions\/runs\/42\.\*\*$/);
    expect(body).toContain("- Changed the description of `skill-599`"); // every change is named before any detail
    expect(run.summary).toContain("`coding`: description of `skill-599`");
  });

  it("is what the example workflow uses, after installing the project's dependencies", async () => {
    const workflow = parse(await readFile(join(REPO, "examples/github/skills-review.yml"), "utf8"));
    expect(workflow.permissions).toEqual({ contents: "read", "pull-requests": "write" });
    const steps = workflow.jobs.skills.steps as Step[];
    expect(steps.map((step) => step.uses ?? step.run)).toEqual(["actions/checkout@v4", "actions/setup-node@v4", "npm ci", "skillbake/skillbake@v1"]);
  });

  it("uploads SARIF only when asked, with an action pinned by commit; a fork's pull request gets no comment", { timeout: 120_000 }, async () => {
    const text = await readFile(join(REPO, "action.yml"), "utf8");
    const uses = text.split("\n").filter((line) => /^\s*(- )?uses:/.test(line));
    expect(uses.length).toBe(action.runs.steps.filter((step) => step.uses).length);
    for (const line of uses) expect(line).toMatch(/uses: [\w-]+\/[\w/-]+@[0-9a-f]{40} # v[\d.]+$/);
    api.comments.length = 0;
    api.calls.length = 0;
    const pr = await workspace(base, head);
    const run = await runAction(pr, { sarif: "true" }, "someone/app-fork");
    expect(run.used).toEqual([{ uses: expect.stringMatching(/^github\/codeql-action\/upload-sarif@/), with: { sarif_file: join(pr.temp, "skillbake.sarif"), category: "skillbake" } }]);
    const sarif = JSON.parse(await readFile(join(pr.temp, "skillbake.sarif"), "utf8"));
    expect(sarif.version).toBe("2.1.0");
    expect(sarif.runs[0].results.map((result: { ruleId: string }) => result.ruleId)).toEqual(["budget-exceeded"]);
    expect(api.calls).toEqual([]);
    expect(run.summary).toContain("Dropped `beta` from the catalogue");
  });
});
