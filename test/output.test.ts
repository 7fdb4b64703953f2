import { execFile, execFileSync } from "node:child_process";
import { closeSync, constants, openSync, readFileSync, readSync } from "node:fs";
import { Socket } from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { processOutput } from "../src/cli/output.js";
import { CLI, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const execFileAsync = promisify(execFile);

/** A project whose one skill draws a warning (its name differs from its folder), so `check` reports in colour on a terminal. */
async function warnedProject(): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, {
    "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
    "skills/alpha/SKILL.md": skillMd("beta"),
  });
  return dir;
}

describe("the CLI's standard output and error", () => {
  it("into a full pipe that cannot block, hands what write(2) could not take to Node's stream: all of it arrives, in order", async () => {
    const dir = await tempDir();
    const fifo = join(dir, "pipe");
    execFileSync("mkfifo", [fifo]);
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
    const writer = openSync(fifo, constants.O_WRONLY);
    // Node's stream of a pipe makes it non-blocking, as a parent that shares it with the CLI may have.
    const stream = new Socket({ fd: writer, readable: false, writable: true });
    const output = processOutput(writer, () => stream);
    expect(output.isTTY).toBe(false);
    const parts = ["a", "b", "c"].map((letter) => `${letter.repeat(100_000)}\n`);
    for (const part of parts) output.write(part);
    const received: Buffer[] = [];
    const drain = () => {
      const chunk = Buffer.alloc(65_536);
      for (;;) {
        try {
          const read = readSync(reader, chunk);
          if (read === 0) return;
          received.push(Buffer.from(chunk.subarray(0, read)));
        } catch {
          return; // empty for now
        }
      }
    };
    await new Promise<void>((resolve) => {
      const timer = setInterval(drain, 5);
      output.flush(() => {
        clearInterval(timer);
        resolve();
      });
    });
    drain();
    stream.destroy();
    closeSync(reader);
    expect(Buffer.concat(received).toString()).toBe(parts.join(""));
  });

  it("into a file, writes what it writes into a pipe", async () => {
    const dir = await warnedProject();
    const piped = await runCli(["check"], { cwd: dir });
    const file = join(dir, "out.txt");
    const fd = openSync(file, "w");
    try {
      execFileSync(process.execPath, [CLI, "check"], { cwd: dir, stdio: ["ignore", fd, fd] });
    } finally {
      closeSync(fd);
    }
    expect(piped.stdout).toBe("");
    expect(readFileSync(file, "utf8")).toBe(piped.stderr);
    expect(piped.stderr).toContain("warning");
    expect(piped.stderr).not.toContain("\u001b[");
  });

  it("on a terminal, writes through Node's stream, which knows it for one: the report is in colour", async () => {
    const dir = await warnedProject();
    const env = { ...process.env, FORCE_COLOR: "", NO_COLOR: "", CI: "" };
    const { stdout } = await execFileAsync("script", ["-qec", `"${process.execPath}" "${CLI}" check`, "/dev/null"], { cwd: dir, env, encoding: "utf8" });
    expect(stdout).toContain("\u001b[33m");
    expect(stdout).toContain("1 warning");
  });
});
