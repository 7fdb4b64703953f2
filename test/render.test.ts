import { describe, expect, it } from "vitest";
import { locate, renderPrompt, type PromptSkill } from "../src/compile/render.js";

const skill = (overrides: Partial<PromptSkill> = {}): PromptSkill => ({
  name: "pdf",
  description: "Fill PDF forms.",
  location: "skills/pdf/SKILL.md",
  baseDir: "skills/pdf",
  body: "# PDF",
  mode: "available",
  hidden: false,
  ...overrides,
});

describe("locate", () => {
  it("absolute: the path as discovered", () => {
    expect(locate("/srv/app/skills/pdf/SKILL.md", "skills/pdf/SKILL.md", "absolute")).toEqual({ location: "/srv/app/skills/pdf/SKILL.md", baseDir: "/srv/app/skills/pdf" });
  });
  it("relative: relative to the config folder", () => {
    expect(locate("/home/me/proj/skills/pdf/SKILL.md", "skills/pdf/SKILL.md", "relative")).toEqual({ location: "skills/pdf/SKILL.md", baseDir: "skills/pdf" });
  });
  it("{ base }: the base, a slash, the relative path", () => {
    expect(locate("/home/me/proj/skills/pdf/SKILL.md", "skills/pdf/SKILL.md", { base: "/srv/app/" })).toEqual({ location: "/srv/app/skills/pdf/SKILL.md", baseDir: "/srv/app/skills/pdf" });
    expect(locate("/p/skills/pdf/SKILL.md", "skills/pdf/SKILL.md", { base: "/srv//" }).location).toBe("/srv/skills/pdf/SKILL.md");
  });
  it("{ base }: a base of many slashes before its end is read once (trimming them took the square of the run)", () => {
    const base = `/srv${"/".repeat(500_000)}app`;
    const started = performance.now();
    expect(locate("/p/skills/pdf/SKILL.md", "skills/pdf/SKILL.md", { base }).location).toBe(`${base}/skills/pdf/SKILL.md`);
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});

describe("renderPrompt", () => {
  it("pi: catalogue, then inline blocks, one blank line apart, no trailing newline", () => {
    const { prompt, catalogueCharacters } = renderPrompt("pi", [skill(), skill({ name: "git", mode: "inline", location: "skills/git/SKILL.md", baseDir: "skills/git", body: "# Git" })]);
    expect(prompt.endsWith("</skill>")).toBe(true);
    expect(catalogueCharacters).toBe(prompt.indexOf("</available_skills>") + "</available_skills>".length);
    expect(prompt).toContain("</available_skills>\n\n<skill name=\"git\" location=\"skills/git/SKILL.md\">\nReferences are relative to skills/git.\n\n# Git\n</skill>");
  });

  it("leaves hidden skills out of the catalogue and renders no catalogue without visible skills", () => {
    expect(renderPrompt("pi", [skill({ hidden: true })]).prompt).toBe("");
  });

  it("escapes names, descriptions and locations in the catalogue, and the inline block's attributes", () => {
    const { prompt } = renderPrompt("pi", [
      skill({ name: `n<&>"'`, description: `a & <b> "c" 'd'`, location: `a&<b>"c'/SKILL.md` }),
      skill({ name: 'x"y', mode: "inline", location: "a&b/SKILL.md", baseDir: "a&b" }),
    ]);
    expect(prompt).toContain(
      "  <skill>\n    <name>n&lt;&amp;&gt;&quot;&apos;</name>\n    <description>a &amp; &lt;b&gt; &quot;c&quot; &apos;d&apos;</description>\n    <location>a&amp;&lt;b&gt;&quot;c&apos;/SKILL.md</location>\n  </skill>",
    );
    expect(prompt).toContain('<skill name="x&quot;y" location="a&amp;b/SKILL.md">\nReferences are relative to a&amp;b.');
  });

  it("markdown: a list, then inline blocks led by their name and base directory; line breaks cannot start a new item", () => {
    const { prompt } = renderPrompt("markdown", [skill({ description: "Line one\n- forged: item" }), skill({ name: "git", mode: "inline", baseDir: "skills/git", body: "# Git" })]);
    expect(prompt).toBe("Available skills:\n- pdf: Line one - forged: item (file: skills/pdf/SKILL.md)\n\n[Skill: git]\nBase directory for this skill: skills/git\n\n# Git");
  });
});
