import fc from "fast-check";
import { beforeEach, describe, expect, it } from "vitest";
import { renderInline, renderPrompt, type PromptSkill } from "../src/compile/render.js";
import { applyArguments, createRuntime, deepFreeze, MAX_EXPANDED_LENGTH, oneLine, SkillError, splitShellWords, type Runtime, type SkillFile, type SkillTable } from "../src/runtime/helpers.js";

describe("splitShellWords", () => {
  it.each([
    ["a b  c", ["a", "b", "c"]],
    ["  padded\tand\nspaced  ", ["padded", "and", "spaced"]],
    [`'single quoted' "double quoted"`, ["single quoted", "double quoted"]],
    [`'it''s' "say \\"hi\\"" back\\ slash`, ["its", 'say "hi"', "back slash"]],
    [`"a \\$HOME \\n" 'no \\escape'`, ["a $HOME \\n", "no \\escape"]],
    [`pre"mid dle"post x`, ["premid dlepost", "x"]],
    [`"" '' x`, ["", "", "x"]],
    [`"unclosed rest of line`, ["unclosed rest of line"]],
    ["", []],
  ])("%j → %j", (text, words) => {
    expect(splitShellWords(text)).toEqual(words);
  });

  it("words without quotes, backslashes or whitespace inside come back as given", () => {
    const word = fc.stringMatching(/^[^\s'"\\]+$/);
    fc.assert(
      fc.property(fc.array(word), (words) => {
        expect(splitShellWords(words.join(" "))).toEqual(words);
      }),
    );
  });
});

describe("oneLine", () => {
  // The plain pattern: what oneLine gives, in time that grows with the square of a run of spaces.
  const plainPattern = (text: string) => text.replace(/\s*[\r\n\v\f\u0085\u2028\u2029]+\s*/g, " ");

  it("gives what the plain pattern gives: each run of whitespace that holds a line break (U+0085 too) as one space", () => {
    const text = fc.array(fc.constantFrom(" ", "\t", "\n", "\r", "\r\n", "\v", "\f", "\u0085", "\u00a0", "\u2028", "\u2029", "a", "b"), { maxLength: 24 }).map((parts) => parts.join(""));
    fc.assert(fc.property(text, (value) => oneLine(value) === plainPattern(value)), { numRuns: 5_000 });
    expect(oneLine("a \n\t b\u0085c")).toBe("a b c");
  });

  it("takes linear time over a long run of spaces with no line break (the plain pattern: 5 s for 100,000)", () => {
    const started = performance.now();
    expect(oneLine(`x${" ".repeat(1_000_000)}y`)).toHaveLength(1_000_002);
    expect(oneLine(`x${" \u0085".repeat(200_000)}y`)).toBe(`x${" ".repeat(200_000)}y`);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe("applyArguments (SPEC §6)", () => {
  it("$ARGUMENTS is the whole (trimmed) string", () => {
    expect(applyArguments("Review $ARGUMENTS now.", "  src/a.ts 'b c'  ")).toBe("Review src/a.ts 'b c' now.");
  });

  it("$ARGUMENTS[N] and $N are the N-th shell word, 0-based", () => {
    expect(applyArguments("from $ARGUMENTS[0] to $1, twice: $0", `"my branch" main`)).toBe("from my branch to main, twice: my branch");
  });

  it("an index past the last word is empty", () => {
    expect(applyArguments("[$0] [$1] [$ARGUMENTS[7]]", "only")).toBe("[only] [] []");
  });

  it("no placeholder: ARGUMENTS is appended, after one blank line", () => {
    expect(applyArguments("# Body", "fix the build")).toBe("# Body\n\nARGUMENTS: fix the build");
  });

  it("no placeholder and empty (or blank) args: the body unchanged", () => {
    expect(applyArguments("# Body", "")).toBe("# Body");
    expect(applyArguments("# Body", "   ")).toBe("# Body");
  });

  it("placeholders with empty args become empty, and nothing is appended", () => {
    expect(applyArguments("a[$ARGUMENTS]b[$0]", "")).toBe("a[]b[]");
  });

  it("placeholders inside the arguments are not expanded again; `$&` patterns are literal", () => {
    expect(applyArguments("run $ARGUMENTS", "$1 $ARGUMENTS $&")).toBe("run $1 $ARGUMENTS $&");
    expect(applyArguments("run $0 $1", "$1 x")).toBe("run $1 x");
  });

  it("a result past the cap is a SkillError, found before it is built: 500,000 placeholders of a 1,000-character argument", () => {
    const args = "x".repeat(1000);
    for (const body of ["$ARGUMENTS".repeat(500_000), "$0".repeat(500_000), "$ARGUMENTS[0] ".repeat(500_000)]) {
      expect(thrown(() => applyArguments(body, args))).toMatchObject({ isSkillError: true, code: "INVALID_PARAM", message: expect.stringContaining(`at most ${MAX_EXPANDED_LENGTH}`) });
    }
    expect(thrown(() => applyArguments("# Body", "y".repeat(MAX_EXPANDED_LENGTH)))).toMatchObject({ code: "INVALID_PARAM" });
    // At the cap exactly, it is built.
    const body = "$ARGUMENTS".repeat(4);
    expect(applyArguments(body, "z".repeat(MAX_EXPANDED_LENGTH / 4))).toHaveLength(MAX_EXPANDED_LENGTH);
    expect(applyArguments("#", "w".repeat(MAX_EXPANDED_LENGTH - 14))).toHaveLength(MAX_EXPANDED_LENGTH);
  });
});

const file = (name: string, overrides: Partial<SkillFile> = {}): SkillFile => ({
  name,
  description: `Does ${name}.`,
  file: `skills/${name}/SKILL.md`,
  location: `/srv/skills/${name}/SKILL.md`,
  baseDir: `/srv/skills/${name}`,
  hash: "0".repeat(64),
  fields: {},
  extra: {},
  body: `# ${name}`,
  files: [{ path: "SKILL.md", size: 40 }],
  ...overrides,
});

/** A skill table of whole files: each record a function, as the modules hold them. */
const tableOf = (files: SkillFile[], agents: SkillTable["agents"]): SkillTable => ({ names: files.map((entry) => entry.name), files: files.map((entry) => () => entry), agents });

/** What `call` threw, as a SkillError's code and message; a TypeError or RangeError shows as itself. */
function thrown(call: () => unknown): { isSkillError: boolean; name: string; code?: string; message: string } {
  try {
    call();
  } catch (error) {
    const { name, code, message } = error as { name: string; code?: string; message: string };
    return { isSkillError: error instanceof SkillError, name, code, message };
  }
  throw new Error("did not throw");
}

describe("createRuntime", () => {
  const runtime = createRuntime(
    {
      main: { format: "pi", prompt: "PROMPT", modelInvocable: ["a"] },
      quiet: { format: "markdown", prompt: "", modelInvocable: [] },
    },
    () =>
      tableOf([file("a"), file("b", { fields: { "disable-model-invocation": true, "user-invocable": false } }), file("a", { file: "other/a/SKILL.md", body: "# second a" })], {
        main: [
          { file: 0, listed: true, mode: "available", source: 0 },
          { file: 1, listed: false, mode: "inline", source: 0 },
          { file: 2, listed: true, mode: "available", source: 1 },
        ],
        quiet: [],
      }),
  );

  it("getSkill returns the first of a name listed by several sources", () => {
    expect(runtime.getSkill("main", "a")).toMatchObject({ file: "skills/a/SKILL.md", source: 0, mode: "available" });
    expect(runtime.agents.main!.skills.map((skill) => skill.file)).toEqual(["skills/a/SKILL.md", "skills/b/SKILL.md", "other/a/SKILL.md"]);
  });

  it("listUserInvocable leaves out user-invocable: false, and lists a name once", () => {
    expect(runtime.listUserInvocable("main").map((skill) => skill.file)).toEqual(["skills/a/SKILL.md"]);
  });

  it("skillTool is null for an agent without model-invocable skills (an empty enum is invalid for tool APIs)", () => {
    expect(runtime.skillTool("quiet")).toBeNull();
    expect(runtime.skillTool("main")?.parameters.properties).toMatchObject({ skill: { enum: ["a"] } });
  });

  it("unknown names throw, naming what exists", () => {
    expect(() => runtime.getPrompt("nope")).toThrow('Unknown agent "nope". This bundle has: main, quiet.');
    expect(() => runtime.getPrompt("toString")).toThrow("Unknown agent");
    expect(() => runtime.renderSkill("main", "c")).toThrow('Unknown skill "c" for agent "main". Its skills are: a, b.');
    expect(() => runtime.getSkill("quiet", "a")).toThrow('Unknown skill "a": agent "quiet" has no skills.');
  });

  it("arguments of the wrong type are INVALID_PARAM SkillErrors, never a TypeError", () => {
    const calls: [string, () => unknown][] = [
      ["renderSkill args null", () => runtime.renderSkill("main", "a", null as never)],
      ["renderSkill args number", () => runtime.renderSkill("main", "a", 42 as never)],
      ["renderSkill args object", () => runtime.renderSkill("main", "a", { trim: 1 } as never)],
      ["renderSkill options null", () => runtime.renderSkill("main", "a", "", null as never)],
      ["renderSkill options string", () => runtime.renderSkill("main", "a", "", "files" as never)],
      ["renderSkill options list", () => runtime.renderSkill("main", "a", "", [] as never)],
      ["renderSkill files not boolean", () => runtime.renderSkill("main", "a", "", { files: "yes" } as never)],
      ["skillTool dialect unknown", () => runtime.skillTool("main", "gemini" as never)],
      ["skillTool dialect object", () => runtime.skillTool("main", {} as never)],
    ];
    for (const [what, call] of calls) expect(thrown(call), what).toMatchObject({ isSkillError: true, code: "INVALID_PARAM" });
    expect(thrown(() => runtime.renderSkill("main", "a", "", null as never)).message).toBe("The options are an object, not null.");
    expect(runtime.renderSkill("main", "a", undefined, undefined)).toBe(runtime.renderSkill("main", "a"));
    expect(runtime.renderSkill("main", "a", "", { files: false })).toBe(runtime.renderSkill("main", "a"));
  });

  it("cuts long name lists in errors", () => {
    const names = Array.from({ length: 60 }, (_, index) => `s${index}`);
    const big = createRuntime({ big: { format: "pi", prompt: "", modelInvocable: names } }, () =>
      tableOf(
        names.map((name) => file(name)),
        { big: names.map((_, index) => ({ file: index, listed: true, mode: "available" as const, source: 0 })) },
      ),
    );
    expect(() => big.getSkill("big", "x")).toThrow(/s48, s49 … \(10 more\)\.$/);
  });

  it("builds the skill table on the first lookup, not before, and only once", () => {
    let calls = 0;
    const lazy = createRuntime({ main: { format: "pi", prompt: "P", modelInvocable: ["a"] } }, () => {
      calls++;
      return tableOf([file("a")], { main: [{ file: 0, listed: true, mode: "available", source: 0 }] });
    });
    expect([lazy.getPrompt("main"), lazy.skillTool("main")?.name, lazy.agents.main!.prompt, calls]).toEqual(["P", "use_skill", "P", 0]);
    lazy.getSkill("main", "a");
    lazy.renderSkill("main", "a", "x");
    expect(lazy.agents.main!.skills).toHaveLength(1);
    expect(calls).toBe(1);
  });

  it("reads a skill's record on its own first lookup only: one getSkill of many builds one entry", () => {
    const names = ["a", "b", "c", "d"];
    const read: number[] = [];
    const lazy = createRuntime({ main: { format: "pi", prompt: "P", modelInvocable: names }, other: { format: "markdown", prompt: "", modelInvocable: ["c"] } }, () => ({
      names,
      files: names.map((name, index) => () => (read.push(index), file(name))),
      agents: { main: names.map((_, index) => ({ file: index, listed: true, mode: "available" as const, source: 0 })), other: [{ file: 2, listed: false, mode: "inline", source: 0 }] },
    }));
    const first = lazy.getSkill("main", "c");
    expect([first.body, read]).toEqual(["# c", [2]]);
    expect([lazy.findSkill("main", "c"), lazy.renderSkill("main", "c"), read]).toEqual([first, expect.stringContaining("# c"), [2]]);
    // Another agent that selects the same SKILL.md reads the record already read, with its own mode.
    expect([lazy.getSkill("other", "c").mode, read]).toEqual(["inline", [2]]);
    expect(lazy.expandCommand("main", "/a x")).toBe("[Skill: a]\n\n# a\n\nARGUMENTS: x");
    expect(read).toEqual([2, 0]);
    // Listing them all builds the rest, once, and hands out the entries already built.
    expect(lazy.agents.main!.skills[2]).toBe(first);
    expect(Object.isFrozen(lazy.agents.main!.skills[3]!.files)).toBe(true);
    expect(read.sort()).toEqual([0, 1, 2, 3]);
  });
});

describe("renderSkill agrees with the prompt's inline blocks (src/compile/render.ts)", () => {
  const tricky = file("x&y", { location: `/srv/a "b"/<c>/SKILL.md`, baseDir: "/srv/a 'b'\n/<c>", body: "Body with </skill> & $HOME" });
  for (const format of ["pi", "markdown"] as const) {
    it(`${format}: with no arguments, renderSkill is the block the prompt holds`, () => {
      const runtime = createRuntime({ main: { format, prompt: "", modelInvocable: [] } }, () => tableOf([tricky], { main: [{ file: 0, listed: false, mode: "inline", source: 0 }] }));
      const promptSkill: PromptSkill = { ...tricky, mode: "inline", hidden: false };
      expect(runtime.renderSkill("main", "x&y")).toBe(renderInline(format, promptSkill));
      expect(runtime.renderSkill("main", "x&y")).toBe(renderPrompt(format, [promptSkill]).prompt);
      expect(runtime.renderSkill("main", "x&y", "a b")).toBe(renderInline(format, { ...promptSkill, body: `${tricky.body}\n\nARGUMENTS: a b` }));
    });
  }

  it("an agent with a format function renders pi blocks", () => {
    const runtime = createRuntime({ main: { format: "function", prompt: "custom", modelInvocable: [] } }, () => tableOf([tricky], { main: [{ file: 0, listed: false, mode: "inline", source: 0 }] }));
    expect(runtime.renderSkill("main", "x&y")).toBe(renderInline("pi", { ...tricky, mode: "inline", hidden: false }));
  });
});

describe("createRuntime: the skill tool, commands, folder summaries and served files", () => {
  const files = [
    { path: "SKILL.md", size: 40 },
    { path: "notes.md", size: 2 },
    { path: "references/api.md", size: 1000 },
    { path: "references/errors.md", size: 80 },
    { path: "scripts/a\nb.sh", size: 7 },
    { path: "zz.md", size: 1 },
  ];
  const served = { frontmatter: { name: "a" }, files: [{ path: "SKILL.md", size: 40, sha256: "0".repeat(64), text: "---" }] };
  const table = () =>
    tableOf([file("a", { body: "Run $0 then $ARGUMENTS.", files, served }), file("b", { fields: { "user-invocable": false } }), file("c", { body: "<c> & 'c'" })], {
      main: [
        { file: 0, listed: true, mode: "available", source: 0, served: true },
        { file: 1, listed: true, mode: "available", source: 0, served: true },
        { file: 2, listed: true, mode: "available", source: 0, location: "/elsewhere/c/SKILL.md", baseDir: "/elsewhere/c" },
      ],
      read: [{ file: 0, listed: true, mode: "available", source: 0 }],
      claude: [{ file: 0, listed: true, mode: "available", source: 0 }],
      md: [{ file: 2, listed: true, mode: "inline", source: 0 }],
      plain: [{ file: 0, listed: true, mode: "available", source: 0 }],
      none: [],
    });
  // Made in each test, not when the file loads: mutation testing switches its mutant on for the tests alone.
  let runtime: Runtime;
  beforeEach(() => {
    runtime = createRuntime(
    {
      main: { format: "pi", description: "The main agent.", prompt: "P", modelInvocable: ["a", "c"], files: "embed" },
      read: { format: "pi", prompt: "P", modelInvocable: ["a"], tool: { style: "read_skill", name: "read_skill" }, toolDescription: "Read one: a." },
      claude: { format: "markdown", prompt: "P", modelInvocable: ["a"], tool: { style: "Skill", name: "Skill" } },
      md: { format: "markdown", prompt: "P", modelInvocable: [] },
      plain: { format: "pi", prompt: "P", modelInvocable: ["a"], tool: { style: "read_skill", name: "read_skill" } },
      none: { format: "pi", prompt: "P", modelInvocable: [] },
    },
    table,
  );
  });

  it("the tool in each dialect's shape, the neutral one without; use_skill takes args, read_skill only a name", () => {
    const neutral = runtime.skillTool("main")!;
    const skill = { type: "string", enum: ["a", "c"], description: "The skill's name." };
    const args = { type: "string", description: "Arguments for the skill, as a user would type them after its name; may be empty." };
    const parameters = { type: "object", properties: { skill, args }, required: ["skill"], additionalProperties: false };
    const description = "Load the full instructions of one of your skills. Call it when the task matches a skill's description, then follow the instructions it returns.";
    expect(neutral).toEqual({ name: "use_skill", description, parameters });
    expect(runtime.skillTool("main", "anthropic")).toEqual({ name: "use_skill", description, input_schema: parameters });
    expect(runtime.skillTool("main", "openai")).toEqual({ type: "function", function: { name: "use_skill", description, parameters } });
    expect(runtime.skillTool("main", "openai-responses")).toEqual({ type: "function", name: "use_skill", description, parameters, strict: false });
    expect(runtime.skillTool("main", "mcp")).toEqual({ name: "use_skill", description, inputSchema: parameters });
    expect(runtime.skillTool("read")).toEqual({
      name: "read_skill",
      description: "Read one: a.",
      parameters: { type: "object", properties: { name: { ...skill, enum: ["a"] } }, required: ["name"], additionalProperties: false },
    });
    expect((runtime.skillTool("claude") as { description: string }).description).toBe(description);
    expect((runtime.skillTool("plain") as { description: string }).description).toBe(description.replace(/^Load/, "Read"));
    expect(runtime.skillTool("md")).toBeNull();
    expect(runtime.skillTool("main")).not.toBe(runtime.skillTool("main")); // a new object each call, the caller's to extend
    expect(thrown(() => runtime.skillTool("main", "gemini" as "mcp"))).toMatchObject({ code: "INVALID_PARAM", message: expect.stringContaining('Unknown tool dialect "gemini". Use one of: anthropic, openai, openai-responses, mcp') });
    expect(thrown(() => runtime.skillTool("main", 5 as unknown as "mcp"))).toMatchObject({ code: "INVALID_PARAM", message: expect.stringContaining("Unknown tool dialect a number") });
  });

  it("callSkillTool answers each style: the block with arguments applied, the block alone, or Claude Code's Skill answer", () => {
    expect(runtime.callSkillTool("main", { skill: "a", args: "x y" })).toBe(runtime.renderSkill("main", "a", "x y"));
    expect(runtime.callSkillTool("main", { skill: "a", args: "x y" })).toContain("Run x then x y.");
    expect(runtime.callSkillTool("main", { skill: "a" })).toBe(runtime.renderSkill("main", "a"));
    expect(runtime.callSkillTool("read", { name: "a", args: 5 })).toBe(runtime.renderSkill("read", "a"));
    expect(runtime.callSkillTool("claude", { name: "a", args: "q" })).toEqual({ name: "a", base_dir: "/srv/skills/a", content: "Run q then q." });
    expect(thrown(() => runtime.callSkillTool("main", { skill: "b" }))).toMatchObject({ code: "NOT_FOUND", message: 'Unknown skill "b" for use_skill. The skills of agent "main" it offers are: a, c.' });
    expect(thrown(() => runtime.callSkillTool("md", { skill: "c" }))).toMatchObject({ code: "NOT_FOUND", message: 'Unknown skill "c" for use_skill. The skills of agent "md" it offers are: none.' });
    expect(thrown(() => runtime.callSkillTool("main", { skill: "a", args: 5 }))).toMatchObject({ code: "INVALID_PARAM", message: 'The use_skill input\'s "args" is a string, not a number.' });
    expect(thrown(() => runtime.callSkillTool("claude", { name: "a", args: [] }))).toMatchObject({ code: "INVALID_PARAM", message: 'The Skill input\'s "args" is a string, not a list.' });
    for (const input of [null, [], "a"]) expect(thrown(() => runtime.callSkillTool("main", input)), JSON.stringify(input)).toMatchObject({ code: "INVALID_PARAM", message: expect.stringMatching(/^The use_skill input is an object, not /) });
    expect(thrown(() => runtime.callSkillTool("main", { name: "a" }))).toMatchObject({ code: "INVALID_PARAM", message: 'The use_skill input\'s "skill" must be a non-empty string, not undefined.' });
  });

  it("expandCommand: /name and /skill:name with their arguments, for skills a user may invoke", () => {
    expect(runtime.expandCommand("main", "/a 1 2")).toBe("[Skill: a]\n\nRun 1 then 1 2.");
    expect(runtime.expandCommand("main", "/skill:a  one\ntwo")).toBe("[Skill: a]\n\nRun one then one\ntwo.");
    expect(runtime.expandCommand("main", "/a")).toBe("[Skill: a]\n\nRun  then .");
    expect(runtime.expandCommand("main", "/b")).toBeUndefined(); // user-invocable: false
    expect(runtime.expandCommand("main", "/ab")).toBeUndefined();
    expect(runtime.listUserInvocable("main").map((entry) => entry.name)).toEqual(["a", "c"]);
    expect(runtime.listUserInvocable("main")).toBe(runtime.listUserInvocable("main")); // made once
    for (const text of ["/zz", "a", " /a", "/", "/skill:"]) expect(runtime.expandCommand("main", text), text).toBeUndefined();
    expect(thrown(() => runtime.expandCommand("main", 1 as unknown as string))).toMatchObject({ code: "INVALID_PARAM", message: "A command is a string, not a number." });
  });

  it("renderSkill with files: the folder's totals, then each file and top-level folder in path order, names on one line and escaped in a pi block", () => {
    const summary = [
      "Skill folder: 6 files, 1130 bytes",
      "- SKILL.md (40 bytes)",
      "- notes.md (2 bytes)",
      "- references/: 2 files, 1080 bytes",
      "  - references/api.md (1000 bytes)",
      "  - references/errors.md (80 bytes)",
      "- scripts/: 1 file, 7 bytes",
      "  - scripts/a b.sh (7 bytes)",
      "- zz.md (1 bytes)",
    ].join("\n");
    expect(runtime.renderSkill("main", "a", "", { files: true })).toContain(`Run  then .\n\n${summary}\n</skill>`);
    expect(runtime.renderSkill("main", "a", "", { files: false })).not.toContain("Skill folder");
    expect(runtime.getSkill("main", "a").structure).toEqual({ bytes: 1130, files: 6, folders: { references: { bytes: 1080, files: 2 }, scripts: { bytes: 7, files: 1 } } });
    const xml = createRuntime({ main: { format: "pi", prompt: "", modelInvocable: [] } }, () => tableOf([file("x", { files: [{ path: "<a&b>'\"/c.md", size: 1 }] })], { main: [{ file: 0, listed: true, mode: "available", source: 0 }] }));
    expect(xml.renderSkill("main", "x", "", { files: true })).toContain("- &lt;a&amp;b&gt;&apos;&quot;/: 1 file, 1 bytes\n  - &lt;a&amp;b&gt;&apos;&quot;/c.md (1 bytes)");
    const md = createRuntime({ main: { format: "markdown", prompt: "", modelInvocable: [] } }, () => tableOf([file("x", { files: [{ path: "<a>\u2028b.md", size: 1 }] })], { main: [{ file: 0, listed: true, mode: "available", source: 0 }] }));
    expect(md.renderSkill("main", "x", "", { files: true })).toContain("- <a> b.md (1 bytes)");
  });

  it("folders named __proto__, constructor or toString are counted as any other, and nothing lands on Object.prototype", () => {
    const files = ["__proto__/a.md", "__proto__/b.md", "constructor/c.md", "toString/d.md"].map((path) => ({ path, size: 2 }));
    const named = createRuntime({ main: { format: "pi", prompt: "", modelInvocable: [] } }, () => tableOf([file("x", { files })], { main: [{ file: 0, listed: true, mode: "available", source: 0 }] }));
    const { structure } = named.getSkill("main", "x");
    expect(Object.entries(structure.folders)).toEqual([
      ["__proto__", { bytes: 4, files: 2 }],
      ["constructor", { bytes: 2, files: 1 }],
      ["toString", { bytes: 2, files: 1 }],
    ]);
    expect(Object.getPrototypeOf(structure.folders)).toBe(Object.prototype);
    expect([({} as Record<string, unknown>).files, ({} as Record<string, unknown>).bytes, (Object as unknown as Record<string, unknown>).files]).toEqual([undefined, undefined, undefined]);
    expect(named.renderSkill("main", "x", "", { files: true })).toContain("- __proto__/: 2 files, 4 bytes\n  - __proto__/a.md (2 bytes)\n  - __proto__/b.md (2 bytes)\n- constructor/: 1 file, 2 bytes");
  });

  it("an entry placed elsewhere has its own location and base folder; inline pi blocks escape them", () => {
    expect(runtime.getSkill("main", "c")).toMatchObject({ location: "/elsewhere/c/SKILL.md", baseDir: "/elsewhere/c" });
    expect(runtime.renderSkill("md", "c")).toBe("[Skill: c]\nBase directory for this skill: /srv/skills/c\n\n<c> & 'c'");
    expect(runtime.agents.main).toMatchObject({ id: "main", format: "pi", description: "The main agent.", prompt: "P" });
    expect(runtime.agents.read).not.toHaveProperty("description");
    expect(runtime.agents.main!.skills.map((entry) => entry.name)).toEqual(["a", "b", "c"]);
  });

  it("servedSkills: the skills an agent serves with their embedded files and frontmatter; refused for an agent that embeds none", () => {
    const list = runtime.servedSkills("main");
    expect(list.map((skill) => [skill.entry.name, skill.files.length, skill.frontmatter])).toEqual([["a", 1, { name: "a" }]]);
    expect(runtime.getSkill("main", "a")).toMatchObject({ frontmatter: { name: "a" } });
    expect(runtime.getSkill("main", "c")).not.toHaveProperty("frontmatter");
    expect(thrown(() => runtime.servedSkills("read"))).toMatchObject({ code: "INVALID_PARAM", message: 'Agent "read" does not embed its skill files: set its `files` to "embed" in the config, and build again.' });
  });

  it("findSkill: undefined for anything but a known agent's known skill", () => {
    expect(runtime.findSkill("main", "a")?.name).toBe("a");
    for (const [agent, name] of [["main", "zz"], ["zz", "a"], [5, "a"], ["main", 5], ["toString", "a"]] as const) expect(runtime.findSkill(agent as string, name as string)).toBeUndefined();
  });

  it("everything handed out is frozen, deeply, but getters are not called", () => {
    const entry = runtime.getSkill("main", "a");
    expect(Object.isFrozen(entry) && Object.isFrozen(entry.files) && Object.isFrozen(entry.files[0]) && Object.isFrozen(entry.structure.folders)).toBe(true);
    expect(Object.isFrozen(runtime) && Object.isFrozen(runtime.agents) && Object.isFrozen(runtime.agents.main)).toBe(true);
    let called = false;
    expect(Object.isFrozen(runtime.getPrompt)).toBe(true);
    const value = deepFreeze({ text: "t", none: null, nested: { list: [{}] }, get lazy() {
      called = true;
      return {};
    } });
    expect([Object.isFrozen(value.nested.list[0]), called]).toEqual([true, false]);
  });
});

describe("createRuntime: what its errors say", () => {
  it("names the argument that is wrong and what it was; a SkillError by name", () => {
    const runtime = createRuntime({ main: { format: "pi", prompt: "", modelInvocable: [] }, empty: { format: "pi", prompt: "", modelInvocable: [] } }, () =>
      tableOf([file("a")], { main: [{ file: 0, listed: true, mode: "available", source: 0 }], empty: [] }),
    );
    const message = (call: () => unknown) => thrown(call).message;
    expect(thrown(() => runtime.getPrompt("")).name).toBe("SkillError");
    expect(message(() => runtime.getPrompt(5 as never))).toBe("The agent must be a non-empty string, not a number.");
    expect(message(() => runtime.getPrompt(""))).toBe("The agent must be a non-empty string, not an empty string.");
    expect(message(() => runtime.getPrompt(null as never))).toBe("The agent must be a non-empty string, not null.");
    expect(message(() => runtime.getSkill("main", undefined as never))).toBe("The skill name must be a non-empty string, not undefined.");
    expect(message(() => runtime.getSkill("main", {} as never))).toBe("The skill name must be a non-empty string, not an object.");
    expect(message(() => runtime.getSkill("main", [] as never))).toBe("The skill name must be a non-empty string, not a list.");
    expect(message(() => runtime.getPrompt("zz"))).toBe('Unknown agent "zz". This bundle has: main, empty.');
    expect(message(() => runtime.getSkill("empty", "a"))).toBe('Unknown skill "a": agent "empty" has no skills.');
    expect(message(() => runtime.renderSkill("main", "a", 5 as never))).toBe("The arguments are a string, not a number.");
  });

  it("a list of exactly 50 names is shown whole", () => {
    const names = Array.from({ length: 50 }, (_, index) => `s${index}`);
    const big = createRuntime({ big: { format: "pi", prompt: "", modelInvocable: names } }, () =>
      tableOf(
        names.map((name) => file(name)),
        { big: names.map((_, index) => ({ file: index, listed: true, mode: "available" as const, source: 0 })) },
      ),
    );
    expect(thrown(() => big.getSkill("big", "x")).message).toMatch(/s48, s49\.$/);
    expect(big.expandCommand("big", "/s10 x")).toBe("[Skill: s10]\n\n# s10\n\nARGUMENTS: x"); // a name of more than one character
  });
});

describe("splitShellWords: a backslash at the very end", () => {
  it("is kept, in double quotes and out of them", () => {
    expect(splitShellWords("a\\")).toEqual(["a\\"]);
    expect(splitShellWords('"a\\')).toEqual(["a\\"]);
  });
});
