import { isAscii } from "node:buffer";
import { execFileSync } from "node:child_process";
import fc from "fast-check";
import { existsSync, lstatSync, mkdirSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { mkdir, truncate, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { compile } from "../src/compile/compile.js";
import { loadConfig } from "../src/compile/config.js";
import { discoverRoot, MAX_FOLDER_DEPTH, MAX_SKILL_FOLDER_BYTES, MAX_SKILL_FOLDER_ENTRIES, readAhead, readFolder, readSkillBytes, type TakenStats } from "../src/compile/discover.js";
import { MAX_GITIGNORE_BYTES, MAX_GITIGNORE_PATTERNS } from "../src/compile/gitignore.js";
import { MAX_SKILL_FILE_BYTES } from "../src/compile/parse.js";
import { fileStatsOf } from "../src/compile/resources.js";
import { linkLoops, skillMd, tempDir, writeTree } from "./helpers.js";

// Discovery's guards against a hostile tree (links out of the root, loops, special files, swaps between its steps,
// folders too large), walked in process and without time bounds: test/hostile-fs.test.ts makes the same attacks
// through check() and the CLI, with time bounds.

type Tree = Parameters<typeof writeTree>[1];

/** A root `skills/` under a fresh folder, with `tree` (paths from that folder), walked with paths shown from it. */
async function walked(tree: Tree, options: Parameters<typeof discoverRoot>[2] = {}) {
  const base = await tempDir();
  await writeTree(base, { "skills/good/SKILL.md": skillMd("good"), ...tree });
  const listing = discoverRoot(join(base, "skills"), (path) => relative(base, path), options);
  return { base, listing, found: listing.findings.map((finding) => [finding.code, finding.file]), skills: listing.skills.map((skill) => [skill.dir, skill.files]) };
}

describe("links out of the root are refused, and nothing behind them is listed", () => {
  it("links to /etc, to /etc/passwd and /dev/null, to the home folder, to a parent, from deep inside and from inside a skill", async () => {
    const { base, listing, found, skills } = await walked({
      "skills/etc": { link: "/etc" },
      "skills/passwd/SKILL.md": { link: "/etc/passwd" },
      "skills/null/SKILL.md": { link: "/dev/null" },
      "home/secret/SKILL.md": skillMd("secret"),
      "outside/secret/SKILL.md": skillMd("outside"),
      "skills/home": { link: "../home" },
      "skills/up": { link: ".." },
      "skills/deep/way/up": { link: "../../../outside" },
      "skills/file/SKILL.md": { link: "../../outside/secret/SKILL.md" },
      "skills/good/refs": { link: "../../outside" },
      "skills/good/passwd.txt": { link: "/etc/passwd" },
    });
    expect(found).toEqual([
      ["symlink-escape", "skills/deep/way/up"],
      ["symlink-escape", "skills/etc"],
      ["symlink-escape", "skills/file/SKILL.md"],
      ["symlink-escape", "skills/good/passwd.txt"],
      ["symlink-escape", "skills/good/refs"],
      ["symlink-escape", "skills/home"],
      ["symlink-escape", "skills/null/SKILL.md"],
      ["symlink-escape", "skills/passwd/SKILL.md"],
      ["symlink-escape", "skills/up"],
    ]);
    expect(listing.findings.find((finding) => finding.file === "skills/etc")).toEqual({
      code: "symlink-escape",
      file: "skills/etc",
      message: `the link skills/etc resolves outside its root (to ${relative(base, "/etc")}); it is not followed`,
      hint: "Copy the skill into the root, or add the link's target as a source of its own in the config.",
    });
    expect(skills).toEqual([["good", ["SKILL.md"]]]);
    expect(listing.folders.every((folder) => folder.startsWith(join(base, "skills")))).toBe(true);
  });

  it("an ignored link out of the root, and a link in a dot entry's name, are neither followed nor reported", async () => {
    const { found, skills, listing } = await walked({
      "outside/leak/SKILL.md": skillMd("leak"),
      "outside/leak.md": "outside",
      "skills/.gitignore": "leak\nbad-*\n",
      "skills/leak": { link: "../outside/leak" },
      "skills/.leak": { link: "../outside/leak" },
      "skills/good/leak": { link: "../../outside/leak" },
      "skills/good/bad-file.md": { link: "../../outside/leak.md" },
      "skills/good/.leak.md": { link: "../../outside/leak.md" },
    });
    expect(found).toEqual([]);
    expect(skills).toEqual([["good", ["SKILL.md"]]]);
    expect(listing.folders).toHaveLength(2); // the root and good/
  });

  it("a link to the root itself is inside it: walked once, not reported", async () => {
    const { found, skills, listing } = await walked({ "skills/again": { link: "." }, "skills/good/root": { link: ".." } });
    expect(found).toEqual([]);
    expect(skills).toEqual([["good", ["SKILL.md"]]]);
    expect(listing.folders).toHaveLength(2);
  });
});

describe("loops, chains and lattices of links end", () => {
  it("a link back to the root, a self link and a chain longer than the system follows", async () => {
    const { listing, skills } = await walked(linkLoops());
    expect(skills).toEqual([["good", ["SKILL.md"]]]);
    expect(listing.findings.map((finding) => finding.message)).toEqual([
      "skills/chain-skill/SKILL.md is a symlink loop, not a file; the folder is not a skill",
      "skills/self-skill/SKILL.md is a symlink loop, not a file; the folder is not a skill",
    ]);
  });

  it("a lattice of links (two to the next folder, 10 levels) lists each real folder once, at the first path in path order", async () => {
    const tree: Tree = { "skills/d10/leaf/SKILL.md": skillMd("leaf") };
    for (let level = 0; level < 10; level++) {
      tree[`skills/d${level}/a`] = { link: `../d${level + 1}` };
      tree[`skills/d${level}/b`] = { link: `../d${level + 1}` };
    }
    const { base, listing, skills } = await walked(tree);
    expect(skills).toEqual([
      ["d0/a/a/a/a/a/a/a/a/a/a/leaf", ["SKILL.md"]],
      ["good", ["SKILL.md"]],
    ]);
    // The root, d0, d1…d10 through d0/a/a/…, leaf, and good: each once.
    expect(listing.folders.map((folder) => folder.slice(base.length + 1))).toEqual([
      "skills",
      "skills/d0",
      ...Array.from({ length: 10 }, (_, level) => `skills/d0${"/a".repeat(level + 1)}`),
      "skills/d0/a/a/a/a/a/a/a/a/a/a/leaf",
      "skills/good",
    ]);
  });
});

describe("a skill folder's limits", () => {
  /** A skill folder holding SKILL.md, `d/` with 100 files and 98 links to `d/`: 1 + 99 × 101 = 10,000 entries. */
  async function wide(extra: Tree = {}) {
    const tree: Tree = { "skills/wide/SKILL.md": skillMd("wide"), ...extra };
    for (let file = 0; file < 100; file++) tree[`skills/wide/d/f${String(file).padStart(3, "0")}.md`] = "x";
    for (let link = 0; link < 98; link++) tree[`skills/wide/l${String(link).padStart(2, "0")}`] = { link: "d" };
    return walked(tree);
  }

  it(`${MAX_SKILL_FOLDER_ENTRIES.toLocaleString("en-US")} entries (each path links lead to counted) are listed whole`, async () => {
    const { listing } = await wide();
    expect(listing.findings).toEqual([]);
    expect(listing.skills.find((skill) => skill.dir === "wide")!.files).toHaveLength(1 + 99 * 100);
  });

  it("one more is skill-folder-too-large, the last in path order left out", async () => {
    const { listing } = await wide({ "skills/wide/z.md": "one too many" });
    expect(listing.findings).toEqual([
      expect.objectContaining({
        code: "skill-folder-too-large",
        file: "skills/wide/SKILL.md",
        message: "the skill folder skills/wide holds more than 10,000 files and folders (counting each path its links lead to); the rest are left out of its file list",
        hint: "Move large material out of the skill folder, or remove links that lead to the same folders many times over.",
      }),
    ]);
    const files = listing.skills.find((skill) => skill.dir === "wide")!.files;
    expect(files).toHaveLength(1 + 99 * 100);
    expect(files).not.toContain("z.md");
  });

  it(`a file ${MAX_FOLDER_DEPTH} folders below the root is the skill's; one a folder deeper is folder-too-deep, the skill kept with its other files`, async () => {
    const below = (depth: number) => Array.from({ length: depth - 1 }, () => "r").join("/");
    const { listing } = await walked({ "skills/deep/SKILL.md": skillMd("deep"), [`skills/deep/${below(MAX_FOLDER_DEPTH)}/kept.md`]: "x", [`skills/deep/${below(MAX_FOLDER_DEPTH)}/r/lost.md`]: "x" });
    expect(listing.findings).toEqual([
      expect.objectContaining({
        code: "folder-too-deep",
        file: `skills/deep/${below(MAX_FOLDER_DEPTH + 1)}`,
        message: `the folder skills/deep/${below(MAX_FOLDER_DEPTH + 1)} lies more than 256 folders below its root; nothing in it is read`,
        hint: "Keep skills and their files within 256 folders of the root.",
      }),
    ]);
    expect(listing.skills.find((skill) => skill.dir === "deep")!.files).toEqual(["SKILL.md", `${below(MAX_FOLDER_DEPTH)}/kept.md`]);
  });

  it("a folder too deep on one path is walked where a link reaches it nearer the root", async () => {
    const chain = Array.from({ length: MAX_FOLDER_DEPTH + 1 }, () => "a").join("/");
    const { listing, skills } = await walked({ [`skills/${chain}/x/SKILL.md`]: skillMd("x"), "skills/z": { link: chain } });
    expect(listing.findings).toEqual([expect.objectContaining({ code: "folder-too-deep", file: `skills/${chain}` })]);
    expect(skills.map(([dir]) => dir)).toEqual(["good", "z/x"]);
  });

  it(`files totalling ${MAX_SKILL_FOLDER_BYTES / 1024 / 1024} MiB are kept, SKILL.md counted once; past it the rest are left out (sparse files: only stat'ed)`, async () => {
    const skill = skillMd("big");
    const base = await tempDir();
    await writeTree(base, { "skills/big/SKILL.md": skill, "skills/big/b.bin": "1", "skills/big/c.bin": { link: "a.bin" }, "skills/big/0.md": "" });
    await writeFile(join(base, "skills/big/a.bin"), "");
    await truncate(join(base, "skills/big/a.bin"), MAX_SKILL_FOLDER_BYTES - Buffer.byteLength(skill));
    const listing = discoverRoot(join(base, "skills"), (path) => path.slice(base.length + 1));
    const big = listing.skills[0]!;
    expect(big.files).toEqual(["0.md", "SKILL.md", "a.bin"]);
    expect([...big.identities.keys()].sort()).toEqual(["0.md", "SKILL.md", "a.bin"]);
    expect(listing.findings).toEqual([
      expect.objectContaining({
        code: "skill-files-too-large",
        file: "skills/big/SKILL.md",
        message: "the files of the skill folder skills/big total more than 64 MiB (counting each path its links lead to); 2 of 5, the last in path order, are left out of its file list",
        hint: "Keep large data, models and media out of the skill folder (its files are hashed for the manifest and copied with `stage`), or remove links that lead to the same file many times over.",
      }),
    ]);
  });
});

describe("SKILL.md and a skill's files that are not regular files", () => {
  it("a folder, a FIFO and a link to nothing named SKILL.md: each reported, the walk goes on below the folder", async () => {
    const base = await tempDir();
    await writeTree(base, { "skills/good/SKILL.md": skillMd("good"), "skills/folder/SKILL.md/inner/SKILL.md": skillMd("inner"), "skills/dangling/SKILL.md": { link: "missing.md" } });
    await mkdir(join(base, "skills/fifo"));
    execFileSync("mkfifo", [join(base, "skills/fifo/SKILL.md")]);
    const listing = discoverRoot(join(base, "skills"), (path) => path.slice(base.length + 1));
    expect(listing.skills.map((skill) => [skill.dir, skill.files])).toEqual([
      ["folder/SKILL.md/inner", ["SKILL.md"]],
      ["good", ["SKILL.md"]],
    ]);
    expect(listing.findings.map((finding) => finding.message)).toEqual([
      "skills/dangling/SKILL.md is a link to nothing, not a file; the folder is not a skill",
      "skills/fifo/SKILL.md is a FIFO, not a file; the folder is not a skill",
      "skills/folder/SKILL.md is a folder, not a file; the folder is not a skill",
    ]);
  });

  it("a FIFO among a skill's files, or a link to one: reported and left out unless ignored", async () => {
    const base = await tempDir();
    await writeTree(base, {
      "skills/piped/SKILL.md": skillMd("piped"),
      "skills/piped/.gitignore": "quiet*\n",
      "skills/piped/guide.md": "# Guide\n",
      "skills/piped/to-fifo": { link: "fifo" },
      "skills/piped/quiet-link": { link: "fifo" },
    });
    execFileSync("mkfifo", [join(base, "skills/piped/fifo"), join(base, "skills/piped/quiet-fifo")]);
    const listing = discoverRoot(join(base, "skills"), (path) => path.slice(base.length + 1));
    expect(listing.findings.map((finding) => finding.message)).toEqual([
      "skills/piped/fifo is a FIFO, not a regular file; it is left out of the skill's files",
      "skills/piped/to-fifo is a link to something that is a FIFO, not a regular file; it is left out of the skill's files",
    ]);
    expect(listing.skills[0]!.files).toEqual(["SKILL.md", "guide.md"]);
  });

  it("a folder whose name is not UTF-8 is reported, the rest walked", async () => {
    const base = await tempDir();
    await writeTree(base, { "skills/good/SKILL.md": skillMd("good") });
    const bad = Buffer.concat([Buffer.from(join(base, "skills", "bad")), Buffer.from([0xff])]);
    mkdirSync(bad);
    writeFileSync(Buffer.concat([bad, Buffer.from("/SKILL.md")]), skillMd("bad"));
    const listing = discoverRoot(join(base, "skills"), (path) => path.slice(base.length + 1));
    expect(listing.findings.map((finding) => [finding.code, finding.message])).toEqual([
      ["path-unreadable", "the folder skills/bad\uFFFD has a name that is not valid UTF-8 (rename it); skills below it are left out"],
    ]);
    expect(listing.skills.map((skill) => skill.dir)).toEqual(["good"]);
  });
});

describe("files swapped between discovery's steps", () => {
  it("a file listed, then swapped before it is stat'ed (for a link out, a folder): path-changed, never taken", async () => {
    const base = await tempDir();
    await writeTree(base, { "outside/SKILL.md": skillMd("outside"), "skills/swapped/SKILL.md": skillMd("swapped"), "skills/good/SKILL.md": skillMd("good"), "skills/good/notes.md": "notes" });
    // Each listing as readdir gave it, and then the swap: what a tree changing under the walk does.
    const list = (dir: string) => {
      const entries = readFolder(dir);
      if (dir.endsWith("swapped")) {
        rmSync(join(dir, "SKILL.md"));
        symlinkSync(join(base, "outside/SKILL.md"), join(dir, "SKILL.md"));
      }
      if (dir.endsWith("good")) {
        rmSync(join(dir, "notes.md"));
        mkdirSync(join(dir, "notes.md"));
      }
      return entries;
    };
    const listing = discoverRoot(join(base, "skills"), (path) => path.slice(base.length + 1), { list });
    expect(listing.findings.map((finding) => [finding.code, finding.message])).toEqual([
      ["path-changed", "skills/good/notes.md is no longer the file found inside the root (it was replaced after discovery); it is not read, and it is left out of the skill's files"],
      ["path-changed", "skills/swapped/SKILL.md is no longer the file found inside the root (it was replaced after discovery); it is not read, and the folder is not a skill"],
    ]);
    expect(listing.skills.map((skill) => [skill.dir, skill.files])).toEqual([["good", ["SKILL.md"]]]);
  });

  it("a SKILL.md swapped for a link out of the root after discovery: path-changed, the target never read", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/good/SKILL.md": skillMd("good"),
      "skills/swapped/SKILL.md": skillMd("swapped"),
      "outside/SKILL.md": skillMd("swapped", "SENTINEL-OUTSIDE-THE-ROOT"),
    });
    const swapped = join(dir, "skills/swapped/SKILL.md");
    const result = await compile(await loadConfig(undefined, dir), {
      afterDiscovery: () => {
        rmSync(swapped);
        symlinkSync(join(dir, "outside/SKILL.md"), swapped);
      },
    });
    expect(result.diagnostics.map((diagnostic) => [diagnostic.code, diagnostic.file])).toEqual([["path-changed", "skills/swapped/SKILL.md"]]);
    expect(result.agents[0]!.skills.map((skill) => skill.name)).toEqual(["good"]);
    expect(JSON.stringify(result)).not.toContain("SENTINEL");
  });

  it("readSkillBytes: the file found, or a finding for one swapped, replaced by a folder or a FIFO, or gone", async () => {
    const dir = await tempDir();
    const file = join(dir, "SKILL.md");
    writeFileSync(file, "one\n");
    const found = lstatSync(file, { bigint: true });
    const read = readSkillBytes(file, found);
    expect("bytes" in read && [Buffer.from(read.bytes).toString(), read.stats.ino]).toEqual(["one\n", found.ino]);
    // Another file at the same path: not the one found.
    writeFileSync(join(dir, "other"), "two\n");
    rmSync(file);
    symlinkSync(join(dir, "other"), file);
    expect(readSkillBytes(file, found)).toMatchObject({ code: "path-changed", message: "SKILL.md is no longer the file found inside the root (it was replaced after discovery); it is not read, and the skill is left out" });
    mkdirSync(join(dir, "now-a-folder"));
    execFileSync("mkfifo", [join(dir, "now-a-fifo")]);
    expect(readSkillBytes(join(dir, "now-a-folder"), found)).toMatchObject({ code: "path-unreadable", message: "SKILL.md is not a regular file; the skill is left out" });
    expect(readSkillBytes(join(dir, "now-a-fifo"), found)).toMatchObject({ code: "path-unreadable", message: "SKILL.md is not a regular file; the skill is left out" });
    expect(readSkillBytes(join(dir, "gone"), found)).toMatchObject({ code: "path-unreadable", message: "SKILL.md does not exist; the skill is left out" });
  });

  it("readSkillBytes reads a file whole up to the size limit, and one byte past it of a larger file", async () => {
    const dir = await tempDir();
    for (const size of [0, MAX_SKILL_FILE_BYTES, MAX_SKILL_FILE_BYTES + 1, 3 * MAX_SKILL_FILE_BYTES]) {
      const file = join(dir, `f${size}`);
      const bytes = Buffer.alloc(size, size % 251);
      writeFileSync(file, bytes);
      const read = readSkillBytes(file, lstatSync(file, { bigint: true }));
      if (!("bytes" in read)) throw new Error(read.message);
      expect(Buffer.from(read.bytes).equals(bytes.subarray(0, MAX_SKILL_FILE_BYTES + 1))).toBe(true);
      expect(read.stats.size).toBe(BigInt(size));
    }
  });
});

describe("SKILL.md files read a group ahead", () => {
  it("each item in order with its bytes, its text where decoding is the bytes themselves, what `known` says, or a finding", async () => {
    const dir = await tempDir();
    const contents: Record<string, Buffer> = {
      ascii: Buffer.from("---\nname: a\n---\nplain text\n"),
      empty: Buffer.alloc(0),
      accented: Buffer.from("---\nname: é\n---\ncafé\n"),
      bom: Buffer.from("\uFEFF---\nname: b\n---\n"),
      crlf: Buffer.from("---\r\nname: c\r\n---\r\n"),
      invalid: Buffer.from([0x2d, 0xff, 0x0a]),
      huge: Buffer.alloc(MAX_SKILL_FILE_BYTES + 10, 0x61),
      cached: Buffer.from("not read\n"),
    };
    const items = Object.entries(contents).map(([name, bytes]) => {
      const file = join(dir, name);
      writeFileSync(file, bytes);
      return { name, file, stats: lstatSync(file, { bigint: true }) };
    });
    items.push({ name: "gone", file: join(dir, "gone"), stats: items[0]!.stats });
    const seen = [...readAhead(items, (item) => (item.name === "cached" ? "from the cache" : undefined))].map(([item, read]) => {
      if ("known" in read) return [item.name, read.known];
      if (!("bytes" in read)) return [item.name, read.code];
      expect(Buffer.from(read.bytes).equals(contents[item.name]!.subarray(0, MAX_SKILL_FILE_BYTES + 1))).toBe(true);
      return [item.name, read.text];
    });
    expect(seen).toEqual([
      ["ascii", "---\nname: a\n---\nplain text\n"],
      ["empty", ""],
      ["accented", undefined],
      ["bom", undefined],
      ["crlf", undefined],
      ["invalid", undefined],
      ["huge", undefined],
      ["cached", "from the cache"],
      ["gone", "path-unreadable"],
    ]);
  });

  it("bytes and texts stay right across groups, each checked when its item comes (as they are used)", async () => {
    const dir = await tempDir();
    // ~5 MiB in files of 300-700 KB, ASCII and not, so groups end at either kind and files straddle their ends.
    const files = Array.from({ length: 12 }, (_, index) => {
      const file = join(dir, `f${index}`);
      const line = index % 3 === 0 ? `ünïcödé line ${index}\n` : `plain line ${index}\n`;
      const bytes = Buffer.from(line.repeat(Math.floor((300_000 + index * 37_000) / line.length)));
      writeFileSync(file, bytes);
      return { file, bytes, stats: lstatSync(file, { bigint: true }) };
    });
    let checked = 0;
    for (const [item, read] of readAhead(files, () => undefined)) {
      if (!("bytes" in read)) throw new Error("unread");
      expect(Buffer.from(read.bytes).equals(item.bytes)).toBe(true);
      expect(read.text).toBe(item.bytes.every((byte) => byte < 0x80) ? item.bytes.toString("latin1") : undefined);
      checked++;
    }
    expect(checked).toBe(files.length);
  });
});

describe("texts read ahead are what decoding each file gives", () => {
  it("for any files: ASCII or not, BOMs, NUL bytes, carriage returns and bytes that are not UTF-8", async () => {
    const dir = await tempDir();
    const piece = fc.oneof(
      fc.constantFrom("---\n", "name: x\n", "\uFEFF", "é", "😀", "\0", "\r\n", "\r", "plain text "),
      fc.string({ unit: "binary", maxLength: 6 }),
    );
    const file = fc.oneof(
      fc.array(piece, { maxLength: 12 }).map((pieces) => Buffer.from(pieces.join(""))),
      fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes)),
    );
    let run = 0;
    fc.assert(
      fc.property(fc.array(file, { minLength: 1, maxLength: 8 }), (contents) => {
        const items = contents.map((bytes, index) => {
          const path = join(dir, `r${run}-${index}`);
          writeFileSync(path, bytes);
          return { file: path, bytes, stats: lstatSync(path, { bigint: true }) };
        });
        run++;
        for (const [item, read] of readAhead(items, () => undefined)) {
          if (!("bytes" in read)) throw new Error("unread");
          expect(Buffer.from(read.bytes).equals(item.bytes)).toBe(true);
          // A text is cut for every ASCII file without a carriage return: what decoding it gives.
          expect(read.text).toBe(isAscii(item.bytes) && !item.bytes.includes(0x0d) ? new TextDecoder("utf-8", { fatal: true }).decode(item.bytes) : undefined);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("stats taken earlier in the build", () => {
  it("a file's stats taken earlier are its identity, used once; a file without them is stat'ed", async () => {
    const base = await tempDir();
    await writeTree(base, { "skills/pdf/SKILL.md": skillMd("pdf"), "skills/pdf/notes.md": "notes" });
    const notes = join(base, "skills/pdf/notes.md");
    const earlier = lstatSync(notes, { bigint: true });
    await writeFile(notes, "notes, edited since");
    const filesTaken = new Map<string, TakenStats>([[notes, earlier]]);
    const listing = discoverRoot(join(base, "skills"), (path) => path, { filesTaken });
    const identities = listing.skills[0]!.identities;
    expect(identities.get("notes.md")!.size).toBe(earlier.size);
    expect(identities.get("SKILL.md")!.size).toBe(BigInt(skillMd("pdf").length));
    expect(filesTaken.size).toBe(0);
  });

});

describe("roots", () => {
  it("a root given with a trailing separator names its files without a doubled one", async () => {
    const base = await tempDir();
    await writeTree(base, { "skills/pdf/SKILL.md": skillMd("pdf") });
    const listing = discoverRoot(`${join(base, "skills")}/`, (path) => path);
    expect(listing.skills.map((skill) => skill.file)).toEqual([join(base, "skills/pdf/SKILL.md")]);
    expect(listing.folders).toEqual([`${join(base, "skills")}/`, join(base, "skills/pdf")]);
  });
});

describe("the walk's result does not depend on the order a listing gives", () => {
  /** Each listing reversed: the build cache's copy of a listing, like readdir, comes in any order. */
  const reversed = (dir: string) => readFolder(dir).reverse();
  const same = (listing: ReturnType<typeof discoverRoot>) => JSON.stringify({ ...listing, ignoreFiles: [...listing.ignoreFiles.keys()], skills: listing.skills.map((skill) => ({ ...skill, identities: [...skill.identities.keys()] })) });

  it("a lattice, skills reached twice, hidden ones and enclosed ones, links to a SKILL.md", async () => {
    const tree: Tree = {
      "skills/d3/leaf/SKILL.md": skillMd("leaf"),
      "skills/y/SKILL.md": skillMd("y"),
      "skills/z/SKILL.md": { link: "../y/SKILL.md" },
      "skills/.b/s/SKILL.md": skillMd("s"),
      "skills/.a/.z/t/SKILL.md": { link: "../../../.b/s/SKILL.md" },
      "skills/.store/shared/SKILL.md": skillMd("shared"),
      "skills/shared/SKILL.md": { link: "../.store/shared/SKILL.md" },
      "skills/.x/skill/SKILL.md": skillMd("x"),
      "skills/.x/skill/sub/SKILL.md": skillMd("x-sub"),
      "skills/a/SKILL.md": skillMd("a"),
      "skills/a/sub/SKILL.md": skillMd("a-sub"),
      "skills/a/other": { link: "../y" },
      "skills/a/sub/refs/c.md": "c",
      "skills/a/sub/refs/b.md": "b",
    };
    for (let level = 0; level < 3; level++) {
      tree[`skills/d${level}/b`] = { link: `../d${level + 1}` };
      tree[`skills/d${level}/a`] = { link: `../d${level + 1}` };
    }
    const { base, listing } = await walked(tree);
    const show = (path: string) => relative(base, path);
    expect(listing.skills.map((skill) => [skill.dir, skill.hidden ?? false])).toEqual([
      [".a/.z/t", true], // the same SKILL.md as .b/s: the first in path order
      [".x/skill", true],
      ["a", false],
      ["d0/a/a/a/leaf", false],
      ["good", false],
      ["shared", false], // not .store/shared: a file reached outside dot folders is the skill found there
      ["y", false], // not z, which links to y's SKILL.md
    ]);
    // y's SKILL.md is a skill: a's link to y holds no enclosed SKILL.md.
    expect(listing.enclosed.map((entry) => [entry.dir, entry.within, show(entry.file), show(entry.realFile)])).toEqual([
      [".x/skill/sub", ".x/skill", "skills/.x/skill/sub/SKILL.md", "skills/.x/skill/sub/SKILL.md"],
      ["a/sub", "a", "skills/a/sub/SKILL.md", "skills/a/sub/SKILL.md"],
    ]);
    expect(listing.skills.find((skill) => skill.dir === "a")!.files).toEqual(["SKILL.md", "other/SKILL.md", "sub/SKILL.md", "sub/refs/b.md", "sub/refs/c.md"]);
    expect(same(discoverRoot(join(base, "skills"), show, { list: reversed }))).toBe(same(listing));
  });

  it("over the entry limit and over the byte limit, the same files are left out", async () => {
    const tree: Tree = { "skills/wide/SKILL.md": skillMd("wide"), "skills/wide/z.md": "one too many" };
    for (let file = 0; file < 100; file++) tree[`skills/wide/d/f${String(file).padStart(3, "0")}.md`] = "x";
    for (let link = 0; link < 98; link++) tree[`skills/wide/l${String(link).padStart(2, "0")}`] = { link: "d" };
    const { base, listing } = await walked({ ...tree, "skills/big/SKILL.md": skillMd("big"), "skills/big/a.bin": "", "skills/big/b.bin": "" });
    expect(listing.skills.find((skill) => skill.dir === "wide")!.files).not.toContain("z.md");
    await truncate(join(base, "skills/big/a.bin"), MAX_SKILL_FOLDER_BYTES / 2);
    await truncate(join(base, "skills/big/b.bin"), MAX_SKILL_FOLDER_BYTES / 2);
    const sorted = discoverRoot(join(base, "skills"), (path) => relative(base, path));
    expect(sorted.skills.find((skill) => skill.dir === "big")!.files).toEqual(["SKILL.md", "a.bin"]);
    expect(same(discoverRoot(join(base, "skills"), (path) => relative(base, path), { list: reversed }))).toBe(same(sorted));
  });
});

describe("ignore rules at each kind of entry", () => {
  it("folder-only patterns: never a SKILL.md file, a FIFO or a link to a file; always a folder, a dot folder, a link to a folder", async () => {
    const base = await tempDir();
    await writeTree(base, {
      "skills/.gitignore": "SKILL.md/\nfifo/\nto-fifo/\n.curated/\n.private/\ndrafts/\nlinked/\nbuild/\n",
      "skills/good/SKILL.md": skillMd("good"),
      "skills/good/sub/SKILL.md": skillMd("sub"),
      "skills/good/to-fifo": { link: "fifo" },
      "skills/good/build/out": { link: "../../../outside" },
      "skills/good/.private/notes/SKILL.md": skillMd("notes"),
      "skills/.curated/hidden/SKILL.md": skillMd("hidden"),
      "skills/drafts/idea/SKILL.md": skillMd("idea"),
      "skills/drafts/out": { link: "../../outside" },
      "skills/linked": { link: "real" },
      "skills/real/x/SKILL.md": skillMd("x"),
      "outside/SKILL.md": skillMd("outside"),
    });
    execFileSync("mkfifo", [join(base, "skills/good/fifo")]);
    const listing = discoverRoot(join(base, "skills"), (path) => relative(base, path));
    expect(listing.skills.map((skill) => skill.dir)).toEqual(["good", "real/x"]);
    expect(listing.enclosed.map((entry) => entry.dir)).toEqual(["good/sub"]);
    expect(listing.findings.map((finding) => finding.file)).toEqual(["skills/good/fifo", "skills/good/to-fifo"]);
    // Ignored folders are not listed: a link out of the root inside one is not reported.
    expect(listing.folders.map((folder) => relative(base, folder))).toEqual(["skills", "skills/good", "skills/good/sub", "skills/real", "skills/real/x"]);
  });

  it("a .gitignore that is a link is not read, as git does not read one", async () => {
    const base = await tempDir();
    await writeTree(base, { "outside/rules": "secret/\n", "skills/.gitignore": { link: "../outside/rules" }, "skills/README.md": "a file beside it", "skills/secret/SKILL.md": skillMd("secret") });
    const listing = discoverRoot(join(base, "skills"), (path) => relative(base, path));
    expect(listing.skills.map((skill) => skill.dir)).toEqual(["secret"]);
    expect(listing.ignoreFiles.size).toBe(0);
  });

  it("each .gitignore read is recorded with its file's stats", async () => {
    const base = await tempDir();
    await writeTree(base, { "skills/.gitignore": "drafts/\n", "skills/pdf/SKILL.md": skillMd("pdf"), "skills/pdf/.gitignore": "*.log\n" });
    const listing = discoverRoot(join(base, "skills"), (path) => path);
    const files = [join(base, "skills/.gitignore"), join(base, "skills/pdf/.gitignore")];
    expect([...listing.ignoreFiles]).toEqual(files.map((file) => [file, fileStatsOf(lstatSync(file, { bigint: true }))]));
  });
});

describe("a .gitignore's limits", () => {
  /** `count` patterns that match no name here (wildcards: each is tried against every path), and `last`. */
  const patterns = (count: number, last: string) => `# many\n\n${Array.from({ length: count - 1 }, (_, i) => `*zz${i}*`).join("\n")}\n${last}\n`;

  it(`${MAX_GITIGNORE_PATTERNS.toLocaleString("en-US")} patterns in all (a root's and a skill's, comments and blank lines aside) are honoured`, async () => {
    const { found, skills } = await walked({ "skills/.gitignore": patterns(600, "*.log"), "skills/pdf/SKILL.md": skillMd("pdf"), "skills/pdf/.gitignore": patterns(400, "*.tmp"), "skills/pdf/a.log": "", "skills/pdf/b.tmp": "", "skills/pdf/c.md": "" });
    expect(found).toEqual([]);
    expect(skills).toEqual([
      ["good", ["SKILL.md"]],
      ["pdf", ["SKILL.md", "c.md"]],
    ]);
  });

  it("one more is gitignore-too-large: everything in that folder is left out, the rest walked", async () => {
    const { listing, skills } = await walked({ "skills/.gitignore": patterns(600, "*.log"), "skills/pdf/SKILL.md": skillMd("pdf"), "skills/pdf/.gitignore": patterns(401, "*.tmp"), "skills/pdf/c.md": "" });
    expect(listing.findings).toEqual([
      {
        code: "gitignore-too-large",
        file: "skills/pdf/.gitignore",
        message: "skills/pdf/.gitignore and the .gitignore files above it hold 1,001 patterns, more than the 1,000 a build tries each path against; everything in skills/pdf is left out",
        hint: "Keep a .gitignore inside a skills root to the patterns its folder needs, or narrow discovery with the source's `exclude` globs.",
      },
    ]);
    expect(skills).toEqual([["good", ["SKILL.md"]]]);
    // Recorded as read: a rebuild walks again once it changes.
    expect(listing.ignoreFiles.size).toBe(2);
  });

  it("in a folder of a skill, that folder's files are left out of the skill, which is kept", async () => {
    const { found, skills } = await walked({ "skills/pdf/SKILL.md": skillMd("pdf"), "skills/pdf/c.md": "", "skills/pdf/scripts/.gitignore": patterns(1001, "*.tmp"), "skills/pdf/scripts/run.sh": "" });
    expect(found).toEqual([["gitignore-too-large", "skills/pdf/scripts/.gitignore"]]);
    expect(skills).toEqual([
      ["good", ["SKILL.md"]],
      ["pdf", ["SKILL.md", "c.md"]],
    ]);
  });

  it("a pattern with `**` as a name twice before its last name is gitignore-too-large, at its line; one such `**` is honoured", async () => {
    const tree = { "skills/pdf/SKILL.md": skillMd("pdf"), "skills/pdf/a/x/b": "", "skills/pdf/c/d/e.log": "", "skills/pdf/keep.md": "" };
    const honoured = await walked({ ...tree, "skills/.gitignore": "# one each\npdf/**/b\n**/d/**\ndata/**/*\n!plugins/**/uv.lock\n**/nothing/**\n" });
    expect(honoured.found).toEqual([]);
    expect(honoured.skills).toEqual([
      ["good", ["SKILL.md"]],
      ["pdf", ["SKILL.md", "keep.md"]],
    ]);
    for (const pattern of ["**/a/**/b", "a/**/b/**/c", "!x/**/**/y", "/**/d/**/ "]) {
      const { listing, skills } = await walked({ ...tree, "skills/.gitignore": `# costly\n*.log\n${pattern}\n` });
      expect(listing.findings).toEqual([
        {
          code: "gitignore-too-large",
          file: "skills/.gitignore",
          line: 3,
          column: 1,
          message: "skills/.gitignore holds a pattern with `**` as a name twice before its last name (as `**/a/**/b` does), which takes time growing with a path's depth squared or more to try; everything in skills is left out",
          hint: "Write the pattern with one `**` before its last name (`**/b`, `a/**/b`), or narrow discovery with the source's `exclude` globs.",
        },
      ]);
      expect(skills).toEqual([]);
    }
  });

  it(`a .gitignore over ${MAX_GITIGNORE_BYTES / 1024 / 1024} MiB is not read: everything in its folder is left out`, async () => {
    const { listing, skills } = await walked({ "skills/.gitignore": `${"#".repeat(MAX_GITIGNORE_BYTES)}\n` });
    expect(listing.findings).toEqual([expect.objectContaining({ code: "gitignore-too-large", file: "skills/.gitignore", message: "skills/.gitignore is over 1 MiB; everything in skills is left out" })]);
    expect(skills).toEqual([]);
  });
});

describe("what a walk refuses or cannot read", () => {
  it("a root that does not exist, whose name is too long, or that is a file: nothing else in the listing", async () => {
    const base = await tempDir();
    await writeTree(base, { "notes.md": "a file" });
    const empty = { skills: [], enclosed: [], findings: [], folders: [], ignoreFiles: new Map() };
    for (const [root, reason] of [
      [join(base, "nope"), "does not exist"],
      [join(base, "x".repeat(5000)), "does not exist"],
    ] as const) {
      expect(discoverRoot(root, () => "root")).toEqual({ root, ...empty, unusable: { code: "root-missing", reason } });
    }
    const file = join(base, "notes.md");
    expect(discoverRoot(file, () => "notes.md")).toEqual({ root: file, ...empty, unusable: { code: "root-not-folder", reason: "is a file, not a folder" } });
  });

  it("a SKILL.md link out of the root refuses its folder: nothing below it is walked", async () => {
    const { found, skills } = await walked({ "outside/SKILL.md": skillMd("outside"), "skills/leaky/SKILL.md": { link: "../../outside/SKILL.md" }, "skills/leaky/inner/SKILL.md": skillMd("inner") });
    expect(found).toEqual([["symlink-escape", "skills/leaky/SKILL.md"]]);
    expect(skills).toEqual([["good", ["SKILL.md"]]]);
  });

  it("a SKILL.md that is a link to another file inside the root: that file is the skill's", async () => {
    const { base, listing } = await walked({ "skills/notes/main.md": skillMd("linked"), "skills/linked/SKILL.md": { link: "../notes/main.md" } });
    expect(listing.skills.map((skill) => [skill.dir, relative(base, skill.realFile)])).toEqual([
      ["good", "skills/good/SKILL.md"],
      ["linked", "skills/notes/main.md"],
    ]);
    expect(listing.findings).toEqual([]);
  });

  it("inside a skill: a broken link, a link to its own subfolder, a SKILL.md link to nothing, a hidden skill's link to the root", async () => {
    const { base, listing, found } = await walked({
      "skills/pdf/SKILL.md": skillMd("pdf"),
      "skills/pdf/broken": { link: "nowhere" },
      "skills/pdf/refs/again": { link: "." },
      "skills/pdf/refs/a.md": "a",
      "skills/pdf/draft/SKILL.md": { link: "missing.md" },
      "skills/pdf/.private/notes/SKILL.md": skillMd("notes"),
      "skills/pdf/.private/notes/up": { link: "../../.." },
    });
    expect(found).toEqual([]);
    expect(listing.skills.map((skill) => [skill.dir, skill.files])).toEqual([
      ["good", ["SKILL.md"]],
      ["pdf", ["SKILL.md", "refs/a.md"]],
      ["pdf/.private/notes", ["SKILL.md"]],
    ]);
    const draft = join(base, "skills/pdf/draft/SKILL.md");
    expect(listing.enclosed).toEqual([{ file: draft, realFile: draft, dir: "pdf/draft", within: "pdf", hidden: false }]);
  });

  it("with `nested`, a skill inside a skill's folder is listed once", async () => {
    const { listing } = await walked({ "skills/pdf/SKILL.md": skillMd("pdf"), "skills/pdf/forms/SKILL.md": skillMd("forms"), "skills/pdf/forms/guide.md": "guide" }, { nested: true });
    expect(new Set(listing.folders).size).toBe(listing.folders.length);
    expect(listing.skills.map((skill) => [skill.dir, skill.files])).toEqual([
      ["good", ["SKILL.md"]],
      ["pdf", ["SKILL.md"]],
      ["pdf/forms", ["SKILL.md", "guide.md"]],
    ]);
  });

  it("a folder that cannot be listed, or a file gone before it is stat'ed: path-unreadable, the rest walked", async () => {
    const base = await tempDir();
    await writeTree(base, {
      "skills/locked/inner/SKILL.md": skillMd("inner"),
      "skills/pdf/SKILL.md": skillMd("pdf"),
      "skills/pdf/locked/a.md": "a",
      "skills/pdf/gone.md": "gone",
      "skills/pdf/.gitignore": "*.log\n",
    });
    const list = (dir: string) => {
      if (dir.endsWith("locked")) throw new Error("no listing here");
      const entries = readFolder(dir);
      if (dir.endsWith("pdf")) rmSync(join(dir, "gone.md"));
      if (dir.endsWith("pdf")) rmSync(join(dir, ".gitignore"));
      return entries;
    };
    const listing = discoverRoot(join(base, "skills"), (path) => relative(base, path), { list });
    expect(listing.findings.map((finding) => [finding.code, finding.message])).toEqual([
      ["path-unreadable", "the folder skills/locked cannot be read (no listing here); skills below it are left out"],
      ["path-unreadable", "skills/pdf/gone.md does not exist; it is left out of the skill's files"],
      ["path-unreadable", "the folder skills/pdf/locked cannot be read (no listing here); its files are left out of the skill"],
    ]);
    expect(listing.findings.map((finding) => finding.file)).toEqual(["skills/locked", "skills/pdf/gone.md", "skills/pdf/locked"]);
    expect(listing.skills.map((skill) => [skill.dir, skill.files])).toEqual([["pdf", ["SKILL.md"]]]);
  });

  it.skipIf(!existsSync("/proc/self/fd"))("every file a walk and a read open is closed, whether it was read or not", async () => {
    const base = await tempDir();
    await writeTree(base, { "skills/.gitignore": "drafts/\n", "skills/pdf/SKILL.md": skillMd("pdf"), "skills/pdf/.gitignore": "*.log\n" });
    const open = () => readdirSync("/proc/self/fd").length;
    const before = open();
    for (let round = 0; round < 20; round++) {
      const listing = discoverRoot(join(base, "skills"), (path) => path);
      const file = join(base, "skills/pdf/SKILL.md");
      expect("bytes" in readSkillBytes(file, listing.skills[0]!.identities.get("SKILL.md")!)).toBe(true);
      expect(readSkillBytes(file, { dev: 0n, ino: 0n })).toMatchObject({ code: "path-changed" });
    }
    expect(open()).toBe(before);
  });

  it.skipIf(!existsSync("/proc/self/status"))("readSkillBytes reads a file whose stat size does not tell its length (a /proc file) to its end", async () => {
    const file = "/proc/self/status";
    const read = readSkillBytes(file, lstatSync(file, { bigint: true }));
    if (!("bytes" in read)) throw new Error(read.message);
    expect(read.stats.size).toBe(0n);
    expect(Buffer.from(read.bytes).toString()).toMatch(/^Name:.*\n[\s\S]*\nPid:\s+\d+\n/);
  });
});
