// `npm run bench`: skillbake against the I/O floor and Pi's runtime loader, on generated catalogues.
//
//   npm run bench                       # skillbake and the floor; the Pi rows are skipped
//   npx -y -p @mariozechner/pi-coding-agent@0.73.1 -c 'npm run bench'     # with Pi, installed ad hoc
//   SKILLBAKE_BENCH_PI=/path/to/node_modules/@mariozechner/pi-coding-agent npm run bench
//   npm run bench -- --sizes 1000 --realistic 1000 --runs 3   # --realistic 0 leaves that case out
//
// Every figure is measured in a fresh process (bench/child.mjs), the cases alternating round after round so
// that a noisy neighbour slows all of them alike; the table shows medians. `ms` is the task itself (after its
// imports), `process ms` the whole child process, `peak RSS` its maximum resident set size. Ratios compare
// medians measured in this same run. The output format is stable: compare runs line by line.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { basename, delimiter, dirname, join, relative, resolve, sep } from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { generateCatalogue } from "./generate.mjs";

const PI_PACKAGE = "@mariozechner/pi-coding-agent";
const PI_VERSION = "0.73.1";
const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const CHILD = join(REPO, "bench", "child.mjs");
const CLI = join(REPO, "dist", "cli.js");
const DIST_INDEX = join(REPO, "dist", "index.js");
const AGENT = "main";

const { values } = parseArgs({
  options: { sizes: { type: "string", default: "1000,10000" }, realistic: { type: "string", default: "4000" }, runs: { type: "string", default: "5" } },
});
const sizes = values.sizes.split(",").map(Number);
const realisticSize = Number(values.realistic);
const runs = Number(values.runs);
/** The realistic catalogue's rows are filed under this size label. */
const REALISTIC = "real";
const REALISTIC_ROOTS = 4;

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

/** Runs `node ARGS` and returns the child's JSON line (if any) with the whole process's wall time. */
function measure(args, cwd = REPO) {
  const start = process.hrtime.bigint();
  const child = spawnSync(process.execPath, args, { cwd, encoding: "utf8", maxBuffer: 1 << 20 });
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
  console.log(`skillbake bench · node ${process.version} · ${cpus().length} cpus · ${runs} runs · median of each`);
  console.log(piDir ? `pi ${PI_VERSION}: ${piDir}` : `pi: not found, Pi rows skipped (run \`npx -y -p ${PI_PACKAGE}@${PI_VERSION} -c 'npm run bench'\`, or set SKILLBAKE_BENCH_PI)`);

  // The whole-process floor of any CLI: Node starting and exiting; against it, `skills build` of 3 skills.
  const small = project(work, "small", 3);
  // A first run has no caches at all; a build after editing a skill (what a developer runs again and again) has
  // the transpiled config but no build cache or bundle: each is built cold.
  const startup = { "node -e 0": [], "skills build, 3 skills": [], "… first run, no caches": [] };
  for (let round = 0; round < runs; round++) {
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
      ...(piDir ? { "pi loadSkills + format": () => measure([CHILD, "pi", piDir, skillsRoot, agentDir]) } : {}),
      "build, cold": () => {
        rmSync(catalogue.cache, { recursive: true, force: true });
        rmSync(catalogue.outDir, { recursive: true, force: true });
        return measure([CHILD, "build", DIST_INDEX, catalogue.config]);
      },
      "build, cold, counting tokens": () => {
        // Its own cache file only: the next case reuses the cold build's.
        rmSync(join(catalogue.cache, "skills.tokens.config.ts.json"), { force: true });
        rmSync(catalogue.tokensOutDir, { recursive: true, force: true });
        return measure([CHILD, "build", DIST_INDEX, catalogue.tokensConfig]);
      },
      "build, nothing changed": () => measure([CHILD, "build", DIST_INDEX, catalogue.config]),
      "build, one skill changed": (round) => {
        const file = catalogue.files[(round * 7919) % catalogue.files.length];
        writeFileSync(file, `${readFileSync(file, "utf8")}\nEdited in round ${round}.\n`);
        return measure([CHILD, "build", DIST_INDEX, catalogue.config]);
      },
      "watch: one skill changed": (round) => measure([CHILD, "watch", CLI, catalogue.config, catalogue.files[(round * 104729 + 1) % catalogue.files.length]]),
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

  // Shaped like real catalogues (see generate.mjs): several roots, an agent over all of them and one per root.
  if (realisticSize > 0) {
    const dir = join(work, "realistic");
    const roots = Array.from({ length: REALISTIC_ROOTS }, (_, index) => join(dir, `skills-${index}`));
    roots.forEach((root, index) => {
      mkdirSync(root, { recursive: true });
      generateCatalogue(root, Math.round(realisticSize / REALISTIC_ROOTS), index + 1, { realistic: true });
    });
    const perRoot = roots.map((root, index) => `root${index}: { skills: [{ root: ${JSON.stringify(relative(dir, root))} }] }`);
    const all = roots.map((root) => `{ root: ${JSON.stringify(relative(dir, root))} }`).join(", ");
    writeFileSync(join(dir, "skills.config.ts"), `import { defineConfig } from "skillbake";\nexport default defineConfig({ agents: { ${AGENT}: { skills: [${all}] }, ${perRoot.join(", ")} } });\n`);
    const agentDir = join(work, "pi-agent");
    const cases = {
      ...(piDir ? { "pi loadSkills + format": () => measure([CHILD, "pi", piDir, dir, agentDir, ...roots]) } : {}),
      "build, cold": () => {
        rmSync(join(dir, "node_modules"), { recursive: true, force: true });
        rmSync(join(dir, "dist"), { recursive: true, force: true });
        return measure([CHILD, "build", DIST_INDEX, join(dir, "skills.config.ts")]);
      },
    };
    const samples = Object.fromEntries(Object.keys(cases).map((name) => [name, []]));
    for (let round = 0; round < runs; round++) for (const [name, run] of Object.entries(cases)) samples[name].push(run(round));
    for (const [name, list] of Object.entries(samples)) rows.push({ size: REALISTIC, name, samples: list });
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

// The targets (issue 17, and the earlier ones it does not replace), each with its measured ratio and verdict.
const largest = Math.max(...sizes);
const targets = [];
const target = (label, value, limit) =>
  targets.push(`  ${label.padEnd(58)} ${value === undefined ? "—".padStart(6) : `${value.toFixed(2)}×`.padStart(6)}  ${value === undefined ? "not measured" : value <= limit ? "met" : "MISSED"}`);
const get = (size, name) => find(size, name) && stat(find(size, name));
const ratioOf = (a, b, key = "ms") => (a && b ? a[key] / b[key] : undefined);
const pi = get(largest, "pi loadSkills + format");
const cold = get(largest, "build, cold");
target(`cold build ${largest} ≤ 1.0× pi`, ratioOf(cold, pi), 1.0);
target(`  its peak RSS ≤ 1.2× pi's`, ratioOf(cold, pi, "rss"), 1.2);
target(`cold build ${largest} ≤ 3× floor`, ratioOf(cold, get(largest, "floor")), 3);
target(`cold build ${largest} counting tokens ≤ 1.1× cold`, ratioOf(get(largest, "build, cold, counting tokens"), cold), 1.1);
target(`rebuild ${largest}, nothing changed ≤ 0.3× pi`, ratioOf(get(largest, "build, nothing changed"), pi), 0.3);
target(`rebuild ${largest}, one SKILL.md changed ≤ 0.5× pi`, ratioOf(get(largest, "build, one skill changed"), pi), 0.5);
const watched = get(largest, "watch: one skill changed");
target(`watch ${largest}: edit → bundle swapped ≤ 0.35× pi`, ratioOf(watched, pi), 0.35);
target(`  watcher peak RSS ≤ 1.5× pi's loader`, ratioOf(watched, pi, "rss"), 1.5);
const lookup = get(largest, "… + first getSkill");
target(`import + getPrompt + first getSkill ${largest} ≤ 0.1× pi`, ratioOf(lookup, pi), 0.1);
target(`  its peak RSS ≤ 1.0× pi's`, ratioOf(lookup, pi, "rss"), 1.0);
// The runtime bundle's own target: a 1,000-skill bundle imported at least 20 times faster than Pi loads it.
target("import + getPrompt 1000 ≤ 0.05× pi", ratioOf(get(1000, "import module + getPrompt"), get(1000, "pi loadSkills + format")), 0.05);
target(`realistic catalogue ${realisticSize}, ${REALISTIC_ROOTS} roots, cold ≤ 1.2× pi`, ratioOf(get(REALISTIC, "build, cold"), get(REALISTIC, "pi loadSkills + format")), 1.2);
target("3-skill build, whole process ≤ 2.2× node -e 0", ratioOf(get(3, "skills build, 3 skills"), get(3, "node -e 0"), "processMs"), 2.2);
target("  its first run, no caches (config not yet transpiled)", ratioOf(get(3, "… first run, no caches"), get(3, "node -e 0"), "processMs"), 2.2);
console.log("\ntargets");
for (const line of targets) console.log(line);
