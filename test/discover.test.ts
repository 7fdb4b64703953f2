import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { discoverRoot } from "../src/compile/discover.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

/** The skills a root gives by Pi's rules: none found only through a dot folder. */
const list = async (root: string) =>
  (await discoverRoot(root, (path) => path.slice(root.length + 1) || ".")).skills.filter((skill) => !skill.hidden).map((skill) => skill.dir);

describe("discoverRoot", () => {
  it("treats a skill folder's subfolders as its resources, and skips dot folders and node_modules", async () => {
    const root = await tempDir();
    await writeTree(root, {
      "pdf/SKILL.md": skillMd("pdf"),
      "pdf/references/SKILL.md": skillMd("not-a-skill"),
      "pdf/scripts/deep/SKILL.md": skillMd("not-either"),
      "group/inner/SKILL.md": skillMd("inner"),
      ".hidden/secret/SKILL.md": skillMd("secret"),
      "node_modules/dep/SKILL.md": skillMd("dep"),
    });
    expect(await list(root)).toEqual(["group/inner", "pdf"]);
  });

  it("finds the skills only dot folders hold, as hidden, walking them after the rest; never enters .git or node_modules", async () => {
    const root = await tempDir();
    await writeTree(root, {
      ".curated/gh-fix-ci/SKILL.md": skillMd("gh-fix-ci"),
      ".system/.deeper/inner/SKILL.md": skillMd("inner"),
      ".store/shared/SKILL.md": skillMd("shared"),
      "shared": { link: ".store/shared" },
      "pdf/SKILL.md": skillMd("pdf"),
      "pdf/.private/notes/SKILL.md": skillMd("notes"),
      ".git/hooks/SKILL.md": skillMd("git-internal"),
      "node_modules/dep/SKILL.md": skillMd("dep"),
      ".gitignore": ".cache/\n",
      ".cache/tmp/SKILL.md": skillMd("tmp"),
    });
    const listing = discoverRoot(root, (path) => path);
    // The skill a link reaches is found at the link's path, not in the dot folder that holds it.
    expect(listing.skills.map((skill) => [skill.dir, skill.hidden ?? false])).toEqual([
      [".curated/gh-fix-ci", true],
      [".system/.deeper/inner", true],
      ["pdf", false],
      ["pdf/.private/notes", true],
      ["shared", false],
    ]);
    // A dot folder's files are not the enclosing skill's.
    expect(listing.skills.find((skill) => skill.dir === "pdf")!.files).toEqual(["SKILL.md"]);
    expect(listing.findings).toEqual([]);
  });

  it("records each SKILL.md inside a skill's folder as enclosed, or with `nested` makes it a skill whose files the enclosing one no longer lists", async () => {
    const root = await tempDir();
    await writeTree(root, {
      "qdrant-scaling/SKILL.md": skillMd("qdrant-scaling"),
      "qdrant-scaling/scaling-data-volume/SKILL.md": skillMd("qdrant-scaling-data-volume"),
      "qdrant-scaling/scaling-data-volume/horizontal-scaling/SKILL.md": skillMd("qdrant-horizontal-scaling"),
      "qdrant-scaling/scaling-data-volume/horizontal-scaling/notes.md": "notes",
      "qdrant-scaling/references/guide.md": "guide",
    });
    const flat = discoverRoot(root, (path) => path.slice(root.length + 1));
    expect(flat.skills.map((skill) => skill.dir)).toEqual(["qdrant-scaling"]);
    expect(flat.skills[0]!.files).toEqual([
      "SKILL.md",
      "references/guide.md",
      "scaling-data-volume/SKILL.md",
      "scaling-data-volume/horizontal-scaling/SKILL.md",
      "scaling-data-volume/horizontal-scaling/notes.md",
    ]);
    expect(flat.enclosed.map(({ dir, within }) => [dir, within])).toEqual([
      ["qdrant-scaling/scaling-data-volume", "qdrant-scaling"],
      ["qdrant-scaling/scaling-data-volume/horizontal-scaling", "qdrant-scaling"],
    ]);
    const nested = discoverRoot(root, (path) => path.slice(root.length + 1), { nested: true });
    expect(nested.skills.map((skill) => [skill.dir, skill.files])).toEqual([
      ["qdrant-scaling", ["SKILL.md", "references/guide.md"]],
      ["qdrant-scaling/scaling-data-volume", ["SKILL.md"]],
      ["qdrant-scaling/scaling-data-volume/horizontal-scaling", ["SKILL.md", "notes.md"]],
    ]);
    expect(nested.enclosed).toEqual([]);
  });

  it("lists in path order whatever the creation order: depth first, bytewise names", async () => {
    const root = await tempDir();
    for (const dir of ["b", "a-c", "a/b", "B", "é", "a/a"]) {
      await mkdir(join(root, dir), { recursive: true });
      await writeFile(join(root, dir, "SKILL.md"), skillMd("x"));
    }
    // "a/…" before "a-c": a folder's entries are compared by name ("a" < "a-c"), not as whole path strings.
    expect(await list(root)).toEqual(["B", "a/a", "a/b", "a-c", "b", "é"]);
  });

  it("honours .gitignore files with git's semantics, nested ones included", async () => {
    const root = await tempDir();
    await writeTree(root, {
      ".gitignore": "drafts/\n*-wip\n!keep-wip\n",
      "drafts/idea/SKILL.md": skillMd("idea"),
      "tool-wip/SKILL.md": skillMd("tool-wip"),
      "keep-wip/SKILL.md": skillMd("keep-wip"),
      "team/.gitignore": "private\n",
      "team/private/SKILL.md": skillMd("private"),
      "team/public/SKILL.md": skillMd("public"),
      "team/sub/private/SKILL.md": skillMd("private"),
      "other/private/SKILL.md": skillMd("private"),
    });
    expect(await list(root)).toEqual(["keep-wip", "other/private", "team/public"]);
  });

  it("lets a deeper .gitignore re-include what a shallower one excluded, but nothing below an excluded folder", async () => {
    const root = await tempDir();
    await writeTree(root, {
      ".gitignore": "*-wip\ndrafts/\n",
      "sub/.gitignore": "!tool-wip\n",
      "sub/tool-wip/SKILL.md": skillMd("tool-wip"),
      "sub/other-wip/SKILL.md": skillMd("other-wip"),
      "drafts/.gitignore": "!idea\n",
      "drafts/idea/SKILL.md": skillMd("idea"),
      "team/.gitignore": "!tool-wip\n",
      "team/tool-wip/.gitignore": "*.log\n",
      "team/tool-wip/SKILL.md": skillMd("tool-wip"),
      "team/tool-wip/notes-wip": "excluded by the root's pattern, as a file",
      "team/tool-wip/run.log": "excluded by its own folder's pattern",
      "team/tool-wip/guide.md": "kept",
    });
    const listing = await discoverRoot(root, (path) => path);
    expect(listing.skills.map((skill) => [skill.dir, skill.files])).toEqual([
      ["sub/tool-wip", ["SKILL.md"]],
      ["team/tool-wip", ["SKILL.md", "guide.md"]],
    ]);
    // What git itself keeps in that tree.
    execFileSync("git", ["init", "-q"], { cwd: root });
    const kept = execFileSync("git", ["ls-files", "--others", "--exclude-standard"], { cwd: root, encoding: "utf8" });
    expect(kept.split("\n").filter((path) => path.endsWith(".md")).sort()).toEqual(["sub/tool-wip/SKILL.md", "team/tool-wip/SKILL.md", "team/tool-wip/guide.md"]);
  });

  it("follows links inside the root, skips broken ones, counts a file reached twice once, and ends cycles", async () => {
    const root = await tempDir();
    await writeTree(root, {
      "real/pdf/SKILL.md": skillMd("pdf"),
      "alias": { link: "real/pdf" },
      "broken": { link: "nowhere" },
      "real/loop": { link: ".." },
      "file-link/SKILL.md": { link: "../real/pdf/SKILL.md" },
    });
    const listing = await discoverRoot(root, (path) => path);
    expect(listing.skills.map((skill) => skill.dir)).toEqual(["alias"]);
    expect(listing.findings).toEqual([]);
  });

  it("refuses links that leave the root, without reading behind them", async () => {
    const base = await tempDir();
    await writeTree(base, { "outside/leak/SKILL.md": skillMd("leak"), "root/leak": { link: "../outside/leak" }, "root/up": { link: ".." } });
    const listing = await discoverRoot(join(base, "root"), (path) => path.slice(base.length + 1));
    expect(listing.skills).toEqual([]);
    expect(listing.findings.map((finding) => [finding.code, finding.file])).toEqual([
      ["symlink-escape", "root/leak"],
      ["symlink-escape", "root/up"],
    ]);
    // A link to the config folder itself names it ".", not an empty string.
    expect(listing.findings[1]!.message).toBe("the link root/up resolves outside its root (to .); it is not followed");
  });

  it("refuses links into a sibling folder whose name starts with the root's (skills-private beside skills)", async () => {
    const base = await tempDir();
    await writeTree(base, {
      "skills-private/secret/SKILL.md": skillMd("secret"),
      "skills/secret": { link: "../skills-private/secret" },
      "skills/leaky/SKILL.md": { link: "../../skills-private/secret/SKILL.md" },
      "skills/pdf/SKILL.md": skillMd("pdf"),
      "skills/pdf/private": { link: "../../skills-private/secret" },
      "skills/pdf/secret.md": { link: "../../skills-private/secret/SKILL.md" },
    });
    const listing = await discoverRoot(join(base, "skills"), (path) => path.slice(base.length + 1));
    expect(listing.skills.map((skill) => [skill.dir, skill.files])).toEqual([["pdf", ["SKILL.md"]]]);
    expect(listing.findings.map((finding) => [finding.code, finding.file])).toEqual([
      ["symlink-escape", "skills/leaky/SKILL.md"],
      ["symlink-escape", "skills/pdf/private"],
      ["symlink-escape", "skills/pdf/secret.md"],
      ["symlink-escape", "skills/secret"],
    ]);
  });

  it("accepts a root that is itself a skill, or itself a link", async () => {
    const base = await tempDir();
    await writeTree(base, { "solo/SKILL.md": skillMd("solo"), "linked": { link: "solo" } });
    expect(await list(join(base, "solo"))).toEqual([""]);
    const viaLink = await discoverRoot(join(base, "linked"), (path) => path);
    expect(viaLink.skills.map((skill) => skill.file)).toEqual([join(base, "linked", "SKILL.md")]);
  });

  it("says why a root gives nothing: it does not exist, or it is a file", async () => {
    const base = await tempDir();
    await writeTree(base, { "notes.md": "a file" });
    expect(discoverRoot(join(base, "nope"), () => "nope").unusable).toEqual({ code: "root-missing", reason: "does not exist" });
    expect(discoverRoot(join(base, "notes.md"), () => "notes.md").unusable).toEqual({ code: "root-not-folder", reason: "is a file, not a folder" });
  });

  it("lists a skill folder's files by the same rules: ignored, dot and node_modules entries out, links inside the root followed, cycles ended", async () => {
    const root = await tempDir();
    await writeTree(root, {
      "pdf/SKILL.md": skillMd("pdf"),
      "pdf/.gitignore": "build/\n",
      "pdf/build/out.js": "ignored by the skill's own .gitignore",
      "pdf/references/a.md": "a",
      "pdf/references/.draft.md": "dot file",
      "pdf/node_modules/dep/index.js": "dependency",
      "pdf/loop": { link: "." },
      "pdf/scripts/up": { link: "../.." },
      "pdf/logo.png": { link: "../assets/logo.png" },
      "assets/logo.png": "png",
    });
    const listing = await discoverRoot(root, (path) => path.slice(root.length + 1));
    expect(listing.skills.map((skill) => [skill.dir, skill.files])).toEqual([["pdf", ["SKILL.md", "logo.png", "references/a.md"]]]);
    expect(listing.findings).toEqual([]);
  });
});
