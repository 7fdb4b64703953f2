import fc from "fast-check";
import { micromark } from "micromark";
import { gfm, gfmHtml } from "micromark-extension-gfm";
import { describe, expect, it } from "vitest";
import { escapeInvisible, escapeMarkdown } from "../src/compile/terminal.js";

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
