// One measured task in a fresh process (spawned by bench/run.mjs). Prints one JSON line:
// { ms: time of the task itself, after imports, rss: peak resident set size in bytes, ...facts }.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

const [task, ...args] = process.argv.slice(2);

async function run() {
  switch (task) {
    // The I/O floor: a bare synchronous walk that reads every SKILL.md and does nothing else.
    case "floor": {
      const [root] = args;
      let files = 0;
      let bytes = 0;
      const walk = (dir) => {
        const entries = readdirSync(dir, { withFileTypes: true });
        if (entries.some((entry) => entry.name === "SKILL.md")) {
          bytes += readFileSync(join(dir, "SKILL.md")).byteLength;
          files++;
          return;
        }
        for (const entry of entries) if (entry.isDirectory() && !entry.name.startsWith(".") && entry.name !== "node_modules") walk(join(dir, entry.name));
      };
      const start = performance.now();
      walk(root);
      return { ms: performance.now() - start, files, bytes };
    }
    // Pi's runtime loader and formatter, as Pi runs them at startup.
    case "pi": {
      const [piDir, root, agentDir, ...roots] = args;
      const { loadSkills, formatSkillsForPrompt } = await import(pathToFileURL(join(piDir, "dist/core/skills.js")).href);
      const start = performance.now();
      const { skills } = loadSkills({ cwd: root, agentDir, skillPaths: roots.length > 0 ? roots : [root], includeDefaults: false });
      const prompt = formatSkillsForPrompt(skills);
      return { ms: performance.now() - start, skills: skills.length, chars: prompt.length };
    }
    // skillbake's build through the programmatic API (what `skills build` runs).
    case "build": {
      const [distIndex, config] = args;
      const { build } = await import(pathToFileURL(distIndex).href);
      const start = performance.now();
      const result = await build({ config });
      const ms = performance.now() - start;
      if (!result.ok) throw new Error(`the build failed: ${JSON.stringify(result.diagnostics.slice(0, 3))}`);
      return { ms, written: result.written, skills: result.agents[0].skills.length };
    }
    // Watch mode as a developer runs it: `skills build --watch` in its own process; after its first build, one skill
    // edited, timed until the watcher reports the new bundle swapped in (its 100 ms quiet period included). Peak RSS
    // is the watcher's (Linux's VmHWM), not this process's.
    case "watch": {
      const [cli, config, edited] = args;
      const watcher = spawn(process.execPath, [cli, "build", "--watch", "--config", config], { cwd: dirname(config), stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      const exited = new Promise((resolve) => watcher.on("exit", resolve));
      const printed = (pattern, from) =>
        new Promise((resolve, reject) => {
          const check = () => {
            if (pattern.test(stderr.slice(from))) resolve();
            else if (watcher.exitCode !== null) reject(new Error(`the watcher exited:\n${stderr}`));
            else setTimeout(check, 2);
          };
          check();
        });
      watcher.stderr.on("data", (chunk) => (stderr += chunk));
      try {
        await printed(/Watching/, 0);
        const from = stderr.length;
        const start = performance.now();
        writeFileSync(edited, `${readFileSync(edited, "utf8")}\nEdited for the watch rebuild.\n`);
        await printed(/Built in .*\n/, from);
        const ms = performance.now() - start;
        if (!/Wrote /.test(stderr.slice(from))) throw new Error(`the watch rebuild did not write the bundle:\n${stderr.slice(from)}`);
        // Linux only: elsewhere the row has no peak RSS of its own.
        const status = existsSync(`/proc/${watcher.pid}/status`) ? readFileSync(`/proc/${watcher.pid}/status`, "utf8") : "";
        const peak = status.match(/VmHWM:\s+(\d+) kB/);
        return { ms, ...(peak ? { watcherRss: Number(peak[1]) * 1024 } : {}) };
      } finally {
        watcher.kill("SIGINT");
        await exited;
      }
    }
    // A server's startup: import one agent's generated module and get its prompt, then (given a name) the
    // model's first skill call: one getSkill.
    case "import": {
      const [moduleFile, agent, skill] = args;
      const start = performance.now();
      const module = await import(pathToFileURL(moduleFile).href);
      const prompt = module.getPrompt(agent);
      const body = skill === undefined ? "" : module.getSkill(agent, skill).body;
      return { ms: performance.now() - start, chars: prompt.length, bodyChars: body.length };
    }
    default:
      throw new Error(`unknown task ${task}`);
  }
}

const { watcherRss, ...facts } = await run();
process.stdout.write(`${JSON.stringify({ ...facts, rss: task === "watch" ? watcherRss : process.resourceUsage().maxRSS * 1024 })}\n`);
