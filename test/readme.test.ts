/**
 * The README and its reference pages (docs/*.md) are checked against the code they describe, so neither can
 * change alone: the config reference against the zod schema, the editor
 * recipes against the loader and the published schema, and the prompt format examples against the renderer.
 * The README links every page, and no relative link in them leads nowhere.
 */
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import Ajv2020Module from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { configJsonSchema, configSchemas, loadConfig } from "../src/compile/config.js";
import { parseSkillFile } from "../src/compile/parse.js";
import { renderPrompt, type PromptSkill } from "../src/compile/render.js";
import { validateSkill } from "../src/compile/validate.js";
import { REPO, tempDir, writeTree } from "./helpers.js";

const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;
const readme = await readFile(join(REPO, "README.md"), "utf8");

/** A reference page, `docs/NAME.md`. */
function page(name: string): Promise<string> {
  return readFile(join(REPO, "docs", `${name}.md`), "utf8");
}

const configuration = await page("configuration");
const editor = await page("editor");
const formats = await page("formats");

/** Every page under docs/, as `docs/NAME.md`. */
const pages = (await readdir(join(REPO, "docs"))).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`).sort();

/** Markdown without its fenced code blocks and code spans, where `[x](y)` and `# x` are not links or headings. */
function prose(markdown: string): string {
  return markdown.replace(/^ *```[\s\S]*?^ *```$/gm, "").replace(/`[^`\n]*`/g, "code");
}

/** The target of every inline link (and image) in a Markdown file's prose. */
function links(markdown: string): string[] {
  return [...prose(markdown).matchAll(/\[[^\]]*\]\(([^)\s]+)(?: "[^"]*")?\)/g)].map((match) => match[1]!);
}

/** The anchors GitHub gives a Markdown file's headings: lowercased, punctuation dropped, spaces to hyphens. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const [, heading] of prose(markdown).matchAll(/^#{1,6} +(.+?) *#*$/gm)) {
    const slug = heading!.toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    out.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return out;
}

/** The text of `file` between `<!-- NAME:start -->` and `<!-- NAME:end -->`. */
function section(text: string, file: string, name: string): string {
  const match = new RegExp(`<!-- ${name}:start -->\\n([\\s\\S]*?)<!-- ${name}:end -->`).exec(text);
  if (!match) throw new Error(`${file} has no <!-- ${name}:start --> … <!-- ${name}:end --> section`);
  return match[1]!;
}

/** A Markdown table's body rows as cells, `\|` unescaped, header and separator left out. */
function tableRows(markdown: string): string[][] {
  const rows = markdown.split("\n").filter((line) => line.startsWith("|"));
  return rows.slice(2).map((row) =>
    row
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((cell) => cell.trim().replace(/\\\|/g, "|")),
  );
}

/** `code` spans' text, or the cell itself. */
function unquote(cell: string): string {
  return cell.replace(/^`(.*)`$/, "$1");
}

interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: SchemaNode | boolean;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
  enum?: unknown[];
  const?: unknown;
  default?: unknown;
  required?: string[];
}

interface Setting {
  /** `agents.*.skills[].root`: `*` for a record's keys, `[]` for a list's items. */
  path: string;
  required: boolean;
  default?: unknown;
  /** Every string the setting accepts from a fixed set. */
  choices: string[];
}

/** Every named setting of the config's JSON Schema, depth first. */
function settings(node: SchemaNode, prefix = "", out: Setting[] = []): Setting[] {
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    const path = `${prefix}${key}`;
    const choices = [child, ...(child.anyOf ?? [])].flatMap((option) => [...(option.enum ?? []), ...(option.const === undefined ? [] : [option.const])]).map(String);
    out.push({ path, required: node.required?.includes(key) ?? false, ...("default" in child ? { default: child.default } : {}), choices });
    descend(child, path, out);
  }
  return out;
}

function descend(node: SchemaNode, path: string, out: Setting[]): void {
  if (node.properties) settings(node, `${path}.`, out);
  if (typeof node.additionalProperties === "object") descend(node.additionalProperties, `${path}.*`, out);
  if (node.items) descend(node.items, `${path}[]`, out);
}

describe("README and docs", () => {
  it("keeps the two commands first", () => {
    const first = /^## (.+)$/m.exec(readme)![1];
    expect(first).toBe("The two commands");
    expect(readme).toContain("```sh\nnpm install && npx skills build   # installs, builds the CLI, compiles ./skills into dist/skills/\nnpm test");
  });

  it("links every docs page from the README's Reference list", () => {
    const reference = /^## Reference\n([\s\S]*?)(?=^## |(?![\s\S]))/m.exec(readme);
    expect(reference, "README.md has a ## Reference section").not.toBeNull();
    const linked = links(reference![1]!).map((target) => target.replace(/#.*/, "")).filter((target) => target.startsWith("docs/"));
    expect([...new Set(linked)].sort()).toEqual(pages);
  });

  it("starts each docs page with its title and a link back to the README", async () => {
    for (const file of pages) {
      const [title, blank, back] = (await readFile(join(REPO, file), "utf8")).split("\n");
      expect(title, file).toMatch(/^# \S/);
      expect([blank, back], file).toEqual(["", expect.stringContaining("](../README.md)")]);
    }
  });

  it("has no relative link, in the README or docs, to a missing file or heading", async () => {
    const broken: string[] = [];
    for (const file of ["README.md", ...pages]) {
      const text = await readFile(join(REPO, file), "utf8");
      for (const target of links(text)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …
        const [path, anchor] = target.split("#") as [string, string | undefined];
        const resolved = path === "" ? join(REPO, file) : join(REPO, dirname(file), decodeURI(path));
        if (!existsSync(resolved)) {
          broken.push(`${file}: ${target} (no file ${relative(REPO, resolved)})`);
        } else if (anchor !== undefined && resolved.endsWith(".md") && !anchors(await readFile(resolved, "utf8")).has(decodeURIComponent(anchor))) {
          broken.push(`${file}: ${target} (no such heading in ${relative(REPO, resolved)})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it("documents every config setting, with the schema's defaults and choices", () => {
    const schema = z.toJSONSchema(configSchemas().config, { io: "input", unrepresentable: "any" }) as SchemaNode;
    const expected = settings(schema);
    const rows = tableRows(section(configuration, "docs/configuration.md", "config-reference"));
    // `agents.<id>.skills[].root` in the docs is `agents.*.skills[].root` in the schema walk.
    const documented = new Map(rows.map((row) => [unquote(row[0]!).replace(/<[^>]+>/g, "*"), row]));
    expect([...documented.keys()], "docs/configuration.md config reference rows (add or remove rows to match src/compile/config.ts)").toEqual(expected.map((setting) => setting.path));
    for (const setting of expected) {
      const [, type, defaultCell] = documented.get(setting.path)!;
      const shouldBe = setting.required ? "required" : "default" in setting ? `\`${JSON.stringify(setting.default)}\`` : "—";
      expect(defaultCell, `default of ${setting.path}`).toBe(shouldBe);
      for (const choice of setting.choices) expect(type, `choices of ${setting.path}`).toContain(`"${choice}"`);
    }
  });

  it("gives a skills.config.json recipe, with $schema, that loads and that the published schema accepts", async () => {
    const recipe = /```json\n\s*(\{ "\$schema"[^\n]*)\n\s*```/.exec(editor);
    expect(recipe, "docs/editor.md shows a skills.config.json with $schema").not.toBeNull();
    const dir = await tempDir();
    await writeTree(dir, { "skills.config.json": recipe![1]! });
    const loaded = await loadConfig(undefined, dir);
    expect(Object.keys(loaded.config.agents)).toEqual(["assistant"]);
    const validate = new Ajv2020({ strict: false }).compile(configJsonSchema());
    expect(validate(JSON.parse(recipe![1]!)), JSON.stringify(validate.errors)).toBe(true);
  });

  it("gives a SKILL.md recipe whose yaml-language-server comment the compiler ignores", () => {
    const recipe = /```markdown\n((?: *)---\n *# yaml-language-server: \$schema=[\s\S]*?)\n *```/.exec(editor);
    expect(recipe, "docs/editor.md shows frontmatter with a yaml-language-server comment").not.toBeNull();
    const text = recipe![1]!.replace(/^ {2}/gm, "");
    const parsed = parseSkillFile("skills/release-notes/SKILL.md", new TextEncoder().encode(text), false);
    const { content, findings } = validateSkill("skills/release-notes/SKILL.md", "release-notes", parsed);
    expect(findings).toEqual([]);
    expect(content?.extra).toEqual({});
  });

  it("shows each prompt format exactly as it renders", () => {
    const skill = (name: string, mode: PromptSkill["mode"], description: string, body: string): PromptSkill => ({
      name,
      description,
      location: `skills/${name}/SKILL.md`,
      baseDir: `skills/${name}`,
      body,
      mode,
      hidden: false,
    });
    const skills = [
      skill("explain-code", "available", "Explain what a piece of code does. Use when asked how code works.", "# Explain code"),
      skill("git-commit", "inline", "Write a commit message. Use when committing.", "# Commit\n\nSummarise the change in one line."),
    ];
    for (const format of ["pi", "markdown"] as const) {
      const example = new RegExp(`<!-- format-example: ${format} -->\\n\`\`\`text\\n([\\s\\S]*?)\\n\`\`\``).exec(formats);
      expect(example, `docs/formats.md has a <!-- format-example: ${format} --> block`).not.toBeNull();
      expect(example![1]).toBe(renderPrompt(format, skills).prompt);
    }
  });
});
