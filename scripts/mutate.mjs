// `npm run mutate [-- <file>...]`: mutation testing (Stryker) of the code that guards users, each file against the
// test files that exercise it in process, with per-test coverage. Prints each file's mutation score and exits 1
// when one is under THRESHOLD. Results are kept in reports/mutation/ (incremental: a run re-tests only mutants
// whose code or tests changed; MUTATE_FORCE=1 re-tests all). MUTATE_CONCURRENCY sets the workers (2 by default).
// See docs/developing.md (Mutation testing) for the scores and the surviving mutants that are equivalent.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { Stryker } from "@stryker-mutator/core";
import ts from "typescript";

const THRESHOLD = 80;

/**
 * What is mutated, and the tests that may kill it. `only`: the functions (or class methods) to mutate, when the
 * file holds more than the part that guards users.
 */
const TARGETS = [
  { file: "src/compile/gitignore.ts", tests: ["test/gitignore-oracle.test.ts", "test/discover.test.ts"] },
  {
    file: "src/compile/discover.ts",
    // The walk, its link and ignore checks, its limits, and the reads after it; not the findings' wording.
    only: [
      "discoverRoot", "finish", "walk", "addSkill", "collectFiles", "isInsideRoot", "withIgnoreFile", "identify", "readFolder", "takeStats", "withinByteLimit",
      "comparePaths", "pathIn", "resolveLink", "realpathOr", "escapeFinding", "readSkillBytes", "relativeTo",
    ],
    // test/discover-hostile.test.ts makes test/hostile-fs.test.ts's attacks in process, without its time bounds (which
    // do not hold for instrumented code on a busy machine).
    tests: ["test/discover.test.ts", "test/discover-hostile.test.ts", "test/gitignore-oracle.test.ts", "test/path-order.test.ts"],
  },
  { file: "src/compile/cache.ts", tests: ["test/cache.test.ts", "test/cache-records.test.ts", "test/cache-signatures.test.ts", "test/snapshot.test.ts", "test/bundle-stream.test.ts", "test/fingerprint.test.ts"] },
  // The build cache's tests go through snapshot.ts on every build too, adding minutes per mutant and no checks of it.
  { file: "src/compile/snapshot.ts", tests: ["test/snapshot-checks.test.ts", "test/snapshot.test.ts"] },
  { file: "src/compile/config-cache.ts", tests: ["test/config-cache.test.ts", "test/config-safety.test.ts"] },
  {
    file: "src/bundle/emit.ts",
    only: [
      "writeBundle", "removeLeftover", "openBundleFile", "describeKind", "swapIn", "transientPath", "recoverInterruptedBuild", "lockOutDir", "breakStaleLock",
      "lockHolder", "processStartMs", "isRunning", "exists", "assertSafeOutDir", "realPathOf", "assertReplaceable", "assertOnlyListed", "filesUnder", "manifestListing", "readManifest",
      "parseJson",
    ],
    // Not test/cache-signatures.test.ts: its builds test the build cache, and would run for each of these mutants.
    tests: ["test/output-safety.test.ts", "test/bundle-stream.test.ts"],
  },
  { file: "src/compile/terminal.ts", tests: ["test/markdown-escape.test.ts", "test/report.test.ts"] },
  {
    file: "src/cli/report.ts",
    only: ["formatPretty", "codeFrame", "formatGithub", "shownMessage", "escapeData", "escapeProperty", "formatStepSummary", "sarifLocations"],
    tests: ["test/report.test.ts", "test/ci-formats.test.ts"],
  },
  { file: "src/review/diff-format.ts", only: ["blockLines", "fit", "formatDiffMarkdown", "codeSpan", "longestBacktickRun"], tests: ["test/diff.test.ts"] },
  { file: "src/review/diff.ts", tests: ["test/diff.test.ts", "test/diff-oracle.test.ts"] },
  { file: "src/runtime/helpers.ts", tests: ["test/runtime.test.ts", "test/prompt-integrity.test.ts"] },
];

/** `file:start-end` for each named function, method or arrow function in `only`. */
function rangesOf(file, only) {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
  const ranges = new Map();
  const visit = (node) => {
    const named =
      (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name
        ? node.name.getText(source)
        : ts.isVariableDeclaration(node) && node.initializer && ts.isArrowFunction(node.initializer)
          ? node.name.getText(source)
          : undefined;
    if (named && only.includes(named)) {
      const line = (position) => source.getLineAndCharacterOfPosition(position).line + 1;
      ranges.set(named, `${file}:${line(node.getStart(source))}-${line(node.getEnd())}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  const missing = only.filter((name) => !ranges.has(name));
  if (missing.length > 0) throw new Error(`${file}: no function named ${missing.join(", ")}`);
  return [...ranges.values()];
}

const DETECTED = new Set(["Killed", "Timeout"]);
const UNDETECTED = new Set(["Survived", "NoCoverage"]);

async function mutate({ file, only, tests }) {
  const name = file.replace(/[/.]/g, "-");
  const stryker = new Stryker({
    testRunner: "vitest",
    vitest: { configFile: "vitest.config.ts", related: false },
    coverageAnalysis: "perTest",
    mutate: only ? rangesOf(file, only) : [file],
    testFiles: tests,
    concurrency: Number(process.env.MUTATE_CONCURRENCY ?? 2),
    // A machine shared with other work: a mutant is a timeout only when it takes far longer than its tests did.
    timeoutMS: 60_000,
    dryRunTimeoutMinutes: 30,
    // Mutants run only while a module loads (constants) would need every test run for each; they are counted as ignored.
    ignoreStatic: true,
    // A fixture's broken link cannot be copied into the sandbox; the bench is no test.
    ignorePatterns: ["test/fixtures/pi/symlinks", "bench", "reports"],
    incremental: true,
    incrementalFile: `reports/mutation/${name}.incremental.json`,
    force: process.env.MUTATE_FORCE === "1",
    reporters: ["clear-text", "progress"],
    clearTextReporter: { allowColor: false, logTests: false, maxTestsToLog: 0 },
    tempDirName: ".stryker-tmp",
    cleanTempDir: "always",
    logLevel: "warn",
  });
  const results = await stryker.runMutationTest();
  const count = (statuses) => results.filter((result) => statuses.has(result.status)).length;
  const detected = count(DETECTED);
  const undetected = count(UNDETECTED);
  return {
    file,
    score: detected + undetected === 0 ? 100 : (100 * detected) / (detected + undetected),
    killed: count(new Set(["Killed"])),
    timeout: count(new Set(["Timeout"])),
    survived: count(new Set(["Survived"])),
    noCoverage: count(new Set(["NoCoverage"])),
    ignored: count(new Set(["Ignored"])),
    errors: count(new Set(["RuntimeError", "CompileError"])),
    undetected: results.filter((result) => UNDETECTED.has(result.status)).map((result) => `${result.location.start.line}:${result.location.start.column} ${result.status} ${result.mutatorName}: ${result.replacement}`),
  };
}

const chosen = process.argv.slice(2);
const targets = chosen.length > 0 ? TARGETS.filter((target) => chosen.includes(target.file)) : TARGETS;
if (targets.length === 0) throw new Error(`no target among ${chosen.join(", ")}; the targets are ${TARGETS.map((target) => target.file).join(", ")}`);
process.env.ORACLE_RUNS ??= "40"; // the property tests' runs per mutant: the oracles' own tests catch the rest
process.env.KILLED_BUILDS ??= "2"; // builds killed at random moments per mutant: only the recovery after each runs mutated
mkdirSync("reports/mutation", { recursive: true });
const scores = [];
for (const target of targets) {
  const score = await mutate(target);
  scores.push(score);
  writeFileSync(`reports/mutation/${target.file.replace(/[/.]/g, "-")}.json`, `${JSON.stringify(score, null, 2)}\n`);
}

const row = (cells) => `| ${cells.join(" | ")} |`;
console.log(row(["file", "score", "killed", "timeout", "survived", "no coverage", "ignored (static)", "errors"]));
console.log(row(["---", "---:", "---:", "---:", "---:", "---:", "---:", "---:"]));
for (const score of scores) console.log(row([score.file, `${score.score.toFixed(1)}%`, score.killed, score.timeout, score.survived, score.noCoverage, score.ignored, score.errors]));
const low = scores.filter((score) => score.score < THRESHOLD);
if (low.length > 0) {
  console.error(`Under ${THRESHOLD}%: ${low.map((score) => score.file).join(", ")}`);
  process.exitCode = 1;
}
