import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { renderInline, renderPrompt, type PromptSkill } from "../src/compile/render.js";
import { applyArguments, createRuntime, MAX_EXPANDED_LENGTH, SkillError, splitShellWords, type SkillFile, type SkillTable } from "../src/runtime/helpers.js";

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
