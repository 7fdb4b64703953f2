import { execFile } from "node:child_process";
import { mkdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { build as esbuild, context as esbuildContext, formatMessages, type BuildFailure } from "esbuild";
import { createServer, createLogger } from "vite";
import { describe, expect, it } from "vitest";
import esbuildSkills from "../src/plugins/esbuild.js";
import { VirtualSkills } from "../src/plugins/virtual-modules.js";
import viteSkills from "../src/plugins/vite.js";
import type esbuildDeclared from "../types/esbuild.js";
import type viteDeclared from "../types/vite.js";
import { pathToFileURL } from "node:url";
import { REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const run = promisify(execFile);

// The hand-written declarations of the entry points (types/*.d.ts) and the implementations agree both ways.
const _viteTypes: [typeof viteDeclared, typeof viteSkills] = [viteSkills, {} as typeof viteDeclared];
const _esbuildTypes: [typeof esbuildDeclared, typeof esbuildSkills] = [esbuildSkills, {} as typeof esbuildDeclared];
void _viteTypes;
void _esbuildTypes;

const BROKEN = "---\nname: alpha\ndescription: [broken\n---\n\nAlpha.\n";
/** An import of an agent the config lacks, spelling a workflow command, a terminal escape and a bell; and how errors quote it. */
const FORGED_AGENT_IMPORT = "virtual:skills/x\r::error file=src/auth.ts,line=1::FORGED\x1b[2J\x07##[error]y";
const FORGED_AGENT_ESCAPED = "virtual:skills/x\\r::error file=src/auth.ts,line=1::FORGED\\x1b[2J\\x07##\\x5berror]y";

/**
 * A project of two agents, with `skillbake`, `vite` and `esbuild` in its node_modules as an install would put them
 * (links to this repository and its dependencies), and a server that prints its agents' prompts.
 */
async function project(): Promise<string> {
  const dir = await tempDir("skillbake-plugins-");
  await writeTree(dir, {
    "skills.config.json": JSON.stringify({
      location: "relative",
      agents: { coding: { skills: [{ root: "skills" }] }, chat: { skills: [{ root: "skills", available: ["beta"] }] } },
    }),
    "skills/alpha/SKILL.md": skillMd("alpha"),
    "skills/beta/SKILL.md": skillMd("beta", "'Beta things: <b> & \"quotes\"; naïve café.'"),
    "server.ts": 'import { getPrompt } from "virtual:skills";\nimport * as chat from "virtual:skills/chat";\n\nprocess.stdout.write(JSON.stringify([getPrompt("coding"), chat.getPrompt("chat")]));\n',
    "vite.config.ts": 'import skills from "skillbake/vite";\n\nexport default { plugins: [skills()] };\n',
    "tsconfig.json": JSON.stringify({ compilerOptions: { strict: true, module: "NodeNext", moduleResolution: "NodeNext", noEmit: true, skipLibCheck: true, types: ["node"] }, include: ["*.ts"] }),
  });
  await mkdir(join(dir, "node_modules", "@types"), { recursive: true });
  await symlink(REPO, join(dir, "node_modules", "skillbake"));
  for (const name of ["vite", "esbuild", "@types/node"]) await symlink(join(REPO, "node_modules", name), join(dir, "node_modules", name));
  return dir;
}

async function viteBuild(dir: string): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(REPO, "node_modules", "vite", "bin", "vite.js"), "build", "--ssr", "server.ts"], { cwd: dir, env: { ...process.env, NO_COLOR: "1" } });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, output: failed.stdout + failed.stderr };
  }
}

/** The prompts `skills build` writes, coding's then chat's. */
async function builtPrompts(dir: string): Promise<string[]> {
  expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
  return Promise.all(["coding", "chat"].map((agent) => readFile(join(dir, "dist", "skills", "prompts", `${agent}.txt`), "utf8")));
}

describe("skillbake/vite", () => {
  it("builds a server with `vite build --ssr` that prints exactly the prompts `skills build` writes", async () => {
    const dir = await project();
    const built = await viteBuild(dir);
    expect(built.code, built.output).toBe(0);
    const { stdout } = await run(process.execPath, [join(dir, "dist", "server.mjs")]);
    expect(JSON.parse(stdout)).toEqual(await builtPrompts(dir));
  });

  it("writes an agent's published folder on `vite build`, the bytes `skills build` writes", async () => {
    const dir = await project();
    const config = JSON.parse(await readFile(join(dir, "skills.config.json"), "utf8"));
    config.agents.coding.publish = { wellKnown: "public" };
    await writeFile(join(dir, "skills.config.json"), JSON.stringify(config));
    const built = await viteBuild(dir);
    expect(built.code, built.output).toBe(0);
    const index = await readFile(join(dir, "public/.well-known/agent-skills/index.json"), "utf8");
    expect(JSON.parse(index).skills.map((skill: { name: string }) => skill.name)).toEqual(["alpha", "beta"]);
    expect((await runCli(["build", "--check"], { cwd: dir })).stderr).not.toContain("agent-skills");
    await rm(join(dir, "public"), { recursive: true });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect(await readFile(join(dir, "public/.well-known/agent-skills/index.json"), "utf8")).toBe(index);
  });

  it("fails `vite build` with the error at file:line:col, as `skills check` prints it", async () => {
    const dir = await project();
    await writeFile(join(dir, "skills", "alpha", "SKILL.md"), BROKEN);
    const built = await viteBuild(dir);
    expect(built.code).not.toBe(0);
    const check = await runCli(["check"], { cwd: dir });
    const report = check.stderr.slice(0, check.stderr.lastIndexOf("\n\n"));
    expect(report).toContain("skills/alpha/SKILL.md\n  3:14  error");
    expect(built.output).toContain(report);
    expect(built.output).toContain(`${join(dir, "skills", "alpha", "SKILL.md")}:3:14`);
  });

  it("escapes an import naming no agent: a forged command, ESC and BEL in the id reach vite's log escaped", async () => {
    const dir = await project();
    await writeFile(join(dir, "server.ts"), `import * as forged from ${JSON.stringify(FORGED_AGENT_IMPORT)};\nconsole.log(forged);\n`);
    const built = await viteBuild(dir);
    expect(built.code).not.toBe(0);
    expect(built.output).toContain(`skillbake: "${FORGED_AGENT_ESCAPED}" names no agent of the config`);
    expect(built.output).not.toMatch(/[\r\x07\x1b]/);
    expect(built.output.split("\n").filter((line) => /^\s*(::|##\[)/.test(line))).toEqual([]);
  });

  it("writes skills-env.d.ts, so tsc checks the agent ids of a server importing virtual:skills", async () => {
    const dir = await project();
    expect((await viteBuild(dir)).code).toBe(0);
    // One run (tsc is slow on a busy machine): vite.config.ts (typed through skillbake/vite) and server.ts pass.
    await writeFile(join(dir, "wrong.ts"), 'import { getPrompt, getSkill } from "virtual:skills";\n\ngetPrompt("cooking");\ngetSkill("chat", "alpha");\n');
    const failed = await run(process.execPath, [join(REPO, "node_modules", "typescript", "bin", "tsc"), "-p", "."], { cwd: dir }).catch((error: { stdout: string }) => error);
    expect("stdout" in failed ? failed.stdout : "").toMatch(/^wrong\.ts\(3,11\): error TS2345: Argument of type '"cooking"'[^\n]*\nwrong\.ts\(4,18\): error TS2345: Argument of type '"alpha"'[^\n]*\n$/);
  }, 120_000);

  it("writes the declaration file where `types` says, and never over a file skillbake did not write", async () => {
    const dir = await project();
    await writeFile(join(dir, "vite.config.ts"), 'import skills from "skillbake/vite";\n\nexport default { plugins: [skills({ types: "src/types/skills.d.ts" })] };\n');
    await mkdir(join(dir, "src", "types"), { recursive: true });
    await writeFile(join(dir, "src", "types", "skills.d.ts"), "// mine\n");
    const refused = await viteBuild(dir);
    expect(refused.code).not.toBe(0);
    expect(refused.output).toContain(`${join(dir, "src", "types", "skills.d.ts")}: exists and was not written by skillbake`);
    expect(await readFile(join(dir, "src", "types", "skills.d.ts"), "utf8")).toBe("// mine\n");

    await rm(join(dir, "src", "types", "skills.d.ts"));
    expect((await viteBuild(dir)).code).toBe(0);
    expect(await readFile(join(dir, "src", "types", "skills.d.ts"), "utf8")).toContain('declare module "virtual:skills/chat" {');
  });

  it("recompiles in dev on a change: ssrLoadModule sees an edited, added and removed skill; an error keeps the last good modules", async () => {
    const dir = await project();
    const errors: string[] = [];
    const logger = createLogger("error", { allowClearScreen: false });
    logger.error = (message) => void errors.push(message);
    const server = await createServer({ root: dir, configFile: false, customLogger: logger, plugins: [viteSkills()], server: { middlewareMode: true, hmr: false, ws: false } });
    try {
      const prompt = async () => ((await server.ssrLoadModule("/prompt.ts")) as { prompt: string }).prompt;
      await writeFile(join(dir, "prompt.ts"), 'import { getPrompt } from "virtual:skills";\n\nexport const prompt = getPrompt("coding");\n');
      const eventually = async (expected: (text: string) => boolean) => {
        for (let attempt = 0; attempt < 100 && !expected(await prompt()); attempt++) await new Promise((resolve) => setTimeout(resolve, 50));
        return prompt();
      };
      expect(await prompt()).toContain("Does alpha things.");

      await writeFile(join(dir, "skills", "alpha", "SKILL.md"), skillMd("alpha", "Edited alpha."));
      expect(await eventually((text) => text.includes("Edited alpha."))).toContain("<description>Edited alpha.</description>");

      await writeFile(join(dir, "skills", "alpha", "SKILL.md"), BROKEN);
      await writeTree(dir, { "skills/gamma/SKILL.md": skillMd("gamma") }); // not served: the compilation with it fails
      for (let attempt = 0; attempt < 100 && errors.length === 0; attempt++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(errors.join("\n")).toContain("skills/alpha/SKILL.md\n  3:14  error    the frontmatter is not valid YAML");
      expect(await prompt()).toContain("<description>Edited alpha.</description>");
      expect(await prompt()).not.toContain("gamma");

      await writeFile(join(dir, "skills", "alpha", "SKILL.md"), skillMd("alpha"));
      expect(await eventually((text) => text.includes("<name>gamma</name>"))).toContain("Does alpha things.");
      await rm(join(dir, "skills", "gamma"), { recursive: true });
      expect(await eventually((text) => !text.includes("gamma"))).toBe((await builtPrompts(dir))[0]);
    } finally {
      await server.close();
    }
  });
});

describe("skillbake/vite's dev modules", () => {
  /** 70 skills (more than one record module), two agents, each with its own staged copies (so locations differ). */
  async function catalogue(): Promise<string> {
    const dir = await tempDir("skillbake-dev-");
    const tree: Record<string, string> = {
      "skills.config.json": JSON.stringify({ stage: { layout: "per-agent" }, agents: { coding: { skills: [{ root: "skills" }] }, chat: { skills: [{ root: "skills", available: ["skill-3", "skill-40"] }] } } }),
    };
    for (let index = 0; index < 70; index++) tree[`skills/skill-${index}/SKILL.md`] = skillMd(`skill-${index}`, `Does thing ${index}. Use when ${index} is needed.`, `# Skill ${index}\n\nBody ${index}: "quoted" naïve \u2028 line.`);
    await writeTree(dir, tree);
    return dir;
  }

  /** What a module's agents show through the runtime: each agent, its prompt, every skill by name, its tool and commands. */
  function observe(module: Record<string, (...args: unknown[]) => unknown>, agents: string[]): unknown {
    return agents.map((agent) => {
      const data = (module.agents as unknown as Record<string, { skills: { name: string }[] }>)[agent]!;
      return [data, module.getPrompt!(agent), data.skills.map((skill) => module.getSkill!(agent, skill.name)), module.skillTool!(agent, "anthropic"), module.listUserInvocable!(agent)];
    });
  }

  /** The dev server's modules of `dir`, written as files (each record module's virtual id made a relative path) and imported. */
  async function importDev(virtual: VirtualSkills, id: string): Promise<Record<string, (...args: unknown[]) => unknown>> {
    const out = await tempDir("skillbake-dev-out-");
    const fileOf = (virtualId: string) => `${virtualId.replace(/[^a-z0-9]/gi, "_")}.js`;
    for (const known of [...virtual.ids(), ...Array.from({ length: 64 }, (_, n) => `virtual:skills/~records/${n}`)]) {
      const text = virtual.module(known);
      if (text !== undefined) await writeFile(join(out, fileOf(known)), text.replace(/from "(virtual:skills[^"]*)"/g, (_, specifier: string) => `from "./${fileOf(specifier)}"`));
    }
    await writeFile(join(out, "package.json"), '{ "type": "module" }');
    return (await import(pathToFileURL(join(out, fileOf(id))).href)) as Record<string, (...args: unknown[]) => unknown>;
  }

  it("serve the same agents, prompts and skills as the bundle's modules, from several record modules", async () => {
    const dir = await catalogue();
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const virtual = new VirtualSkills({}, dir, true);
    expect((await virtual.update()).failure).toBeUndefined();
    expect(virtual.module("virtual:skills/~records/1")).toBeDefined();
    for (const [id, file, agents] of [["virtual:skills", "index.js", ["coding", "chat"]], ["virtual:skills/coding", "agents/coding.js", ["coding"]], ["virtual:skills/chat", "agents/chat.js", ["chat"]]] as const) {
      const built = (await import(pathToFileURL(join(dir, "dist/skills", file)).href)) as Record<string, (...args: unknown[]) => unknown>;
      expect(observe(await importDev(virtual, id), [...agents]), id).toEqual(observe(built, [...agents]));
    }
  });

  it("an edit of one skill's body changes one record module, not the modules that list the skills", async () => {
    const dir = await catalogue();
    const virtual = new VirtualSkills({}, dir, true);
    await virtual.update();
    const file = join(dir, "skills/skill-7/SKILL.md");
    await writeFile(file, skillMd("skill-7", "Does thing 7. Use when 7 is needed.", "# Skill 7\n\nEdited."));
    virtual.noteChanges([file]);
    const { changed } = await virtual.update();
    expect(changed).toHaveLength(1);
    expect(changed[0]).toMatch(/^virtual:skills\/~records\/\d+$/);
    expect(virtual.module(changed[0]!)).toContain("Edited.");
  });
});

describe("skillbake/esbuild", () => {
  const bundle = (dir: string) =>
    esbuild({ absWorkingDir: dir, entryPoints: ["server.ts"], bundle: true, platform: "node", format: "esm", outfile: join(dir, "out", "server.mjs"), logLevel: "silent", plugins: [esbuildSkills()] });

  it("bundles a server that prints exactly the prompts `skills build` writes", async () => {
    const dir = await project();
    await bundle(dir);
    const { stdout } = await run(process.execPath, [join(dir, "out", "server.mjs")]);
    expect(JSON.parse(stdout)).toEqual(await builtPrompts(dir));
  });

  it("in watch mode, rebuilds when a SKILL.md is edited (the skills' files are watched, not only their folders)", async () => {
    const dir = await project();
    let builds = 0;
    const context = await esbuildContext({
      absWorkingDir: dir,
      entryPoints: ["server.ts"],
      bundle: true,
      platform: "node",
      format: "esm",
      outfile: join(dir, "out", "server.mjs"),
      logLevel: "silent",
      plugins: [esbuildSkills(), { name: "count", setup: (build) => void build.onEnd(() => void builds++) }],
    });
    try {
      await context.watch();
      for (let attempt = 0; attempt < 600 && builds === 0; attempt++) await new Promise((resolve) => setTimeout(resolve, 50));
      await writeFile(join(dir, "skills", "alpha", "SKILL.md"), skillMd("alpha", "Edited while watched."));
      let output = "";
      for (let attempt = 0; attempt < 600 && !output.includes("Edited while watched."); attempt++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        output = await readFile(join(dir, "out", "server.mjs"), "utf8").catch(() => "");
      }
      expect(output).toContain("Edited while watched.");
    } finally {
      await context.dispose();
    }
  }, 60_000);

  it("fails the build with an esbuild error at the SKILL.md's file, line and column", async () => {
    const dir = await project();
    await writeFile(join(dir, "skills", "alpha", "SKILL.md"), BROKEN);
    const failure = (await bundle(dir).catch((error: BuildFailure) => error)) as BuildFailure;
    expect(failure.errors).toHaveLength(1);
    const [error] = failure.errors;
    expect(error!.text).toMatch(/^the frontmatter is not valid YAML: .*\[yaml-invalid\]$/);
    // esbuild's columns count from 0: the caret is under the `[` the hint names.
    expect(error!.location).toMatchObject({ file: "skills/alpha/SKILL.md", line: 3, column: 13, lineText: "description: [broken" });
    expect(error!.notes[0]!.text).toContain('Quote the value: description: "[broken"');
  });

  it("counts the error's column in bytes, as esbuild does, after non-ASCII text: its code frame points at the error", async () => {
    const dir = await project();
    await writeFile(join(dir, "skills", "alpha", "SKILL.md"), BROKEN.replace("[broken", "été: broken"));
    const failure = (await bundle(dir).catch((error: BuildFailure) => error)) as BuildFailure;
    // The YAML error is at the ": " after "été".
    expect(failure.errors[0]!.location).toMatchObject({ line: 3, column: Buffer.byteLength("description: été"), lineText: "description: été: broken" });
    const frame = (await formatMessages(failure.errors, { kind: "error" })).join("\n").split("\n");
    const quoted = frame.findIndex((line) => line.includes("description: été: broken"));
    expect(frame[quoted + 1]!.indexOf("^")).toBe(frame[quoted]!.indexOf("été") + "été".length);
  });

  it("neither writes through nor waits on a link or a FIFO committed in place of skills-env.d.ts", async () => {
    const dir = await project();
    const outside = join(await tempDir(), "victim.d.ts");
    await writeFile(outside, "// Generated by skillbake, or so it says\n");
    await symlink(outside, join(dir, "skills-env.d.ts"));
    const linked = (await bundle(dir).catch((error: BuildFailure) => error)) as BuildFailure;
    expect(linked.errors[0]!.text).toContain("skills-env.d.ts: is a symlink; not followed");
    expect(await readFile(outside, "utf8")).toBe("// Generated by skillbake, or so it says\n");

    await rm(join(dir, "skills-env.d.ts"));
    await promisify(execFile)("mkfifo", [join(dir, "skills-env.d.ts")]);
    const fifo = (await bundle(dir).catch((error: BuildFailure) => error)) as BuildFailure;
    expect(fifo.errors[0]!.text).toContain("skills-env.d.ts: is not a regular file; not followed");
  });

  it("escapes an import naming no agent: a forged command, ESC and BEL in the id reach esbuild's log escaped", async () => {
    const dir = await project();
    await writeFile(join(dir, "server.ts"), `import * as forged from ${JSON.stringify(FORGED_AGENT_IMPORT)};\nconsole.log(forged);\n`);
    const failure = (await bundle(dir).catch((error: BuildFailure) => error)) as BuildFailure;
    expect(failure.errors.map((error) => error.text)).toEqual([`"${FORGED_AGENT_ESCAPED}" names no agent of the config; the modules are "virtual:skills", "virtual:skills/coding", "virtual:skills/chat"`]);
    const printed = (await formatMessages(failure.errors, { kind: "error" })).join("\n");
    expect(printed).not.toMatch(/[\r\x07\x1b]/);
    expect(printed.split("\n").filter((line) => /^\s*(::|##\[)/.test(line))).toEqual([]);
  });

  it("quotes a forged workflow command in a SKILL.md so that no line of esbuild's log can run it", async () => {
    const dir = await project();
    await writeFile(join(dir, "skills", "alpha", "SKILL.md"), "---\nname: alpha\ndescription: A skill.\n::error file=src/auth.ts,line=1::FORGED\n---\nBody.\n");
    const failure = (await bundle(dir).catch((error: BuildFailure) => error)) as BuildFailure;
    expect(failure.errors).toHaveLength(1);
    const [error] = failure.errors;
    expect(error!.location).toMatchObject({ file: "skills/alpha/SKILL.md", line: 4, lineText: "\\x3a:error file=src/auth.ts,line=1::FORGED" });
    const printed = (await formatMessages(failure.errors, { kind: "error" })).join("\n");
    expect(printed.split("\n").filter((line) => /^\s*(::|##\[)/.test(line))).toEqual([]);
  });
});
