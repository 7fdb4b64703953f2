// `npm run fuzz [-- RUNS]`: the property tests of test/fuzz.test.ts with many more cases and a fresh seed.
// A failure prints the seed and the shrunk case; rerun it with FUZZ_SEED=… FUZZ_RUNS=… npx vitest run test/fuzz.test.ts.
import { spawnSync } from "node:child_process";

const runs = process.argv[2] ?? process.env.FUZZ_RUNS ?? "20000";
const seed = process.env.FUZZ_SEED ?? String(Math.floor(Math.random() * 2 ** 31));
console.log(`fuzz: FUZZ_RUNS=${runs} FUZZ_SEED=${seed}`);
const result = spawnSync("npx", ["vitest", "run", "test/fuzz.test.ts", "test/prompt-integrity.test.ts", "test/output-safety.test.ts", "--testTimeout=86400000"], {
  stdio: "inherit",
  shell: process.platform === "win32",
  env: { ...process.env, FUZZ_RUNS: runs, FUZZ_SEED: seed },
});
process.exit(result.status ?? 1);
