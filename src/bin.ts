#!/usr/bin/env node
import { main } from "./cli.js";

main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() }).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`skills: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\nPlease report this with the command you ran.\n`);
    process.exitCode = 70;
  },
);
