/**
 * The content rules: links in a body that name no file of the skill folder, and a body too long in lines or in
 * tokens, as the Agent Skills specification counts them.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { check } from "../src/api.js";
import { bodyLinks, brokenLinks, MAX_BROKEN_LINKS_NAMED } from "../src/compile/body-links.js";
import { bodyLengthFinding, descriptionDuplicates } from "../src/compile/content-rules.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

describe("bodyLinks", () => {
  it("finds relative links, images and reference definitions, with their SKILL.md positions", () => {
    const body = "See [api](references/api.md#auth) and ![flow](./assets/flow%20chart.png).\n\n[guide]: <docs/guide.md>\n[^1]: A footnote.";
    expect(bodyLinks(body, 10).map(({ path, line, column }) => [path, line, column])).toEqual([
      ["references/api.md", 10, 11],
      ["assets/flow chart.png", 10, 47],
      ["docs/guide.md", 12, 10],
    ]);
  });

  it("leaves out web addresses, anchors, absolute paths, templates, code spans and code blocks; keeps {baseDir}/", () => {
    const body = [
      "[web](https://example.com/x.md) [mail](mailto:a@b.c) [top](#usage) [abs](/etc/passwd) [tpl]({name}.md)",
      "`[not](a/link.md)` and ``[nor](this.md)``",
      "```markdown",
      "[inside](a/block.md)",
      "```",
      "[real]({baseDir}/references/real.md) [up](../sibling/SKILL.md)",
    ].join("\n");
    expect(bodyLinks(body, 1).map((link) => link.path)).toEqual(["references/real.md", "../sibling/SKILL.md"]);
  });

  it("reads only lines with a fence or a link: lines without either, put anywhere, move the links below them down and change nothing else", () => {
    const notable = fc.constantFrom("[a](x.md)", "![b](img/y.png) and [c](z.md)", "[ref]: r.md", "```", "~~~", "````", "  ```js", "`[d](code.md)`", "text ](w.md", "[e](f.md) ```", "``[i](j.md)`` [k](l.md) `", "`a` [m](n.md) ``o`` `[p](q.md)`");
    const plain = fc.constantFrom("", "plain text", "  indented", "] (not a link)", "\r", "a\u2028b", "`code`", "~~ two");
    fc.assert(
      fc.property(fc.array(fc.tuple(notable, fc.array(plain, { maxLength: 3 })), { minLength: 1, maxLength: 8 }), fc.array(plain, { maxLength: 3 }), (groups, leading) => {
        const bare = groups.map(([line]) => line);
        const padded = [...leading, ...groups.flatMap(([line, after]) => [line, ...after])];
        // Each link's line in the padded body: its notable line's place among the padded lines.
        const placeOf: number[] = [];
        let place = leading.length;
        for (const [, after] of groups) {
          placeOf.push(place);
          place += 1 + after.length;
        }
        const expected = bodyLinks(bare.join("\n"), 1).map((link) => ({ ...link, line: placeOf[link.line - 1]! + 1 }));
        expect(bodyLinks(padded.join("\n"), 1)).toEqual(expected);
      }),
      { numRuns: 2000, seed: 21 },
    );
  });

  it("takes linear time on a hostile line", () => {
    const started = performance.now();
    bodyLinks(`${"[".repeat(200_000)}${"](".repeat(200_000)}${"`".repeat(100_000)}`, 1);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});

async function project(tree: Record<string, string>, rules: object = {}): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, { "skills.config.json": JSON.stringify({ rules, agents: { main: { skills: [{ root: "skills" }] } } }), ...tree });
  return dir;
}

describe("link-broken", () => {
  it("accepts links to the skill's files and folders, and reports one that leads out of it", async () => {
    const dir = await project({
      "skills/linked/SKILL.md": skillMd("linked", "Links.", "[a](references/a.md) [refs](references/) [up](../other/SKILL.md)"),
      "skills/linked/references/a.md": "A",
      "skills/other/SKILL.md": skillMd("other"),
    });
    const diagnostics = (await check({ cwd: dir })).diagnostics.filter((diagnostic) => diagnostic.code === "link-broken");
    expect(diagnostics).toEqual([expect.objectContaining({ line: 6, column: 47, message: 'the link "../other/SKILL.md" leads out of the skill folder: a copy of the skill elsewhere will not have it' })]);
  });
});

describe("brokenLinks", () => {
  it("a link to any folder holding a file is not broken, to any other path it is: against each file's folders named one by one", () => {
    const name = fc.constantFrom("a", "b", "ab");
    const path = fc.array(name, { minLength: 1, maxLength: 5 }).map((names) => names.join("/"));
    fc.assert(
      fc.property(fc.array(path, { maxLength: 12 }), fc.array(path, { maxLength: 12 }), (files, targets) => {
        const folders = new Set(files.flatMap((file) => file.split("/").slice(0, -1).map((_, index, names) => names.slice(0, index + 1).join("/"))));
        const links = targets.map((target, index) => ({ path: target, target, line: index + 1, column: 1 }));
        const broken = brokenLinks("s/SKILL.md", links, files).map((finding) => finding.line! - 1);
        expect(broken).toEqual(targets.flatMap((target, index) => (files.includes(target) || folders.has(target) ? [] : [index])));
      }),
      { numRuns: 500, seed: 7 },
    );
  });
});

describe("brokenLinks past MAX_BROKEN_LINKS_NAMED", () => {
  it("names the first 100 and counts the rest in one finding at the next: a file's findings stay bounded in every output", () => {
    const links = Array.from({ length: 250 }, (_, index) => ({ path: `missing-${index}.md`, target: `missing-${index}.md`, line: index + 5, column: 3 }));
    const findings = brokenLinks("s/SKILL.md", [{ path: "present.md", target: "present.md", line: 1, column: 1 }, ...links], ["SKILL.md", "present.md"]);
    expect(findings).toHaveLength(MAX_BROKEN_LINKS_NAMED + 1);
    expect(findings[99]).toMatchObject({ line: 104, message: 'the link "missing-99.md" names no file in the skill folder' });
    expect(findings[100]).toMatchObject({ code: "link-broken", line: 105, column: 3, count: 150, message: '150 more links name no file in the skill folder, from "missing-100.md" on (the first 100 are named above)' });
    expect(findings.slice(0, 100).every((finding) => finding.count === undefined)).toBe(true);
    expect(brokenLinks("s/SKILL.md", links.slice(0, 101), [])[100]!.message).toMatch(/^1 more link names no file/);
    expect(brokenLinks("s/SKILL.md", links.slice(0, 100), [])).toHaveLength(100);
  });
});

describe("description-duplicate", () => {
  const view = (id: string, names: string[]) => ({ id, prompt: "", skills: names.map((name) => ({ name, description: "Same words.", file: `skills/${name}/SKILL.md` })) });

  it("reports a pair once, naming every agent that lists both: the first three, then how many more", async () => {
    const dir = await tempDir();
    const agents = Object.fromEntries(["coding", "review", "chat", "ops", "docs"].map((id) => [id, { skills: [{ root: "skills" }] }]));
    await writeTree(dir, { "skills.config.json": JSON.stringify({ agents }), "skills/one/SKILL.md": skillMd("one", "Same words."), "skills/two/SKILL.md": skillMd("two", "Same words.") });
    const found = (await check({ cwd: dir })).diagnostics.filter((diagnostic) => diagnostic.code === "description-duplicate");
    expect(found.map(({ file, message }) => ({ file, message }))).toEqual([
      { file: "skills/two/SKILL.md", message: 'agents "coding", "review", "chat" and 2 more: "two" has the same description as "one" (skills/one/SKILL.md), so the model cannot tell which to use' },
    ]);
    expect(descriptionDuplicates([view("a", ["x", "y"]), view("b", ["x", "y", "z"])]).map((finding) => finding.message.split(":")[0])).toEqual(['agents "a" and "b"', 'agent "b"']);
  });

  it("stays one finding a pair however many agents share it: 500 agents over 500 skills of one description", () => {
    const names = Array.from({ length: 500 }, (_, index) => `s${index}`);
    const started = performance.now();
    const findings = descriptionDuplicates(Array.from({ length: 500 }, (_, index) => view(`agent-${index}`, names)));
    expect(findings).toHaveLength(499);
    expect(findings[0]!.message).toMatch(/^agents "agent-0", "agent-1", "agent-2" and 497 more: "s1" has the same description as "s0"/);
    expect(performance.now() - started).toBeLessThan(2_000);
  });
});

describe("body-too-long", () => {
  it("fires at 500 lines, as the Agent Skills specification recommends under 500, and not at 499", () => {
    const lines = (count: number) => Array.from({ length: count }, (_, i) => `line ${i + 1}`).join("\n");
    expect(bodyLengthFinding("long/SKILL.md", lines(499), 5, undefined)).toBeUndefined();
    expect(bodyLengthFinding("long/SKILL.md", lines(500), 5, undefined)).toMatchObject({ code: "body-too-long", line: 5, message: /^the body is 500 lines;/ });
    expect(bodyLengthFinding("long/SKILL.md", "x", 5, 4_999)).toBeUndefined();
    expect(bodyLengthFinding("long/SKILL.md", "x", 5, 5_000)?.message).toMatch(/^the body is 5,000 tokens;/);
  });

  it("counts tokens as well as lines: a short body of many tokens is too long", async () => {
    const dir = await project({ "skills/dense/SKILL.md": skillMd("dense", "Dense.", Array.from({ length: 3000 }, (_, i) => `w${i}x${i * 7}`).join(" ")) }, { "body-too-long": "warn" });
    const [diagnostic] = (await check({ cwd: dir })).diagnostics.filter((d) => d.code === "body-too-long");
    expect(diagnostic?.message).toMatch(/^the body is \d{1,3}(,\d{3})* tokens; the Agent Skills specification recommends under 500 lines and 5,000 tokens$/);
  });

  it("is off by default", async () => {
    const dir = await project({ "skills/long/SKILL.md": skillMd("long", "Long.", "line\n".repeat(600)) });
    expect((await check({ cwd: dir })).diagnostics).toEqual([]);
  });
});
