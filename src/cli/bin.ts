// The CLI's entry, bundled into dist/cli.cjs and started by dist/launch.cjs (see launch.ts).
import { main } from "./main.js";
import { processOutput } from "./output.js";

const stdout = processOutput(1, () => process.stdout);
const stderr = processOutput(2, () => process.stderr);

main(process.argv.slice(2), { stdout, stderr, env: process.env, cwd: process.cwd() }).then(exit, (error: unknown) => {
  stderr.write(`skills: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\nPlease report this with the command you ran.\n`);
  exit(70);
});

/** Exits once the output is flushed: a config's code may leave timers or sockets open that would keep Node running. */
function exit(code: number): void {
  process.exitCode = code;
  stdout.flush(() => stderr.flush(() => process.exit()));
}
