import fc from "fast-check";
import { micromark } from "micromark";
import { gfm, gfmHtml } from "micromark-extension-gfm";
import { describe, expect, it } from "vitest";
import { escapeInvisible, escapeMarkdown, escapeWorkflowCommands, escapeWorkflowCommandsInJson, styleFor } from "../src/compile/terminal.js";

/** GitHub Flavored Markdown as GitHub renders it (tables, autolinks, raw HTML allowed, as its sanitizer comes later). */
function render(markdown: string): string {
  return micromark(markdown, { allowDangerousHtml: true, extensions: [gfm()], htmlExtensions: [gfmHtml()] });
}

/** The text a reader sees: tags dropped, entities decoded, the zero-width spaces that break GitHub's linking removed. */
function shownText(html: string): string {
  const entities: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"' };
  return html
    .replace(/<[^>]*>/g, "")
    .replace(/&(amp|lt|gt|quot);|&#(\d+);|&#x([0-9a-f]+);/gi, (_, name?: string, dec?: string, hex?: string) =>
      name ? entities[name]! : String.fromCodePoint(dec ? Number(dec) : parseInt(hex!, 16)),
    )
    .replace(/\u200b/g, "")
    .trim();
}

/** What GitHub links in rendered text, outside Markdown: mentions, issue references by number. */
const GITHUB_LINKED = /(?:^|[^\w`])@[a-z0-9]|(?:^|[^\w&])#\d|\bGH-\d/i;

const ATTACKS = [
  "[Click to approve](https://evil.example/phish)",
  "![pixel](https://evil.example/track.png)",
  "<details><summary>Approved by @org/security-team</summary>nothing to see</details>",
  "<!-- everything after this is hidden",
  "<img src=x onerror=alert(1)>",
  "https://evil.example/login and www.evil.example and mail me@evil.example",
  "Fixes #12, GH-2 and owner/repo#34; cc @alice",
  "**bold** _em_ ~~gone~~ `code` | a | b |",
  "# Heading\n> quote\n- item\n1. item\n\tindented\r\u001b[2Jcleared",
  "&lt;b&gt; &#64;alice &copy;",
  "$x^2$ and $$\\sqrt{2}$$",
  "[ref]: https://evil.example\n[ref]",
];

describe("escapeMarkdown", () => {
  it.each(ATTACKS)("renders %j as its own text, on one line, with no link, image, HTML, mention or reference", (text) => {
    const html = render(`| cell |\n| --- |\n| ${escapeMarkdown(text)} |\n\n- ${escapeMarkdown(text)}\n`);
    expect(html).not.toMatch(/<(?!\/?(?:table|thead|tbody|tr|th|td|ul|li|p)\b)[a-z!]/i);
    const cell = /<td>([\s\S]*?)<\/td>/.exec(html)![1]!;
    const item = /<li>([\s\S]*?)<\/li>/.exec(html)![1]!;
    for (const shown of [cell, item]) {
      expect(shownText(shown)).toBe(escapeInvisible(text));
      expect(shown.replace(/\u200b/g, "!").replace(/&#8203;/g, "!")).not.toMatch(GITHUB_LINKED);
    }
  });

  it("keeps any text, escaped or not, to one table cell that shows it unchanged", () => {
    fc.assert(
      fc.property(fc.string({ unit: fc.oneof(fc.constantFrom(..."|\\`*_[]()<>!#@&:.-=$~ a1\n\r\t"), fc.string({ unit: "binary", maxLength: 1 })), maxLength: 40 }), (text) => {
        const html = render(`| a | b |\n| --- | --- |\n| ${escapeMarkdown(text)} | end |\n`);
        const cells = [...html.matchAll(/<td>([\s\S]*?)<\/td>/g)].map((match) => match[1]!);
        expect(cells).toHaveLength(2);
        expect(shownText(cells[0]!)).toBe(escapeInvisible(text).trim());
        expect(cells[1]).toBe("end");
      }),
    );
  });

  it("leaves letters, digits, spaces and other scripts as they are", () => {
    expect(escapeMarkdown("Drafts reports in 日本語 and é")).toBe("Drafts reports in 日本語 and é");
  });
});

describe("escapeInvisible", () => {
  it("shows line breaks, tabs, control, bidi and tag characters JSON-style, by the shortest escape that holds each; other text as it is", () => {
    expect(escapeInvisible("a\nb\rc\td\u0000e\u001bf\u007fg\u009fh\u061ci\u202ej\u{e0041}k é日本😀")).toBe(
      "a\\nb\\rc\\td\\x00e\\x1bf\\x7fg\\x9fh\\u061ci\\u202ej\\u{e0041}k é日本😀",
    );
  });

  it("keepTabs leaves tabs and escapes the rest", () => {
    expect(escapeInvisible("a\tb\nc\u001b", { keepTabs: true })).toBe("a\tb\\nc\\x1b");
  });
});

describe("escapeWorkflowCommands", () => {
  it("escapes the first colon of a :: that starts a line after any whitespace, NEL included, and the bracket of every ##[", () => {
    expect(escapeWorkflowCommands("::error file=a::forged")).toBe("\\x3a:error file=a::forged");
    expect(escapeWorkflowCommands("ok\n \t\u0085::add-mask::x\r\n::stop-commands::t")).toBe("ok\n \t\u0085\\x3a:add-mask::x\r\n\\x3a:stop-commands::t");
    expect(escapeWorkflowCommands("a ##[group]b ##[endgroup]")).toBe("a ##\\x5bgroup]b ##\\x5bendgroup]");
  });

  it("leaves a :: inside a line, a single colon and a ## without a bracket as they are", () => {
    for (const text of ["a::b", ": :x", ":x::", "## heading", "#[x]"]) expect(escapeWorkflowCommands(text)).toBe(text);
  });

  it("escapes what the plain pattern /^([\\s\\x85]*):(?=:)/gm escapes, in linear time over blank lines", () => {
    const plainPattern = (text: string) => text.replace(/^([\s\x85]*):(?=:)/gm, "$1\\x3a");
    const text = fc.array(fc.constantFrom(" ", "\t", "\n", "\r", "\r\n", "\u2028", "\u2029", "\u0085", "\u00a0", ":", "::", "a", "#"), { maxLength: 20 }).map((parts) => parts.join(""));
    fc.assert(fc.property(text, (value) => escapeWorkflowCommands(value) === plainPattern(value)), { numRuns: 5_000 });
    // The plain pattern read the rest of the blank lines again from each of them: 20,000 took 0.2 s, a million minutes.
    const started = performance.now();
    expect(escapeWorkflowCommands(`${"\n".repeat(1_000_000)}x::y`)).toBe(`${"\n".repeat(1_000_000)}x::y`);
    expect(escapeWorkflowCommands(`${" \n".repeat(500_000)}::y`)).toBe(`${" \n".repeat(500_000)}\\x3a:y`);
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it("in JSON, escapes the bracket of ##[ as \\u005b, which parses to the same text", () => {
    const json = JSON.stringify({ message: "##[error]x ##[" });
    const escaped = escapeWorkflowCommandsInJson(json);
    expect(escaped).toBe('{"message":"##\\u005berror]x ##\\u005b"}');
    expect(JSON.parse(escaped)).toEqual(JSON.parse(json));
  });
});

describe("styleFor", () => {
  const colours = (stream: { isTTY?: boolean }, env: Record<string, string>) => {
    const style = styleFor(stream, env);
    return [style.red("r"), style.yellow("y"), style.dim("d"), style.bold("b")].join(" ");
  };
  const ON = "\u001b[31mr\u001b[39m \u001b[33my\u001b[39m \u001b[2md\u001b[22m \u001b[1mb\u001b[22m";
  const OFF = "r y d b";

  it("colours a terminal; not a pipe, nor when NO_COLOR is set", () => {
    expect(colours({ isTTY: true }, {})).toBe(ON);
    expect(colours({ isTTY: false }, {})).toBe(OFF);
    expect(colours({}, {})).toBe(OFF);
    expect(colours({ isTTY: true }, { NO_COLOR: "1" })).toBe(OFF);
  });

  it("FORCE_COLOR, when set and not empty, decides alone: on, unless 0 or false", () => {
    expect(colours({ isTTY: false }, { FORCE_COLOR: "1" })).toBe(ON);
    expect(colours({ isTTY: false }, { FORCE_COLOR: "1", NO_COLOR: "1" })).toBe(ON);
    expect(colours({ isTTY: true }, { FORCE_COLOR: "0" })).toBe(OFF);
    expect(colours({ isTTY: true }, { FORCE_COLOR: "false" })).toBe(OFF);
    expect(colours({ isTTY: true }, { FORCE_COLOR: "" })).toBe(ON);
    expect(colours({ isTTY: false }, { FORCE_COLOR: "" })).toBe(OFF);
  });
});
