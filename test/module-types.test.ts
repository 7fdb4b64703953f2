import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { expect, it } from "vitest";
import { REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const TSC = join(REPO, "node_modules/typescript/bin/tsc");

/**
 * Compiled with tsc against a real build's .d.ts: every line without `@ts-expect-error` must type-check, and
 * every `@ts-expect-error` must mark a real error (tsc reports an unused one), so wrong ids and names are proven
 * to fail and right ones to pass.
 */
const FIXTURE = `import { agents, getPrompt, getSkill, listUserInvocable, renderSkill, skillTool, type AgentId, type SkillEntry, type SkillFields, type SkillName } from "./dist/skills/index.js";
import * as chat from "./dist/skills/agents/chat.js";
import type { OptionalFieldName } from "${REPO}/src/compile/model.js";
import type { SkillEntry as RuntimeEntry } from "${REPO}/src/runtime/helpers.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const proves = <T extends true>(): T => true as T;

proves<Equal<AgentId, "coding" | "chat">>();
proves<Equal<SkillName<"coding">, "commit" | "deploy">>();
proves<Equal<SkillName<"chat">, "review">>();

const prompt: string = getPrompt("coding");
// @ts-expect-error: not an agent
getPrompt("nope");

const commit: SkillEntry<"commit" | "deploy"> = getSkill("coding", "commit");
// @ts-expect-error: no such skill
getSkill("coding", "no-such-skill");
// @ts-expect-error: a skill of another agent
getSkill("chat", "commit");
// @ts-expect-error: not an agent
getSkill("nope", "commit");

renderSkill("coding", "deploy", "app eu");
renderSkill("chat", "review");
// @ts-expect-error: no such skill
renderSkill("chat", "deploy");

const tools: ("commit")[] = skillTool("coding").parameters.properties.skill.enum;
const none: null = skillTool("chat");
const either = skillTool("chat" as AgentId);
// @ts-expect-error: may be null for some agent
either.parameters;

const fields: SkillFields = commit.fields;
const tags: readonly string[] | undefined = fields.tags;
const tools2: readonly string[] | undefined = commit.fields["allowed-tools"];
const extra: unknown = commit.extra.anything;
// @ts-expect-error: deep readonly
commit.fields.tags?.push("x");
// @ts-expect-error: readonly
agents.coding.prompt = "";
const names: ("commit" | "deploy")[] = agents.coding.skills.map((skill) => skill.name);
const users: readonly SkillEntry<"review">[] = listUserInvocable("chat");

// The per-agent module has only its agent.
chat.getPrompt("chat");
// @ts-expect-error: not in agents/chat.js
chat.getPrompt("coding");

// The .d.ts cannot drift from the model or the runtime.
proves<Equal<keyof SkillFields, OptionalFieldName>>();
proves<Equal<keyof SkillEntry, keyof RuntimeEntry>>();

export { prompt, none, tags, tools, tools2, extra, names, users };
`;

/** The exports for the seed designs (issue 16), over a second build whose agents use the other tool styles. */
const SEEDS_FIXTURE = `import { callSkillTool, expandCommand, findSkill, getSkill, renderSkill, skillTool, SkillError, type SkillErrorCode, type SkillFolderFile, type SkillStructure, type SkillToolAnswer } from "./seeds/dist/skills/index.js";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const proves = <T extends true>(): T => true as T;

const found: { readonly name: "alpha" } | undefined = findSkill("tasks", "anything typed at run time");
const command: string | undefined = expandCommand("docs", "/alpha now");
const files: readonly SkillFolderFile[] = getSkill("docs", "alpha").files;
const bytes: number = getSkill("docs", "alpha").structure.bytes;
const summary: string = renderSkill("docs", "alpha", "", { files: true });
// @ts-expect-error: not an option
renderSkill("docs", "alpha", "", { tree: true });

const read = skillTool("docs");
proves<Equal<typeof read.name, "read_skill">>();
proves<Equal<keyof typeof read.parameters.properties, "name">>();
const task = skillTool("tasks");
proves<Equal<typeof task.name, "run_skill">>();
proves<Equal<keyof typeof task.parameters.properties, "name" | "args">>();
proves<Equal<(typeof task.parameters.required)[0], "name">>();

const text: string = callSkillTool("docs", JSON.parse("{}"));
const answer: SkillToolAnswer<"alpha"> = callSkillTool("tasks", { name: "alpha" });
const baseDir: string = answer.base_dir;
// @ts-expect-error: the tasks tool answers an object
const notText: string = callSkillTool("tasks", { name: "alpha" });

try {
  getSkill("docs", "alpha");
} catch (error) {
  if (error instanceof SkillError) {
    const code: SkillErrorCode = error.code;
    proves<Equal<SkillErrorCode, "NOT_FOUND" | "INVALID_PARAM">>();
    console.log(code);
  }
}

export { found, command, files, bytes, summary, text, baseDir, notText };
`;

it("the generated .d.ts types agent ids and skill names as literal unions (tsc over a fixture)", async () => {
  const dir = await tempDir();
  await writeTree(dir, {
    "package.json": JSON.stringify({ type: "module" }),
    "skills.config.json": JSON.stringify({
      agents: {
        coding: { skills: [{ root: "skills", available: ["commit", "deploy"] }] },
        chat: { skills: [{ root: "skills", available: ["review"] }] },
      },
    }),
    "skills/commit/SKILL.md": skillMd("commit"),
    "skills/deploy/SKILL.md": `---\nname: deploy\ndescription: Ship it.\ndisable-model-invocation: true\n---\n\nDeploy $0.\n`,
    "skills/review/SKILL.md": `---\nname: review\ndescription: Review.\ndisable-model-invocation: true\n---\n\nReview.\n`,
    "check.ts": FIXTURE,
    "seeds/skills.config.json": JSON.stringify({
      agents: {
        docs: { skills: [{ root: "skills" }], tool: { style: "read_skill" } },
        tasks: { skills: [{ root: "skills" }], tool: { style: "Skill", name: "run_skill" } },
      },
    }),
    "seeds/skills/alpha/SKILL.md": skillMd("alpha"),
    "seeds.ts": SEEDS_FIXTURE,
  });
  expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
  expect((await runCli(["build"], { cwd: join(dir, "seeds") })).code).toBe(0);
  const args = ["--noEmit", "--strict", "--noUncheckedIndexedAccess", "--skipLibCheck", "--module", "nodenext", "--target", "es2022", "--types", "node", "--typeRoots", join(REPO, "node_modules/@types"), "check.ts", "seeds.ts"];
  const result = await promisify(execFile)(process.execPath, [TSC, ...args], { cwd: dir }).then(
    () => "",
    (error: { stdout: string }) => error.stdout,
  );
  expect(result).toBe("");
  // And the fixture really is checked: a wrong name without its @ts-expect-error fails.
  await writeTree(dir, { "wrong.ts": `import { getSkill } from "./dist/skills/index.js";\ngetSkill("coding", "no-such-skill");\n` });
  const wrong = await promisify(execFile)(process.execPath, [TSC, ...args.slice(0, -2), "wrong.ts"], { cwd: dir }).then(
    () => "",
    (error: { stdout: string }) => error.stdout,
  );
  expect(wrong).toContain(`Argument of type '"no-such-skill"' is not assignable to parameter of type '"commit" | "deploy"'`);
}, 60_000);
