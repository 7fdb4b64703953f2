// The steps of skillbake's GitHub Action (action.yml): `node review.mjs STEP`, with the action's inputs in
// INPUT_* variables and the runner's in GITHUB_* and RUNNER_TEMP. It runs the project's own skillbake
// (node_modules/.bin/skills, the version its lockfile pins) and needs nothing but Node and git.
import { spawn, spawnSync } from "node:child_process";
import { appendFileSync, closeSync, constants, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

const env = process.env;
const temp = join(env.RUNNER_TEMP ?? ".", "skillbake-review");
const files = { sarif: join(env.RUNNER_TEMP ?? ".", "skillbake.sarif"), diff: join(temp, "diff.md"), before: join(temp, "before"), after: join(temp, "after"), base: join(temp, "base") };
const MARKER = "<!-- skillbake review -->";
/** GitHub refuses a comment over 65,536 characters. */
const COMMENT_LIMIT = 65_536;

function output(name, value) {
  appendFileSync(env.GITHUB_OUTPUT, `${name}=${value}\n`);
}

/** Remembered for the `verdict` step (GITHUB_ENV reaches every later step of the job). */
function failed() {
  appendFileSync(env.GITHUB_ENV, "SKILLBAKE_FAILED=true\n");
}

/** The start of a tracked file, if it is a regular file: a pull request may commit a link or a FIFO under any name. */
function head(path) {
  let fd;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    if (!fstatSync(fd).isFile()) return "";
    const bytes = Buffer.alloc(4096);
    return bytes.subarray(0, readSync(fd, bytes, 0, bytes.length, 0)).toString("utf8");
  } catch {
    return "";
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A workflow command's value, escaped as the runner reads it back. */
function commandValue(text) {
  return String(text).replace(/%/g, "%25").replace(/\r/g, "%0D").replace(/\n/g, "%0A");
}

function configArgs() {
  return env.INPUT_CONFIG ? ["--config", env.INPUT_CONFIG] : [];
}

/** The project's skillbake CLI, from the working directory's node_modules (or a parent's, as npm resolves it). */
function cli(cwd) {
  for (let dir = resolve(cwd); ; dir = resolve(dir, "..")) {
    const bin = join(dir, "node_modules/.bin/skills");
    if (existsSync(bin)) return bin;
    if (dir === resolve(dir, "..")) break;
  }
  console.log("::error title=skillbake::node_modules/.bin/skills not found: add skillbake to the project's devDependencies and run `npm ci` before this action.");
  process.exit(1);
}

/** Runs the CLI with its output passed through (annotations included); resolves with the exit code and what stderr held. */
function skills(args, { cwd = ".", stdout = "inherit", summary = true } = {}) {
  const childEnv = { ...env };
  if (!summary) delete childEnv.GITHUB_STEP_SUMMARY;
  return new Promise((done, fail) => {
    const child = spawn(cli(cwd), args, { cwd, env: childEnv, stdio: ["ignore", stdout, "pipe"] });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (chunk) => {
      stderr += chunk;
      process.stderr.write(chunk);
    });
    child.on("error", fail);
    child.on("close", (code) => done({ code, stderr }));
  });
}

function git(args, cwd = ".") {
  return spawnSync("git", args, { cwd, encoding: "utf8" });
}

const steps = {
  /** `skills check`: annotations and a job summary; the counts as outputs; the SARIF log when asked. */
  async check() {
    if (env.INPUT_CHECK === "false") return;
    const { code, stderr } = await skills(["check", ...configArgs(), "--format", "github"]);
    const count = (kind) => stderr.split("\n").filter((line) => line.startsWith(`::${kind} `)).length;
    output("errors", count("error"));
    output("warnings", count("warning"));
    if (env.INPUT_SARIF === "true") {
      const sarif = spawnSync(cli("."), ["check", ...configArgs(), "--format", "sarif"], { encoding: "utf8", env: { ...env, GITHUB_STEP_SUMMARY: "" }, maxBuffer: 1 << 30 });
      writeFileSync(files.sarif, sarif.stdout);
      output("sarif-file", files.sarif);
    }
    if (code !== 0) failed();
  },

  /** `skills build --check`: with `auto`, only where the repository commits a skillbake bundle. */
  async "build-check"() {
    const wanted = env.INPUT_BUILD_CHECK ?? "auto";
    if (wanted === "false") return;
    if (wanted === "auto") {
      const tracked = git(["ls-files", "-z", "--", "manifest.json", "*/manifest.json"]).stdout.split("\0").filter(Boolean);
      const bundles = tracked.filter((path) => /^\{\s*"\$schema":\s*"[^"]*skillbake[^"]*manifest\.schema\.json"/.test(head(path)));
      if (bundles.length === 0) return;
    }
    const { code } = await skills(["build", "--check", ...configArgs(), "--format", "pretty"], { summary: false });
    if (code !== 0) failed();
  },

  /**
   * `skills diff` of the base branch's bundle (built in a worktree of the base commit, with this pull request's
   * skillbake) and the pull request's; the markdown for the comment, the job summary, and which agents changed.
   */
  async diff() {
    if (env.INPUT_DIFF === "false" || !env.BASE_SHA) return;
    rmSync(temp, { recursive: true, force: true });
    mkdirSync(temp, { recursive: true });
    const built = await skills(["build", ...configArgs(), "--format", "pretty", "--out", files.after], { summary: false });
    if (built.code !== 0) {
      failed();
      return;
    }
    const prefix = git(["rev-parse", "--show-prefix"]).stdout.trim();
    if (git(["cat-file", "-e", `${env.BASE_SHA}^{commit}`]).status !== 0) git(["fetch", "--quiet", "--no-tags", "--depth=1", "origin", env.BASE_SHA]);
    const added = git(["worktree", "add", "--quiet", "--detach", files.base, env.BASE_SHA]);
    let baseBuilt = false;
    if (added.status === 0) {
      const baseDir = join(files.base, prefix);
      // The base's config may import packages: this checkout's node_modules serve it (skillbake included).
      if (existsSync("node_modules") && existsSync(baseDir) && !existsSync(join(baseDir, "node_modules"))) symlinkSync(resolve("node_modules"), join(baseDir, "node_modules"));
      if (existsSync(baseDir)) baseBuilt = (await skills(["build", ...configArgs(), "--format", "pretty", "--out", files.before], { cwd: baseDir, summary: false })).code === 0;
      git(["worktree", "remove", "--force", files.base]);
    }
    if (!baseBuilt) console.log("::notice title=skillbake::The base branch's skills did not build; comparing with an empty bundle.");
    const compare = [files.before, files.after, "--allow-missing-before"];
    const markdown = spawnSync(cli("."), ["diff", ...compare, "--format", "markdown"], { encoding: "utf8", env, maxBuffer: 1 << 30 });
    if (markdown.status !== 0) {
      process.stderr.write(markdown.stderr);
      failed();
      return;
    }
    writeFileSync(files.diff, markdown.stdout);
    const json = spawnSync(cli("."), ["diff", ...compare, "--format", "json"], { encoding: "utf8", env: { ...env, GITHUB_STEP_SUMMARY: "" }, maxBuffer: 1 << 30 });
    if (json.status !== 0) {
      process.stderr.write(json.stderr);
      failed();
      return;
    }
    const changed = JSON.parse(json.stdout).agents.filter((agent) => agent.status !== "unchanged").map((agent) => agent.id);
    output("diff-file", files.diff);
    output("changed", changed.length > 0 ? "true" : "false");
    output("changed-agents", changed.join(","));
  },

  /**
   * One sticky comment on the pull request: updated once there is one (also when the change is undone), started
   * only for a change. A token that may not comment (a pull request from a fork) gets a warning: the job summary
   * has the comparison.
   */
  async comment() {
    if (env.INPUT_COMMENT !== "true" || !env.PR_NUMBER || !existsSync(files.diff)) return;
    if (env.HEAD_REPOSITORY && env.HEAD_REPOSITORY !== env.GITHUB_REPOSITORY) return; // a fork's token is read-only
    let body = `${MARKER}\n${readFileSync(files.diff, "utf8")}`;
    if (body.length > COMMENT_LIMIT) body = `${body.slice(0, COMMENT_LIMIT - 200)}\n\n**Cut short: the job summary has the rest.**`;
    const api = `${env.GITHUB_API_URL ?? "https://api.github.com"}/repos/${env.GITHUB_REPOSITORY}`;
    const headers = { authorization: `Bearer ${env.GITHUB_TOKEN}`, accept: "application/vnd.github+json", "x-github-api-version": "2022-11-28" };
    const request = async (method, url, payload) => {
      const response = await fetch(url, { method, headers, ...(payload ? { body: JSON.stringify(payload) } : {}) });
      if (!response.ok) throw new Error(`${method} ${url.replace(api, "")}: ${response.status} ${response.statusText}`);
      return response;
    };
    try {
      let previous;
      for (let url = `${api}/issues/${env.PR_NUMBER}/comments?per_page=100`; url && !previous; ) {
        const response = await request("GET", url);
        previous = (await response.json()).find((comment) => comment.user?.type === "Bot" && comment.body?.startsWith(MARKER));
        url = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get("link") ?? "")?.[1];
      }
      if (previous) await request("PATCH", `${api}/issues/comments/${previous.id}`, { body });
      else if (env.CHANGED === "true") await request("POST", `${api}/issues/${env.PR_NUMBER}/comments`, { body });
    } catch (error) {
      console.log(`::warning title=skillbake::${commandValue(`Could not post the review comment (${error.message}); the job summary has the comparison.`)}`);
    }
  },

  /** Fails the job when `check`, `build --check` or a build failed, once the comparison has been posted. */
  async verdict() {
    if (env.SKILLBAKE_FAILED === "true") process.exit(1);
  },
};

const step = steps[process.argv[2]];
if (!step) throw new Error(`unknown step ${process.argv[2]}`);
await step();
