// One measured task in a fresh process (spawned by bench/run.mjs). Prints one JSON line:
// { ms: time of the task itself, after imports, rss: peak resident set size in bytes, ...facts }.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { pathToFileURL } from "node:url";

const [task, ...args] = process.argv.slice(2);

function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function median(numbers) {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

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
    // skillbake's check through the programmatic API (what `skills check` runs): everything but writing.
    case "check": {
      const [distIndex, config] = args;
      const { check } = await import(pathToFileURL(distIndex).href);
      const start = performance.now();
      const result = await check({ config });
      const ms = performance.now() - start;
      if (result.errors > 0) throw new Error(`the check failed: ${JSON.stringify(result.diagnostics.slice(0, 3))}`);
      return { ms, skills: result.agents[0].skills.length };
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
    // edited at a time (each a second after the last rebuild), each timed until the watcher reports the new bundle
    // swapped in (its 25 ms quiet period included). `ms` is the median rebuild; peak RSS is the watcher's over all
    // of them (Linux's VmHWM), not this process's.
    case "watch": {
      const [cli, config, edits, ...files] = args;
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
        const times = [];
        for (let edit = 0; edit < Number(edits); edit++) {
          await new Promise((resolve) => setTimeout(resolve, 1000));
          const edited = files[edit % files.length];
          const from = stderr.length;
          const start = performance.now();
          writeFileSync(edited, `${readFileSync(edited, "utf8")}\nEdited for watch rebuild ${edit}.\n`);
          // The rebuild of this edit: a late rebuild for an earlier edit may report in between.
          const ownRebuild = new RegExp(`Changed: [^\\n]*${escapeRegExp(relative(dirname(config), edited))}[^]*?Built in .*\\n`);
          await printed(ownRebuild, from);
          times.push(performance.now() - start);
          const own = stderr.slice(from).match(ownRebuild)[0];
          if (!/Wrote /.test(own)) throw new Error(`the watch rebuild did not write the bundle:\n${own}`);
        }
        // Linux only: elsewhere the row has no peak RSS of its own.
        const status = existsSync(`/proc/${watcher.pid}/status`) ? readFileSync(`/proc/${watcher.pid}/status`, "utf8") : "";
        const peak = status.match(/VmHWM:\s+(\d+) kB/);
        return { ms: median(times), rebuilds: times.length, ...(peak ? { watcherRss: Number(peak[1]) * 1024 } : {}) };
      } finally {
        watcher.kill("SIGINT");
        await exited;
      }
    }
    // Vite's dev server with skillbake/vite, as an app's server code uses it (ssrLoadModule of a module that imports
    // virtual:skills): after the first load, one skill edited at a time, each timed until a lookup through the
    // module shows the edit. `ms` is the median; peak RSS is this process's, the dev server's.
    case "vite": {
      const [repo, config, edits] = args;
      const dir = dirname(config);
      const { createServer, createLogger } = await import(pathToFileURL(join(repo, "node_modules", "vite", "dist", "node", "index.js")).href);
      const { default: skills } = await import(pathToFileURL(join(repo, "dist", "vite.js")).href);
      writeFileSync(join(dir, "server.mjs"), 'export { agents, getSkill } from "virtual:skills";\n');
      const server = await createServer({ root: dir, configFile: false, logLevel: "error", customLogger: createLogger("error"), plugins: [skills({ config })], server: { middlewareMode: true, hmr: false, ws: false } });
      try {
        const load = () => server.ssrLoadModule("/server.mjs");
        const first = await load();
        const [agent] = Object.keys(first.agents);
        const picked = first.agents[agent].skills.filter((_, index) => index % 97 === 5).map((skill) => [join(dir, skill.file), skill.name]);
        const times = [];
        for (let edit = 0; edit < Number(edits); edit++) {
          await new Promise((resolve) => setTimeout(resolve, 300));
          const [file, name] = picked[edit % picked.length];
          const marker = `Edited in the dev server, ${edit}.`;
          const start = performance.now();
          writeFileSync(file, `${readFileSync(file, "utf8")}\n${marker}\n`);
          while (!(await load()).getSkill(agent, name).body.includes(marker)) await new Promise((resolve) => setTimeout(resolve, 2));
          times.push(performance.now() - start);
        }
        return { ms: median(times), edits: times.length };
      } finally {
        await server.close();
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
