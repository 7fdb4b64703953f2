// `npm run bench`: skillbake against the I/O floor and Pi's runtime loader, on generated catalogues.
//
//   npm run bench                       # skillbake and the floor; the Pi rows are skipped
//   npx -y -p @mariozechner/pi-coding-agent@0.73.1 -c 'npm run bench'     # with Pi, installed ad hoc
//   SKILLBAKE_BENCH_PI=/path/to/node_modules/@mariozechner/pi-coding-agent npm run bench
//   npm run bench -- --sizes 1000 --dev 500 --runs 3   # narrower; --dev 0 leaves the dev server out
//
// The `real` rows build real public catalogues (bench/catalogues.mjs: run `node bench/catalogues.mjs` once to get
// them); without them those rows are skipped.
//
// Every figure is measured in a fresh process (bench/child.mjs), the cases alternating round after round so
// that a noisy neighbour slows all of them alike; the table shows medians. `ms` is the task itself (after its
// imports), `process ms` the whole child process, `peak RSS` its maximum resident set size. Ratios compare
// medians measured in this same run. The output format is stable: compare runs line by line.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { basename, delimiter, dirname, join, relative, resolve, sep } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { generateCatalogue } from "./generate.mjs";
import { catalogueDir, CATALOGUES } from "./catalogues.mjs";

const PI_PACKAGE = "@mariozechner/pi-coding-agent";
const PI_VERSION = "0.73.1";
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CHILD = join(REPO, "bench", "child.mjs");
const CLI = join(REPO, "dist", "launch.cjs");
const DIST_INDEX = join(REPO, "dist", "index.js");
const AGENT = "main";

const { values } = parseArgs({
  options: { sizes: { type: "string", default: "1000,10000" }, dev: { type: "string", default: "2000" }, runs: { type: "string", default: "5" } },
});
const sizes = values.sizes.split(",").map(Number);
const devSize = Number(values.dev);
const runs = Number(values.runs);
/** The start-up cases (`node -e 0` and a 3-skill build) run this many times `runs`. */
const STARTUP_RUNS_FACTOR = 4;
/** The real catalogues' rows are filed under this size label. */
const REAL = "real";
/** Rebuilds a watch row times in one watcher (its RSS is over all of them), and edits a dev server row makes. */
const WATCH_EDITS = 20;
const DEV_EDITS = 10;

/** Pi's package: $SKILLBAKE_BENCH_PI, else the node_modules/.bin folder `npx -p` puts on PATH. */
function findPi() {
  const candidates = process.env.SKILLBAKE_BENCH_PI
    ? [resolve(process.env.SKILLBAKE_BENCH_PI)]
    : (process.env.PATH ?? "")
        .split(delimiter)
        .filter((entry) => resolve(entry || ".").endsWith(`${sep}node_modules${sep}.bin`))
        .map((entry) => join(dirname(resolve(entry)), ...PI_PACKAGE.split("/")));
  for (const dir of candidates) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, "utf8")).version === PI_VERSION) return dir;
  }
  return undefined;
}

/**
 * Runs `node ARGS` and returns the child's JSON line (if any) with the whole process's wall time. The child runs as
 * on a developer's machine (CI unset: a build writes its caches) unless `env` says otherwise; a project's cases run in
 * its folder (`cwd`), as `npx skills build` does and as Pi runs in the project it works on.
 */
function measure(args, cwd = REPO, env = {}) {
  const start = process.hrtime.bigint();
  const child = spawnSync(process.execPath, args, { cwd, encoding: "utf8", maxBuffer: 1 << 20, env: { ...process.env, CI: "", ...env } });
  const processMs = Number(process.hrtime.bigint() - start) / 1e6;
  if (child.status !== 0) throw new Error(`node ${args.join(" ")} exited ${child.status}:\n${child.stderr}`);
  const line = child.stdout.trim().split("\n").pop();
  return { ...(line ? JSON.parse(line) : {}), processMs };
}

function median(numbers) {
  const sorted = [...numbers].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Every SKILL.md under `dir` (links followed), skipping dot folders and node_modules as discovery does. */
function listSkillFiles(dir) {
  const found = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
    const path = join(dir, entry.name);
    if (entry.name === "SKILL.md" && entry.isFile()) found.push(path);
    else if (entry.isDirectory()) found.push(...listSkillFiles(path));
  }
  return found;
}

const CONFIG = (root, settings = "") => `import { defineConfig } from "skillbake";\nexport default defineConfig({ ${settings}agents: { ${AGENT}: { skills: [{ root: ${JSON.stringify(root)} }] } } });\n`;

/** A project folder: a TypeScript config with one agent over `skills/`, as `skills init` scaffolds. */
function project(base, name, count) {
  const dir = join(base, name);
  mkdirSync(join(dir, "skills"), { recursive: true });
  writeFileSync(join(dir, "skills.config.ts"), CONFIG("skills"));
  // The same build counting tokens (issue 18: at most 10% slower), into a bundle of its own.
  writeFileSync(join(dir, "skills.tokens.config.ts"), CONFIG("skills", 'outDir: "dist/skills-tokens", tokens: { encoding: "o200k_base" }, '));
  const files = generateCatalogue(join(dir, "skills"), count);
  return {
    dir,
    files,
    config: join(dir, "skills.config.ts"),
    tokensConfig: join(dir, "skills.tokens.config.ts"),
    outDir: join(dir, "dist", "skills"),
    tokensOutDir: join(dir, "dist", "skills-tokens"),
    cache: join(dir, "node_modules", ".cache", "skillbake"),
  };
}

const piDir = findPi();
const work = mkdtempSync(join(tmpdir(), "skillbake-bench-"));
const rows = [];
try {
  console.log(`skillbake bench · node ${process.version} · ${cpus().length} cpus · ${runs} runs (start-up cases ${runs * STARTUP_RUNS_FACTOR}) · median of each`);
  console.log(piDir ? `pi ${PI_VERSION}: ${piDir}` : `pi: not found, Pi rows skipped (run \`npx -y -p ${PI_PACKAGE}@${PI_VERSION} -c 'npm run bench'\`, or set SKILLBAKE_BENCH_PI)`);

  // The whole-process floor of any CLI: Node starting and exiting; against it, `skills build` of 3 skills.
  const small = project(work, "small", 3);
  // A first run has no caches at all; a build after editing a skill (what a developer runs again and again) has
  // the transpiled config but no build cache or bundle: each is built cold.
  const startup = { "node -e 0": [], "skills build, 3 skills": [], "… first run, no caches": [] };
  // Four times the runs: each takes a tenth of a second, and its targets are a few milliseconds wide, which the
  // median of five moves by from one bench run to the next (a 3-skill build of the same code: 85 ms, then 89).
  for (let round = 0; round < runs * STARTUP_RUNS_FACTOR; round++) {
    startup["node -e 0"].push(measure(["-e", "0"]));
    rmSync(small.cache, { recursive: true, force: true });
    rmSync(small.outDir, { recursive: true, force: true });
    startup["… first run, no caches"].push(measure([CLI, "build"], small.dir));
    rmSync(join(small.cache, `${basename(small.config)}.json`), { force: true });
    rmSync(small.outDir, { recursive: true, force: true });
    startup["skills build, 3 skills"].push(measure([CLI, "build"], small.dir));
  }
  for (const [name, samples] of Object.entries(startup)) rows.push({ size: 3, name, samples });

  for (const size of sizes) {
    const catalogue = project(work, `catalogue-${size}`, size);
    const skillsRoot = join(catalogue.dir, "skills");
    const agentDir = join(work, "pi-agent"); // empty: Pi loads only the given path
    // One skill looked up after the prompt: its folder is its name.
    const lookedUp = basename(dirname(catalogue.files[Math.floor(catalogue.files.length / 2)]));
    const cases = {
      floor: () => measure([CHILD, "floor", skillsRoot]),
      ...(piDir ? { "pi loadSkills + format": () => measure([CHILD, "pi", piDir, skillsRoot, agentDir], catalogue.dir) } : {}),
      // A fresh CI checkout: no cache found, so none is written. Before the next case, which leaves the caches the
      // rebuild cases use.
      "build, cold, in CI": () => {
        rmSync(catalogue.cache, { recursive: true, force: true });
        rmSync(catalogue.outDir, { recursive: true, force: true });
        return measure([CHILD, "build", DIST_INDEX, catalogue.config], catalogue.dir, { CI: "true" });
      },
      "build, cold": () => {
        rmSync(catalogue.cache, { recursive: true, force: true });
        rmSync(catalogue.outDir, { recursive: true, force: true });
        return measure([CHILD, "build", DIST_INDEX, catalogue.config], catalogue.dir);
      },
      "check, cold": () => {
        rmSync(join(catalogue.cache, `${basename(catalogue.config)}.json`), { force: true });
        return measure([CHILD, "check", DIST_INDEX, catalogue.config], catalogue.dir);
      },
      "build, cold, counting tokens": () => {
        // Its own cache file only: the next case reuses the cold build's.
        rmSync(join(catalogue.cache, "skills.tokens.config.ts.json"), { force: true });
        rmSync(catalogue.tokensOutDir, { recursive: true, force: true });
        return measure([CHILD, "build", DIST_INDEX, catalogue.tokensConfig], catalogue.dir);
      },
      "build, nothing changed": () => measure([CHILD, "build", DIST_INDEX, catalogue.config], catalogue.dir),
      "build, one skill changed": (round) => {
        const file = catalogue.files[(round * 7919) % catalogue.files.length];
        writeFileSync(file, `${readFileSync(file, "utf8")}\nEdited in round ${round}.\n`);
        return measure([CHILD, "build", DIST_INDEX, catalogue.config], catalogue.dir);
      },
      [`watch: ${WATCH_EDITS} edits, median`]: (round) =>
        measure([CHILD, "watch", CLI, catalogue.config, String(WATCH_EDITS), ...Array.from({ length: WATCH_EDITS }, (_, edit) => catalogue.files[((round * WATCH_EDITS + edit) * 104729 + 1) % catalogue.files.length])]),
      "import module + getPrompt": () => {
        const module = join(catalogue.outDir, "agents", `${AGENT}.js`);
        return existsSync(module) ? measure([CHILD, "import", module, AGENT]) : undefined;
      },
      "… + first getSkill": () => {
        const module = join(catalogue.outDir, "agents", `${AGENT}.js`);
        return existsSync(module) ? measure([CHILD, "import", module, AGENT, lookedUp]) : undefined;
      },
    };
    const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
    for (let round = 0; round < runs; round++) {
      for (const [name, run] of Object.entries(cases)) {
        const sample = run(round);
        if (sample) samples[name].push(sample);
      }
    }
    for (const [name, list] of Object.entries(samples)) if (list.length > 0) rows.push({ size, name, samples: list });
  }

  // Real public catalogues (bench/catalogues.mjs), vendored into one project: a root per catalogue, one of them
  // reached through a link (as a project's .agents/skills often is), an agent over all of them and one over two.
  const vendored = CATALOGUES.map((catalogue) => ({ ...catalogue, dir: catalogueDir(catalogue) }));
  if (vendored.some((catalogue) => !catalogue.dir)) console.log("real catalogues: not found, `real` rows skipped (run `node bench/catalogues.mjs` once)");
  else {
    const dir = join(work, "real");
    const roots = [];
    for (const catalogue of vendored) {
      const into = join(dir, "vendor", catalogue.repo.replace("/", "+"));
      cpSync(catalogue.dir, into, { recursive: true, verbatimSymlinks: true });
      roots.push(...catalogue.roots.map((root) => relative(dir, join(into, root))));
    }
    mkdirSync(join(dir, ".agents"));
    symlinkSync(join("..", roots[0]), join(dir, ".agents", "skills"));
    roots[0] = ".agents/skills";
    const sources = (list) => list.map((root) => `{ root: ${JSON.stringify(root)} }`).join(", ");
    writeFileSync(join(dir, "skills.config.ts"), `import { defineConfig } from "skillbake";\nexport default defineConfig({ agents: { ${AGENT}: { skills: [${sources(roots)}] }, review: { skills: [${sources(roots.slice(0, 2))}] } } });\n`);
    const config = join(dir, "skills.config.ts");
    const skillFiles = roots.flatMap((root) => listSkillFiles(join(dir, root)));
    const agentDir = join(work, "pi-agent");
    const cases = {
      ...(piDir ? { "pi loadSkills + format": () => measure([CHILD, "pi", piDir, dir, agentDir, ...roots.map((root) => join(dir, root))], dir) } : {}),
      "build, cold, in CI": () => {
        rmSync(join(dir, "node_modules"), { recursive: true, force: true });
        rmSync(join(dir, "dist"), { recursive: true, force: true });
        return measure([CHILD, "build", DIST_INDEX, config], dir, { CI: "true" });
      },
      "build, cold": () => {
        rmSync(join(dir, "node_modules"), { recursive: true, force: true });
        rmSync(join(dir, "dist"), { recursive: true, force: true });
        return measure([CHILD, "build", DIST_INDEX, config], dir);
      },
      "build, nothing changed": () => measure([CHILD, "build", DIST_INDEX, config], dir),
      "build, one SKILL.md edited": (round) => {
        const file = skillFiles[(round * 7919) % skillFiles.length];
        writeFileSync(file, `${readFileSync(file, "utf8")}\nEdited in round ${round}.\n`);
        return measure([CHILD, "build", DIST_INDEX, config], dir);
      },
    };
    const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
    for (let round = 0; round < runs; round++) for (const [name, run] of Object.entries(cases)) samples[name].push(run(round));
    for (const [name, list] of Object.entries(samples)) rows.push({ size: REAL, name, samples: list });
    console.log(`real catalogues: ${CATALOGUES.length} repositories, ${roots.length} roots, ${skillFiles.length} SKILL.md`);
  }

  // Vite's dev server over a generated catalogue: an edit until the new module shows it.
  if (devSize > 0) {
    const catalogue = project(work, `dev-${devSize}`, devSize);
    const samples = [];
    for (let round = 0; round < runs; round++) samples.push(measure([CHILD, "vite", REPO, catalogue.config, String(DEV_EDITS)], catalogue.dir));
    rows.push({ size: devSize, name: `vite dev: ${DEV_EDITS} edits, median`, samples });
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

// The table: one row per case, ratios against this run's floor and Pi at the same size.
const stat = (row) => ({ ms: median(row.samples.map((sample) => sample.ms ?? sample.processMs)), processMs: median(row.samples.map((sample) => sample.processMs)), rss: median(row.samples.map((sample) => sample.rss ?? NaN)) });
const find = (size, name) => rows.find((row) => row.size === size && row.name === name);
const ratio = (value, base) => (base ? `${(value / base).toFixed(2)}×` : "—");
const mb = (bytes) => (Number.isNaN(bytes) ? "—" : (bytes / 2 ** 20).toFixed(0));

console.log("");
console.log(`${"skills".padStart(6)}  ${"case".padEnd(26)} ${"ms".padStart(8)} ${"process ms".padStart(11)} ${"peak RSS MB".padStart(12)} ${"× floor".padStart(8)} ${"× pi".padStart(8)}`);
for (const row of rows) {
  const { ms, processMs, rss } = stat(row);
  const floor = find(row.size, row.size === 3 ? "node -e 0" : "floor");
  const pi = find(row.size, "pi loadSkills + format");
  const floorMs = floor && (row.size === 3 ? stat(floor).processMs : stat(floor).ms);
  // The lookup's own share: what it adds to the import + getPrompt row.
  const label = row.name === "… + first getSkill" ? `${row.name} (+${(ms - stat(find(row.size, "import module + getPrompt")).ms).toFixed(0)})` : row.name;
  const value = row.size === 3 ? processMs : ms;
  console.log(
    `${String(row.size).padStart(6)}  ${label.padEnd(26)} ${ms.toFixed(0).padStart(8)} ${processMs.toFixed(0).padStart(11)} ${mb(rss).padStart(12)} ${ratio(value, floorMs).padStart(8)} ${ratio(value, pi && stat(pi).ms).padStart(8)}`,
  );
}

// The targets, each with its measured value and verdict: the current ones, then earlier ones still standing.
const largest = Math.max(...sizes);
const lines = [];
const target = (label, value, limit, unit = "×") => {
  const shown = value === undefined ? "—" : unit === "×" ? `${value.toFixed(2)}×` : `${value.toFixed(0)} ${unit}`;
  lines.push(`  ${label.padEnd(58)} ${shown.padStart(8)}  ${value === undefined ? "not measured" : value <= limit ? "met" : "MISSED"}`);
};
const get = (size, name) => find(size, name) && stat(find(size, name));
const ratioOf = (a, b, key = "ms") => (a && b ? a[key] / b[key] : undefined);
const pi = get(largest, "pi loadSkills + format");
const cold = get(largest, "build, cold");
const realPi = get(REAL, "pi loadSkills + format");
const watched = get(largest, `watch: ${WATCH_EDITS} edits, median`);
const dev = get(devSize, `vite dev: ${DEV_EDITS} edits, median`);
// Cold is a fresh CI checkout (no cache written) and a first build on a developer's machine (caches written for the next).
const coldCi = get(largest, "build, cold, in CI");
target(`cold build ${largest} in CI ≤ 1.1× pi`, ratioOf(coldCi, pi), 1.1);
target(`  its peak RSS ≤ 1.3× pi's`, ratioOf(coldCi, pi, "rss"), 1.3);
target(`cold build ${largest}, first local build ≤ 1.1× pi`, ratioOf(cold, pi), 1.1);
target(`  its peak RSS ≤ 1.3× pi's`, ratioOf(cold, pi, "rss"), 1.3);
target(`cold check ${largest} ≤ 0.9× pi`, ratioOf(get(largest, "check, cold"), pi), 0.9);
target("real catalogues, cold build in CI ≤ 1.5× pi", ratioOf(get(REAL, "build, cold, in CI"), realPi), 1.5);
target("  first local build ≤ 1.5× pi", ratioOf(get(REAL, "build, cold"), realPi), 1.5);
target("  nothing changed ≤ 0.3× pi", ratioOf(get(REAL, "build, nothing changed"), realPi), 0.3);
target("  one SKILL.md edited ≤ 0.5× pi", ratioOf(get(REAL, "build, one SKILL.md edited"), realPi), 0.5);
target(`vite dev ${devSize}: edit → new module ≤ 300 ms`, dev?.ms, 300, "ms");
target("  its peak RSS ≤ 500 MB", dev && dev.rss / 2 ** 20, 500, "MB");
target(`watch ${largest}: edit → bundle swapped ≤ 0.4× pi`, ratioOf(watched, pi), 0.4);
target(`  watcher peak RSS over ${WATCH_EDITS} rebuilds ≤ 400 MB`, watched && watched.rss / 2 ** 20, 400, "MB");
target("3-skill build, cold (no caches) ≤ 2.0× node -e 0", ratioOf(get(3, "… first run, no caches"), get(3, "node -e 0"), "processMs"), 2.0);
target("  warm (config transpiled) ≤ 1.6× node -e 0", ratioOf(get(3, "skills build, 3 skills"), get(3, "node -e 0"), "processMs"), 1.6);
console.log("\ntargets");
for (const line of lines.splice(0)) console.log(line);
target(`cold build ${largest} counting tokens ≤ 1.1× cold`, ratioOf(get(largest, "build, cold, counting tokens"), cold), 1.1);
target(`import + getPrompt + first getSkill ${largest} ≤ 0.1× pi`, ratioOf(get(largest, "… + first getSkill"), pi), 0.1);
target("import + getPrompt 1000 ≤ 0.05× pi", ratioOf(get(1000, "import module + getPrompt"), get(1000, "pi loadSkills + format")), 0.05);
console.log("\nearlier targets");
for (const line of lines) console.log(line);
