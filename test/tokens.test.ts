import { createHash } from "node:crypto";
import { cp, readdir, readFile } from "node:fs/promises";
import fc from "fast-check";
import { join } from "node:path";
import { countTokens as o200k, encode as encodeO200k } from "gpt-tokenizer/encoding/o200k_base";
import { countTokens as cl100k } from "gpt-tokenizer/encoding/cl100k_base";
import { describe, expect, it } from "vitest";
import o200kRanks from "gpt-tokenizer/bpeRanks/o200k_base";
import cl100kRanks from "gpt-tokenizer/bpeRanks/cl100k_base";
import { CL100K_TOKEN_SPLIT_REGEX, O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants";
import { BpeCounter } from "../src/compile/bpe.js";
import { LINE_END, tokenCounter, type TokenEncoding } from "../src/compile/tokens.js";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

/** A SKILL.md whose description is written as a YAML double-quoted string (JSON is one). */
const quoted = (name: string, description: string, body?: string) => skillMd(name, JSON.stringify(description), body);

/** Code- and symbol-heavy descriptions, where characters ÷ 4 is furthest from the real count. */
const SKILLS = {
  "skills/alpha/SKILL.md": quoted("alpha", "Run `kubectl get pods -n $NS -o jsonpath='{.items[*].metadata.name}'` before a rollout."),
  "skills/beta/SKILL.md": quoted("beta", "Regex helper: ^(?:[a-z0-9]+(?:-[a-z0-9]+)*)$ and {{template}} checks; use for names."),
  "skills/gamma/SKILL.md": skillMd("gamma", "Gamma does gamma things. Use when gamma is needed."),
  "skills/inline-one/SKILL.md": quoted("inline-one", "Inlined.", "# Steps\n\n```ts\nconst x: Record<string, number[]> = {};\n```"),
};

async function project(config: object): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, { "skills.config.json": JSON.stringify({ location: "relative", ...config }), ...SKILLS });
  return dir;
}

const manifestOf = async (dir: string) => JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8"));
const promptOf = (dir: string, agent: string) => readFile(join(dir, "dist/skills/prompts", `${agent}.txt`), "utf8");

const plain = { disallowedSpecial: new Set<string>() };
/** How the build cache names a line whose tokens it keeps. */
const lineDigest = (line: string) => createHash("sha256").update(line).digest("base64").slice(0, 11);
const ENCODINGS = { o200k_base: (text: string) => o200k(text, plain), cl100k_base: (text: string) => cl100k(text, plain) };

describe("counting a line at a time", () => {
  // The worker sums the tokens of lines (each remembered on its own): the sum must be the whole text's count.
  const sumsToWhole = async (text: string) => {
    for (const [encoding, count] of Object.entries(ENCODINGS)) expect((await tokenCounter(encoding as TokenEncoding).count([text]))[0]).toBe(count(text));
  };

  it("sums to the whole count for text made of the characters the tokenizers' patterns treat apart", async () => {
    const piece = fc.constantFrom(" ", "  ", "\n", "\r\n", "\r", "\t", "/", "//", "<", ">", "a", "Ab", "DE", "x1", "123", "4567", "'s", "'LL", "é", "\u00a0", "\u2028", "😀", ".", "-", "<skill>", "</skill>", "  <name>", "\n\n", " \n", "\n ", "\n/");
    await fc.assert(fc.asyncProperty(fc.array(piece, { maxLength: 40 }).map((pieces) => pieces.join("")), sumsToWhole), { numRuns: 1500 });
  });

  it("counts each line of a text in one pass as it counts the line alone (what a first count remembers)", () => {
    const counters = { o200k_base: new BpeCounter(o200kRanks, O200K_TOKEN_SPLIT_REGEX), cl100k_base: new BpeCounter(cl100kRanks, CL100K_TOKEN_SPLIT_REGEX) };
    const piece = fc.constantFrom(" ", "  ", "\n", "\r\n", "\r", "\t", "/", "//", "<", ">", "a", "Ab", "DE", "x1", "123", "'s", "'LL", "é", "\u00a0", "\u2028", "😀", ".", "-", "<skill>", "  <name>", "\n\n", " \n", "\n ", "\n/", "\n  /");
    const lineEnds = new RegExp(LINE_END, "g");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 60 }).map((pieces) => pieces.join("")), (text) => {
        const ends = [...[...text.matchAll(lineEnds)].map((match) => match.index + 1), text.length];
        const lines = ends.map((end, index) => text.slice(index === 0 ? 0 : ends[index - 1], end));
        for (const [encoding, counter] of Object.entries(counters)) expect(counter.countParts(text, ends)).toEqual(lines.map(ENCODINGS[encoding as TokenEncoding]));
      }),
      { numRuns: 1000 },
    );
  });

  it("sums to the whole count for real skill text, and remembers a catalogue line by line", async () => {
    const files = (await readdir("skills", { recursive: true })).filter((file) => file.endsWith(".md"));
    await sumsToWhole((await Promise.all(files.map((file) => readFile(join("skills", file), "utf8")))).join("\n\n"));
    const counter = tokenCounter("o200k_base");
    await counter.used(); // forget the lines counted above
    await counter.count(["<available_skills>\n  <skill>\n    <name>a</name>\n  </skill>\n</available_skills>"]);
    const lines = ["<available_skills>\n", "  <skill>\n", "    <name>a</name>\n", "  </skill>\n", "</available_skills>"];
    expect(await counter.used()).toBe(lines.map((line) => `${lineDigest(line)}${o200k(line)}`).join(","));
  });
});

describe("token counts", () => {
  it("records each agent's prompt and catalogue tokens, equal to the tokenizer's own count of prompts/<agent>.txt", async () => {
    const dir = await project({
      tokens: { encoding: "o200k_base" },
      agents: { coding: { skills: [{ root: "skills", inline: ["inline-one"], available: ["*", "!inline-one"] }] }, chat: { skills: [{ root: "skills", available: ["gamma"] }] } },
    });
    const build = await runCli(["build"], { cwd: dir });
    expect(build.code, build.stderr).toBe(0);
    const manifest = await manifestOf(dir);
    for (const agent of ["coding", "chat"]) {
      const prompt = await promptOf(dir, agent);
      expect(manifest.agents[agent].tokens).toMatchObject({ encoding: "o200k_base", prompt: o200k(prompt) });
    }
    // The coding prompt is its catalogue, a blank line, then the inline block.
    const coding = await promptOf(dir, "coding");
    const catalogue = coding.slice(0, coding.indexOf("\n\n<skill name="));
    expect(manifest.agents.coding.tokens.catalogue).toBe(o200k(catalogue));
    expect(manifest.agents.chat.tokens.catalogue).toBe(manifest.agents.chat.tokens.prompt);
    // Not the estimate: the symbols make the two differ.
    expect(manifest.agents.coding.tokens.prompt).not.toBe(Math.ceil(coding.length / 4));
  });

  it("a build's count is the tokenizer's after any edits: the lines earlier builds remembered never change it", { timeout: 180_000 }, async () => {
    // Each build is a process of its own: its worker starts from what the build cache kept (none at first).
    const piece = fc.constantFrom(" ", "  ", "\n", "\t", "/", "//", "a", "Ab", "x1", "123", "'s", "é", "😀", ".", "-", "\n\n", " \n", "\n ", "\n/", "\n  /", "<skill>", "&");
    const text = fc.array(piece, { maxLength: 16 }).map((pieces) => pieces.join(""));
    const edit = fc.record({ skill: fc.constantFrom("alpha", "gamma", "delta"), description: text, body: text });
    await fc.assert(
      fc.asyncProperty(fc.array(edit, { minLength: 1, maxLength: 3 }), async (edits) => {
        const dir = await project({ tokens: { encoding: "o200k_base" }, agents: { coding: { skills: [{ root: "skills" }] } } });
        for (const { skill, description, body } of edits) {
          await writeTree(dir, { [`skills/${skill}/SKILL.md`]: quoted(skill, `Does ${skill}.${description}`, body) });
          const run = await runCli(["build"], { cwd: dir });
          expect(run.code, run.stderr).toBe(0);
          expect((await manifestOf(dir)).agents.coding.tokens.prompt).toBe(o200k(await promptOf(dir, "coding")));
        }
      }),
      { numRuns: 15 },
    );
  });

  it("a rebuild reuses the counts of unchanged lines from the build cache and counts the rest, in the encoding asked for", async () => {
    const config = (encoding: string) => ({ "skills.config.json": JSON.stringify({ location: "relative", tokens: { encoding }, agents: { coding: { skills: [{ root: "skills" }] } } }) });
    const dir = await project({});
    await writeTree(dir, config("o200k_base"));
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const cacheFile = join(dir, "node_modules/.cache/skillbake/skills.config.json.json");
    const cached = JSON.parse((await readFile(cacheFile, "utf8")).split("\n")[1]!).tokens;
    expect(cached.encoding).toBe("o200k_base");
    expect(cached.counts.split(",")).toContain(`${lineDigest("  <skill>\n")}${o200k("  <skill>\n")}`);

    await writeTree(dir, { "skills/gamma/SKILL.md": quoted("gamma", "Gamma now runs `jq '.items[] | {name, id}'` on every {{payload}}.") });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect((await manifestOf(dir)).agents.coding.tokens.prompt).toBe(o200k(await promptOf(dir, "coding")));

    // The cache is a file a pull request could commit: a count that is not a count is ignored, not summed.
    const [header, payload] = (await readFile(cacheFile, "utf8")).split("\n") as [string, string];
    const contents = JSON.parse(payload);
    contents.tokens.counts += `,${lineDigest("  <skill>\n")}x9,${lineDigest("</available_skills>")}-5,${lineDigest("  </skill>\n")}1e3`;
    const forged = JSON.stringify(contents);
    await writeTree(dir, { "node_modules/.cache/skillbake/skills.config.json.json": `${JSON.stringify({ ...JSON.parse(header), sha256: createHash("sha256").update(forged).digest("hex") })}\n${forged}` });
    await writeTree(dir, { "skills/gamma/SKILL.md": quoted("gamma", "Gamma, once more.") });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect((await manifestOf(dir)).agents.coding.tokens.prompt).toBe(o200k(await promptOf(dir, "coding")));

    await writeTree(dir, config("cl100k_base"));
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect((await manifestOf(dir)).agents.coding.tokens.prompt).toBe(cl100k(await promptOf(dir, "coding")));
  });

  it("counts in the configured encoding", async () => {
    const dir = await project({ tokens: { encoding: "cl100k_base" }, agents: { coding: { skills: [{ root: "skills" }] } } });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const prompt = await promptOf(dir, "coding");
    expect((await manifestOf(dir)).agents.coding.tokens).toEqual({ encoding: "cl100k_base", prompt: cl100k(prompt), catalogue: cl100k(prompt) });
    expect(cl100k(prompt)).not.toBe(o200k(prompt));
  });

  it("counts a special-token string in skill text as plain text instead of failing", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ location: "relative", tokens: {}, agents: { coding: { skills: [{ root: "skills" }] } } }),
      "skills/odd/SKILL.md": quoted("odd", "Ends documents with <|endoftext|> and <|im_start|> markers."),
    });
    const build = await runCli(["build"], { cwd: dir });
    expect(build.code, build.stderr).toBe(0);
    const prompt = await promptOf(dir, "coding");
    expect((await manifestOf(dir)).agents.coding.tokens).toMatchObject({ encoding: "o200k_base", prompt: encodeO200k(prompt, { disallowedSpecial: new Set() }).length });
  });

  it("counts nothing unless asked: no tokens in the manifest or in skills list", async () => {
    const dir = await project({ agents: { coding: { skills: [{ root: "skills" }] } } });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect((await manifestOf(dir)).agents.coding.tokens).toBeUndefined();
    const list = await runCli(["list"], { cwd: dir });
    expect(list.stdout).not.toContain("tokens");
  });

  it("a budget in tokens drops the last skills of the catalogue and says so", async () => {
    const dir = await project({ agents: { coding: { skills: [{ root: "skills", available: ["alpha", "beta", "gamma"] }] } } });
    // Measure the full catalogue, then set a budget that only the first two entries fit.
    expect((await runCli(["build"], { cwd: dir, env: {} })).code).toBe(0);
    const full = await promptOf(dir, "coding");
    const withoutGamma = full.replace(/\n  <skill>\n    <name>gamma<\/name>[\s\S]*?<\/skill>/, "");
    expect(withoutGamma).not.toBe(full);
    const limit = o200k(withoutGamma) + 1;
    expect(o200k(full)).toBeGreaterThan(limit);
    await writeTree(dir, { "skills.config.json": JSON.stringify({ location: "relative", agents: { coding: { skills: [{ root: "skills", available: ["alpha", "beta", "gamma"] }], budget: { tokens: limit } } } }) });

    const build = await runCli(["build"], { cwd: dir });
    expect(build.code, build.stderr).toBe(0);
    expect(build.stderr).toContain(
      `agent "coding": the catalogue takes ${o200k(full)} o200k_base tokens, over its budget of ${limit}; dropped the last skill in prompt order from it, leaving ${o200k(withoutGamma)}: gamma (skills/gamma/SKILL.md)  [budget-exceeded]`,
    );
    expect(await promptOf(dir, "coding")).toBe(withoutGamma);
    const manifest = await manifestOf(dir);
    expect(manifest.agents.coding.budget).toEqual({ tokens: limit });
    expect(manifest.agents.coding.tokens).toEqual({ encoding: "o200k_base", prompt: o200k(withoutGamma), catalogue: o200k(withoutGamma) });

    const list = await runCli(["list"], { cwd: dir });
    const percent = Math.round((o200k(withoutGamma) * 100) / limit);
    expect(list.stdout).toContain(`coding: 3 skills, catalogue ${withoutGamma.length} characters / ${o200k(withoutGamma)} o200k_base tokens (${percent}% of its ${limit}-token budget), prompt`);
    expect(list.stdout).toContain("left out of the catalogue by the budget (still invoked by name): gamma");
  });

  it("a budget that is neither characters nor { tokens } is a config error naming the field", async () => {
    const dir = await project({ agents: { coding: { skills: [{ root: "skills" }], budget: { tokens: 0 } } } });
    const run = await runCli(["check"], { cwd: dir });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("agents.coding.budget");
  });

  it("skills diff and skills list label real counts with their encoding", async () => {
    const dir = await project({ tokens: { encoding: "o200k_base" }, agents: { coding: { skills: [{ root: "skills", available: ["alpha", "gamma"] }] } } });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const before = await promptOf(dir, "coding");
    await cp(join(dir, "dist/skills"), join(dir, "before"), { recursive: true });
    await writeTree(dir, { "skills/gamma/SKILL.md": quoted("gamma", "Gamma now runs `jq '.items[] | {name, id}'` on every {{payload}}.") });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const after = await promptOf(dir, "coding");

    const change = `${o200k(before)} → ${o200k(after)} (+${o200k(after) - o200k(before)})`;
    const pretty = await runCli(["diff", "before", "dist/skills", "--format", "pretty"], { cwd: dir });
    expect(pretty.stdout.split("\n")).toContain(`  tokens (o200k_base): ${change}`);
    const markdown = await runCli(["diff", "before", "dist/skills", "--format", "markdown"], { cwd: dir });
    expect(markdown.stdout).toContain("| agent | changes | prompt characters | tokens (o200k\\_base) | budget (catalogue characters) |");
    expect(markdown.stdout).toContain(`| ${change} |`);
    const json = JSON.parse((await runCli(["diff", "before", "dist/skills", "--format", "json"], { cwd: dir })).stdout);
    expect(json.tokenEncoding).toBe("o200k_base");
    expect(json.tokenEstimate).toBeUndefined();

    const list = await runCli(["list", "--format", "json"], { cwd: dir });
    expect(JSON.parse(list.stdout).agents[0].tokens).toEqual({ encoding: "o200k_base", prompt: o200k(after), catalogue: o200k(after) });
  });

  it("skills diff counts the prompt of a bundle that did not count tokens, in the other's encoding, and estimates only when told to", async () => {
    const dir = await project({ agents: { coding: { skills: [{ root: "skills", available: ["alpha"] }] } } });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const before = await promptOf(dir, "coding");
    await cp(join(dir, "dist/skills"), join(dir, "before"), { recursive: true });
    await writeTree(dir, { "skills.config.json": JSON.stringify({ location: "relative", tokens: { encoding: "cl100k_base" }, agents: { coding: { skills: [{ root: "skills", available: ["alpha", "gamma"] }] } } }) });
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    const after = await promptOf(dir, "coding");
    const pretty = await runCli(["diff", "before", "dist/skills", "--format", "pretty"], { cwd: dir });
    expect(pretty.stdout.split("\n")).toContain(`  tokens (cl100k_base): ${cl100k(before)} → ${cl100k(after)} (+${cl100k(after) - cl100k(before)})`);
    const estimated = await runCli(["diff", "before", "dist/skills", "--format", "pretty", "--estimate-tokens"], { cwd: dir });
    expect(estimated.stdout).toContain("≈ tokens (estimate: characters ÷ 4)");
    expect(estimated.stdout).toContain("Tokens are estimated: --estimate-tokens.");
  });
});

describe("counting in time linear in the text (src/compile/bpe.ts)", () => {
  const counters = {
    o200k_base: new BpeCounter(o200kRanks, O200K_TOKEN_SPLIT_REGEX),
    cl100k_base: new BpeCounter(cl100kRanks, CL100K_TOKEN_SPLIT_REGEX),
  };
  /** What a run may repeat: letters of both cases, CJK, emoji (a surrogate pair, with a skin tone), a combining mark, control characters, a lone surrogate, blanks, digits and symbols. */
  const unit = fc.oneof(
    fc.constantFrom("a", "Z", "é", "日", "本", "語", "한", "😀", "👍🏽", "\u0301", "\x00", "\x07", "\x1b", "\x7f", "\u200b", "\ud800", " ", "\t", "\n", "\r\n", "/", "'s", "7", "٣", "!", "<", "#", "…"),
    fc.string({ unit: "binary", minLength: 1, maxLength: 3 }),
  );
  /** Runs of units, up to 3,000 characters: long enough for runs past many 256-byte windows, short enough for gpt-tokenizer's own count, quadratic in a run. */
  const text = fc.array(fc.tuple(unit, fc.nat({ max: 700 })), { maxLength: 8 }).map((runs) => runs.map(([piece, times]) => piece.repeat(times)).join("").slice(0, 3000));

  const runs = Number(process.env.FUZZ_RUNS ?? 200);
  it("counts as gpt-tokenizer counts whole, on random texts of long runs without spaces, CJK, emoji and control characters", { timeout: 60_000 + runs * 250 }, () => {
    fc.assert(
      fc.property(text, (sample) => {
        expect(counters.o200k_base.count(sample)).toBe(ENCODINGS.o200k_base(sample));
        expect(counters.cl100k_base.count(sample)).toBe(ENCODINGS.cl100k_base(sample));
      }),
      { numRuns: runs },
    );
  });

  it("counts as gpt-tokenizer does long random runs of symbols, CJK and emoji, where windows must give tokens back to join", () => {
    let seed = 7;
    const random = (alphabet: string) =>
      Array.from({ length: 6000 }, () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return [...alphabet][Math.floor((seed / 2 ** 31) * [...alphabet].length)];
      }).join("");
    // Joins fail often here, each mended by giving a token back: with the join unchecked, this test fails.
    for (const alphabet of ["!@#$%^&*()_+-=[]{};:'\",.<>/?\\|`~", "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年", "😀🎉👍🏽🚀\u0301\u200b", "ééèêàç"]) {
      const sample = random(alphabet);
      expect(counters.o200k_base.count(sample)).toBe(ENCODINGS.o200k_base(sample));
      expect(counters.cl100k_base.count(sample)).toBe(ENCODINGS.cl100k_base(sample));
    }
  });

  it("counts a megabyte of any shape in seconds, not minutes (gpt-tokenizer took 556 s for a million letters)", { timeout: 180_000 }, async () => {
    let seed = 42;
    const random = (length: number, alphabet: string) =>
      Array.from({ length }, () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31; // the same pseudo-random text every run
        return alphabet[Math.floor((seed / 2 ** 31) * alphabet.length)];
      }).join("");
    const shapes = {
      "one letter": "a".repeat(1_000_000),
      letters: random(1_000_000, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"),
      CJK: random(350_000, "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天"),
      emoji: "😀🎉👍🏽🚀".repeat(65_000),
      symbols: random(1_000_000, "!@#$%^&*()_+-=[]{};:'\",.<>/?\\|`~"),
      "control characters": random(1_000_000, "\x01\x02\x03\x07\x1b\x7f"),
      prose: "Use the skill when the build fails; read references/guide.md first. ".repeat(15_000),
    };
    const counter = tokenCounter("o200k_base");
    await counter.count(["Loads the encoding first."]);
    for (const [shape, sample] of Object.entries(shapes)) {
      expect(Buffer.byteLength(sample), shape).toBeGreaterThan(990_000);
      const started = performance.now();
      const [tokens] = await counter.count([sample]);
      const seconds = (performance.now() - started) / 1000;
      console.info(`${shape}: ${tokens} tokens in ${seconds.toFixed(2)} s`);
      // Under a second on an idle machine; 15 s leaves room for a loaded 2-core CI runner.
      expect(seconds, shape).toBeLessThan(15);
    }
    expect((await counter.count([shapes["one letter"]]))[0]).toBe(125_000);
  });

  it("a build counting tokens of a skill with a million-character body inlined finishes in seconds", { timeout: 120_000 }, async () => {
    const body = `${"a".repeat(500_000)}${"日本語".repeat(33_000)}${"😀".repeat(20_000)}${"\x01".repeat(50_000)}`;
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ location: "relative", tokens: {}, agents: { coding: { skills: [{ root: "skills", inline: ["huge"] }] } } }),
      "skills/huge/SKILL.md": skillMd("huge", "A huge body.", body),
    });
    const started = performance.now();
    const build = await runCli(["build"], { cwd: dir });
    expect(build.code, build.stderr).toBe(0);
    expect(performance.now() - started).toBeLessThan(60_000);
    expect((await manifestOf(dir)).agents.coding.tokens.prompt).toBe(counters.o200k_base.count(await promptOf(dir, "coding")));
  });
});
