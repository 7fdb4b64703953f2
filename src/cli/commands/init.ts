import { closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { CONFIG_FILE_NAMES } from "../../compile/config.js";
import { FileSystemError, isSystemError } from "../../compile/fs-error.js";
import { write, type Command } from "./command.js";

export const EXAMPLE_SKILL = "explain-code";
const SKILL_FILE = `skills/${EXAMPLE_SKILL}/SKILL.md`;
const SCRIPT_NAME = "skills:build";
const SCRIPT = "skills build";

const CONFIG = `import { defineConfig } from "skillbake";

// \`skills build\` compiles the skills below into dist/skills/: manifest.json, each agent's prompt
// and a typed module that your server imports.
export default defineConfig({
  // Prompts name skill files relative to this folder, so the bundle is the same on every machine.
  location: "relative",
  agents: {
    assistant: {
      // Every skill under ./skills is listed in the agent's prompt. \`inline: ["name"]\` puts a
      // skill's whole body in the prompt instead; \`available: ["*", "!name"]\` leaves one out.
      skills: [{ root: "skills" }],
    },
  },
});
`;

const SKILL = `---
name: ${EXAMPLE_SKILL}
description: Explain what a piece of code does, step by step, in plain language. Use when the user asks how some code works, what a function or file is for, or why it behaves the way it does.
---

# Explain code

1. Read the code the user points at, and the code it calls, before explaining anything.
2. Start with one sentence on what it is for; then walk through it in the order it runs.
3. Name its inputs, its outputs and its side effects (files, network, state it changes).
4. Point out what may surprise a reader: edge cases, error handling, hidden assumptions.
5. Keep the explanation as short as the code allows, and offer to go deeper on any part.
`;

export const initCommand: Command = {
  name: "init",
  summary: "scaffold skills.config.ts and an example skill (never overwrites)",
  help: `Usage: skills init

Creates, in the current folder:
  skills.config.ts                one agent, "assistant", that sees every skill under skills/
  ${SKILL_FILE}    an example skill to copy
and adds "${SCRIPT_NAME}": "${SCRIPT}" to the scripts of package.json when there is one.

Never overwrites: when a config (skills.config.{ts,mts,js,mjs,json}) or the example skill already
exists, it names them, writes nothing and exits 2. An existing "${SCRIPT_NAME}" script is left as it is.

Examples:
  npm install --save-dev skillbake && npx skills init
  npx skills init && npx skills build`,
  options: {},
  maxPositionals: 0,
  async run(_values, _positionals, io) {
    // lstat: a link counts, even one whose target is missing (writing through it would create its target).
    const existing = [...CONFIG_FILE_NAMES, SKILL_FILE].filter((file) => isPresent(join(io.cwd, file)));
    if (existing.length > 0) {
      write(io.stderr, `skills init: ${existing.join(", ")} already ${existing.length === 1 ? "exists" : "exist"}; nothing was written.`);
      write(io.stderr, "Edit what is there (`skills build` compiles it), or move it away to start over.");
      return 2;
    }
    // package.json is read (and found valid) before anything is written, so a failure leaves the folder as it was.
    const packageJson = readPackageJson(join(io.cwd, "package.json"));
    if (packageJson === "invalid") {
      write(io.stderr, 'skills init: package.json is not a valid JSON object, or its "scripts" is not an object; nothing was written. Fix it and run `skills init` again.');
      return 2;
    }

    const done: string[] = [];
    // Everything or nothing: what this run created is removed again when a later step fails (a file named
    // `skills` in the way, a full or read-only disk), and package.json is replaced whole, never rewritten in place.
    const created: string[] = [];
    let doing = "";
    try {
      doing = `create ${dirname(SKILL_FILE)}`;
      const folder = mkdirSync(join(io.cwd, dirname(SKILL_FILE)), { recursive: true });
      if (folder) created.push(folder);
      for (const [file, text] of [
        ["skills.config.ts", CONFIG],
        [SKILL_FILE, SKILL],
      ] as const) {
        doing = `create ${file}`;
        writeFileSync(join(io.cwd, file), text, { flag: "wx" }); // "wx": fail rather than overwrite a file made meanwhile
        created.push(join(io.cwd, file));
        done.push(`Created ${file}`);
      }
      if (packageJson && "unread" in packageJson) {
        done.push(`Left package.json as it is (${packageJson.unread}): add "${SCRIPT_NAME}": "${SCRIPT}" to its scripts yourself`);
      } else if (packageJson) {
        const scripts = packageJson.value.scripts ?? {};
        if (scripts[SCRIPT_NAME] === undefined) {
          doing = "update package.json";
          packageJson.value.scripts = { ...scripts, [SCRIPT_NAME]: SCRIPT };
          const replacement = join(io.cwd, `.package.json.skills-init-${process.pid}`);
          created.push(replacement);
          const fd = openSync(replacement, "wx");
          try {
            fchmodSync(fd, packageJson.mode); // its own mode, not the umask's: a private package.json stays private
            writeFileSync(fd, `${JSON.stringify(packageJson.value, null, packageJson.indent)}\n`);
          } finally {
            closeSync(fd);
          }
          renameSync(replacement, join(io.cwd, "package.json"));
          created.pop();
          done.push(`Added "${SCRIPT_NAME}": "${SCRIPT}" to the scripts in package.json`);
        } else {
          done.push(`Kept the existing "${SCRIPT_NAME}" script in package.json`);
        }
      }
    } catch (error) {
      for (const path of created.reverse()) removeCreated(path);
      if (!isSystemError(error)) throw error;
      write(io.stderr, `skills init: ${new FileSystemError(doing, error).message}; nothing was written.`);
      return 2;
    }

    write(
      io.stdout,
      `${done.join("\n")}

Next steps:
  1. Write a skill: copy skills/${EXAMPLE_SKILL}/ to skills/<your-skill>/ and edit its SKILL.md.
     Its description says what the skill does and when to use it: agents choose skills by it.
  2. Build the bundle: npx skills build   (CI: npx skills check fails on a broken skill)
  3. Use it in your server:
       import { getPrompt } from "./dist/skills/index.js";
       const systemPrompt = getPrompt("assistant");`,
    );
    return 0;
  },
};

interface PackageJson {
  value: { scripts?: Record<string, string> } & Record<string, unknown>;
  /** The file's own indentation, kept when it is rewritten. */
  indent: string;
  /** Its permission bits, kept too. */
  mode: number;
}

/**
 * package.json, when it is a regular file: read without following a link and non-blocking, so that a FIFO there
 * cannot hang init. A link is not written through (its target may be anywhere) nor replaced by a file, and a FIFO,
 * device or folder is not read: `unread` says which, and init leaves it alone.
 */
function readPackageJson(path: string): PackageJson | { unread: string } | "invalid" | undefined {
  let entry;
  try {
    entry = lstatSync(path);
  } catch {
    return undefined; // none, or none that can be reached: nothing to read or replace
  }
  if (entry.isSymbolicLink()) return { unread: "a symbolic link" };
  let text: string;
  let mode: number;
  try {
    const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    try {
      const stats = fstatSync(fd);
      if (!stats.isFile()) return { unread: "not a regular file" };
      mode = stats.mode & 0o777;
      text = readFileSync(fd, "utf8");
    } finally {
      closeSync(fd);
    }
  } catch {
    return { unread: "not readable" };
  }
  try {
    const value: unknown = JSON.parse(text);
    if (!isPlainObject(value) || !(value.scripts === undefined || isPlainObject(value.scripts))) return "invalid";
    return { value: value as PackageJson["value"], indent: /^[ \t]+(?=")/m.exec(text)?.[0] ?? "  ", mode };
  } catch {
    return "invalid";
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Whether anything, a link included, is at `path`; not when a part of the path is missing or is a file. */
/** Removes what this run created, as far as it can: a failure to is no reason to hide the one that stopped init. */
function removeCreated(path: string): void {
  try {
    rmSync(path, { recursive: true, force: true });
  } catch {
    // left in place
  }
}

function isPresent(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}
