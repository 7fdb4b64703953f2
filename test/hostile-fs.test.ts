import { execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { build, check } from "../src/api.js";
import { bundleOf, bundleTexts } from "../src/bundle/bundle.js";
import type { Diagnostic } from "../src/compile/diagnostics.js";
import { MAX_FOLDER_DEPTH, MAX_SKILL_FOLDER_BYTES, MAX_SKILL_FOLDER_ENTRIES, readSkillBytes } from "../src/compile/discover.js";
import { MAX_GITIGNORE_PATTERNS, MAX_GITIGNORE_TESTS } from "../src/compile/gitignore.js";
import { CLI, linkLoops, skillMd, tempDir, writeTree } from "./helpers.js";

type Tree = Parameters<typeof writeTree>[1];

/** A project with one agent over `skills/` (and more sources if given), plus `tree`. */
async function project(tree: Tree, config: object = { agents: { main: { skills: [{ root: "skills" }] } } }): Promise<string> {
  const dir = await tempDir();
  await writeTree(dir, { "skills.config.json": JSON.stringify(config), "skills/good/SKILL.md": skillMd("good"), ...tree });
  return dir;
}

/** check(), and everything it would show or write: diagnostics, prompts, manifest and modules as one text. */
async function checkAll(dir: string) {
  const result = await check({ cwd: dir });
  const output = [JSON.stringify(result.diagnostics), ...bundleTexts(bundleOf(result)).values()].join("\n");
  return { result, output, codes: result.diagnostics.map((diagnostic) => diagnostic.code), skills: result.agents[0]!.skills.map((skill) => skill.file) };
}

function find(diagnostics: readonly Diagnostic[], file: string): Diagnostic | undefined {
  return diagnostics.find((diagnostic) => diagnostic.file === file);
}

/** What a skill outside the root would put into the outputs if it were ever read. */
const SENTINEL = "SENTINEL-OUTSIDE-THE-ROOT";

describe("links out of the root are never followed, and nothing outside is read", () => {
  it("a folder link to /etc and a SKILL.md link to /etc/passwd and to /dev/null: symlink-escape each", async () => {
    const dir = await project({ "skills/etc": { link: "/etc" }, "skills/passwd/SKILL.md": { link: "/etc/passwd" }, "skills/null/SKILL.md": { link: "/dev/null" } });
    const { result, output, skills } = await checkAll(dir);
    expect(find(result.diagnostics, "skills/etc")).toMatchObject({ code: "symlink-escape", message: `the link skills/etc resolves outside its root (to ${relative(dir, "/etc")}); it is not followed` });
    expect(find(result.diagnostics, "skills/passwd/SKILL.md")).toMatchObject({ code: "symlink-escape" });
    expect(find(result.diagnostics, "skills/null/SKILL.md")).toMatchObject({ code: "symlink-escape" });
    expect(output).not.toContain("root:x:0:0");
    expect(skills).toEqual(["skills/good/SKILL.md"]);
  });

  it("links to the home folder and to a parent of the root: the skills beyond are never read", async () => {
    const dir = await project({
      "home/secret/SKILL.md": skillMd("secret", `${SENTINEL} in home.`),
      "outside/secret/SKILL.md": skillMd("outside", `${SENTINEL} beside the root.`),
      "skills/home": { link: "../home" },
      "skills/up": { link: ".." },
      "skills/deep/way/up": { link: "../../../outside" },
      "skills/file/SKILL.md": { link: "../../outside/secret/SKILL.md" },
    });
    const { result, output, skills } = await checkAll(dir);
    expect(result.diagnostics.filter((diagnostic) => diagnostic.code === "symlink-escape").map((diagnostic) => diagnostic.file)).toEqual([
      "skills/deep/way/up",
      "skills/file/SKILL.md",
      "skills/home",
      "skills/up",
    ]);
    expect(output).not.toContain(SENTINEL);
    expect(skills).toEqual(["skills/good/SKILL.md"]);
  });

  it("a root that is itself a link is walked at the link's path", async () => {
    const dir = await project({ "real-skills/linked/SKILL.md": skillMd("linked"), "linked-root": { link: "real-skills" } }, { location: "relative", agents: { main: { skills: [{ root: "linked-root" }] } } });
    const { result, skills } = await checkAll(dir);
    expect(result.diagnostics).toEqual([]);
    expect(skills).toEqual(["linked-root/linked/SKILL.md"]);
    expect(result.agents[0]!.prompt).toContain("<location>linked-root/linked/SKILL.md</location>");
  });
});

describe("loops, chains and lattices of links end, in bounded time", () => {
  it("a link back to the root, a self link and a chain longer than the system follows", async () => {
    const dir = await project(linkLoops());
    const { result, skills } = await checkAll(dir);
    expect(skills).toEqual(["skills/good/SKILL.md"]);
    expect(find(result.diagnostics, "skills/chain-skill/SKILL.md")?.message).toBe("skills/chain-skill/SKILL.md is a symlink loop, not a file; the folder is not a skill");
    expect(find(result.diagnostics, "skills/self-skill/SKILL.md")?.message).toBe("skills/self-skill/SKILL.md is a symlink loop, not a file; the folder is not a skill");
    expect(result.diagnostics).toHaveLength(2);
  });

  it(`a chain of folders each a skill inside the one above: to ${MAX_FOLDER_DEPTH} below the root, then folder-too-deep, with \`nested\` too (1,050 ran out of stack)`, async () => {
    const chain = (depth: number) => Array.from({ length: depth }, () => "a").join("/");
    const tree: Tree = {};
    for (let depth = 1; depth <= 1_100; depth++) tree[`skills/${chain(depth)}/SKILL.md`] = skillMd("a");
    const dir = await project(tree);
    const tooDeep = expect.objectContaining({ code: "folder-too-deep", severity: "error", file: `skills/${chain(MAX_FOLDER_DEPTH + 1)}` });
    const { result, skills } = await checkAll(dir);
    expect(skills).toEqual(["skills/a/SKILL.md", "skills/good/SKILL.md"]);
    expect(result.diagnostics.filter((diagnostic) => diagnostic.code === "nested-skill")).toHaveLength(MAX_FOLDER_DEPTH - 1);
    expect(result.diagnostics.filter((diagnostic) => diagnostic.code !== "nested-skill")).toEqual([tooDeep]);
    await writeFile(join(dir, "skills.config.json"), JSON.stringify({ agents: { main: { skills: [{ root: "skills", nested: true }] } } }));
    // Each a skill of its own now, all named "a": the first in path order is kept.
    const nested = await checkAll(dir);
    expect(nested.result.diagnostics.filter((diagnostic) => diagnostic.code === "duplicate-name")).toHaveLength(MAX_FOLDER_DEPTH - 1);
    expect(nested.result.diagnostics.filter((diagnostic) => diagnostic.code !== "duplicate-name")).toEqual([tooDeep]);
  });

  it("5,000 links 3 KB of folder names down, each to 4 KB of `a/../` and a name of its own: resolved in bounded time", async () => {
    const folder = join("skills", ...Array.from({ length: 15 }, () => "n".repeat(200)));
    const dir = await project({ [`${folder}/a/.keep`]: "" });
    await Promise.all(Array.from({ length: 5_000 }, (_, link) => symlink(`${"a/../".repeat(795)}a/x${link}`, join(dir, folder, `l${link}`))));
    // Each target taken a name at a time, each name looked up under the whole path above it: 17-19 s.
    const started = performance.now();
    const { result } = await checkAll(dir);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(result.diagnostics).toEqual([]);
  });

  describe("what a tree 250 folders deep holds at its bottom is resolved in bounded time: each folder above it looked up once", () => {
    /** A project whose skill `deep` holds a chain of 250 folders, with `fill` run on the deepest. */
    async function deepProject(fill: (bottom: string) => Promise<unknown>, config?: object): Promise<string> {
      const dir = await project({ "skills/deep/SKILL.md": skillMd("deep") }, config);
      const bottom = join(dir, "skills/deep", ...Array.from({ length: 250 }, () => "a"));
      await mkdir(bottom, { recursive: true });
      await fill(bottom);
      return dir;
    }
    const each = (count: number, make: (index: number) => Promise<void>) => Promise.all(Array.from({ length: count }, (_, index) => make(index)));

    // Asked of the system, each path's real path looked up the 250 folders above it: each case took 7-21 s.
    it("4,000 skill folders in a skill's folder (nested-skill each)", async () => {
      const dir = await deepProject((bottom) => each(4_000, (index) => mkdir(join(bottom, `s${index}`)).then(() => writeFile(join(bottom, `s${index}/SKILL.md`), skillMd("s")))));
      const started = performance.now();
      const { result } = await checkAll(dir);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(result.diagnostics.filter((diagnostic) => diagnostic.code === "nested-skill")).toHaveLength(4_000);
    });

    it("5,000 links to a file: built, and rebuilt at once (each folder then compared by its entries)", async () => {
      const dir = await deepProject(async (bottom) => {
        await writeFile(join(bottom, "f"), "");
        await each(5_000, (index) => symlink("f", join(bottom, `l${index}`)));
      });
      for (const written of [true, false]) {
        const started = performance.now();
        const result = await build({ cwd: dir });
        expect(performance.now() - started).toBeLessThan(5_000);
        expect(result).toMatchObject({ ok: true, written });
        expect(result.agents[0]!.skills.find((skill) => skill.name === "deep")!.files).toHaveLength(5_002);
      }
    });

    it("5,000 files staged as hard links", async () => {
      const dir = await deepProject((bottom) => each(5_000, (index) => writeFile(join(bottom, `f${index}`), String(index))), { stage: { method: "link" }, agents: { main: { skills: [{ root: "skills" }] } } });
      const started = performance.now();
      expect(await build({ cwd: dir })).toMatchObject({ ok: true, written: true });
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(readFileSync(join(dir, "dist/skills/skills/deep", ...Array.from({ length: 250 }, () => "a"), "f4999"), "utf8")).toBe("4999");
    });

    it("3,000 skills (`nested`) whose fixes are worked out (`--fix-dry-run`)", async () => {
      const config = { agents: { main: { skills: [{ root: "skills", nested: true }] } } };
      const dir = await deepProject((bottom) => each(3_000, (index) => mkdir(join(bottom, `s${index}`)).then(() => writeFile(join(bottom, `s${index}/SKILL.md`), `---\nname: s${index}\ndescription: Reads: notes.\n---\nBody.\n`))), config);
      const started = performance.now();
      const { fixes } = await check({ cwd: dir, fix: "dry-run" });
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(fixes).toHaveLength(3_000);
    });

    it("5,000 files an agent's context glob matches", async () => {
      const dir = await deepProject((bottom) => each(5_000, (index) => writeFile(join(bottom, `c${index}.md`), String(index))), { agents: { main: { skills: [{ root: "skills" }], context: ["skills/deep/a/**/*.md"] } } });
      const started = performance.now();
      const { result } = await checkAll(dir);
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(result.agents[0]!.context.files).toHaveLength(5_000);
    });
  });

  it("a lattice of links (two to the next folder, 24 levels: 16 million paths) is walked once per folder", async () => {
    const tree: Tree = { "skills/d24/leaf/SKILL.md": skillMd("leaf") };
    for (let level = 0; level < 24; level++) {
      tree[`skills/d${level}/a`] = { link: `../d${level + 1}` };
      tree[`skills/d${level}/b`] = { link: `../d${level + 1}` };
    }
    const dir = await project(tree);
    const started = performance.now();
    const { result, skills } = await checkAll(dir);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(result.diagnostics).toEqual([]);
    // Reached first (in path order) through d0/a/a/…/leaf: the path dedupe keeps.
    expect(skills).toEqual(["skills/good/SKILL.md", "skills/d0/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/leaf/SKILL.md"]);
  });

  it(`a .gitignore past ${MAX_GITIGNORE_PATTERNS.toLocaleString("en-US")} patterns (each path is tried against each): gitignore-too-large, an error, in bounded time; at the limit, honoured`, async () => {
    const wildcards = (count: number) => `${Array.from({ length: count }, (_, i) => `*zz${i}*`).join("\n")}\n`;
    const tree: Tree = {};
    for (let skill = 0; skill < 500; skill++) {
      tree[`skills/s${skill}/SKILL.md`] = skillMd(`s${skill}`);
      tree[`skills/s${skill}/references/notes.md`] = "notes";
    }
    // 20,000 wildcards took 32 s over these 1,500 paths when every pattern was honoured.
    const hostile = await project({ ...tree, "skills/.gitignore": wildcards(20_000) });
    let started = performance.now();
    const { result } = await checkAll(hostile);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(result.diagnostics).toEqual([expect.objectContaining({ code: "agent-empty" }), expect.objectContaining({ code: "gitignore-too-large", severity: "error", file: "skills/.gitignore" })]);
    expect(result.agents[0]!.skills).toEqual([]);
    const atLimit = await project({ ...tree, "skills/.gitignore": `${wildcards(MAX_GITIGNORE_PATTERNS - 1)}notes.md\n` });
    started = performance.now();
    const { result: honoured, skills } = await checkAll(atLimit);
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(honoured.diagnostics).toEqual([]);
    expect(skills).toHaveLength(501);
    expect(honoured.agents[0]!.skills.every((skill) => skill.files.every((file) => file.path === "SKILL.md"))).toBe(true);
  });

  it("a .gitignore line with `**` as a name twice before its last name, over a chain of 100 folders: gitignore-too-large in bounded time; one `**` over 250 is honoured", async () => {
    const chain = (depth: number) => `skills/${Array.from({ length: depth }, () => "a").join("/")}/SKILL.md`;
    // Six took 69 s: the matcher tries each `**` at every depth of each path.
    const costly = await project({ "skills/.gitignore": `${"a/**/".repeat(6)}b\n`, [chain(100)]: skillMd("deep") });
    let started = performance.now();
    const { result } = await checkAll(costly);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(result.diagnostics).toEqual([expect.objectContaining({ code: "agent-empty" }), expect.objectContaining({ code: "gitignore-too-large", file: "skills/.gitignore", line: 1 })]);
    const linear = await project({ "skills/.gitignore": "a/**/b\n**/c/**\n**/a/z\n", [chain(250)]: skillMd("deep") });
    started = performance.now();
    const { result: honoured, skills } = await checkAll(linear);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(honoured.diagnostics).toEqual([expect.objectContaining({ code: "name-mismatch" })]);
    expect(skills).toEqual([chain(250), "skills/good/SKILL.md"]);
  });

  it("a skill of 9,000 files 250 folders deep whose body links to a file it lacks: link-broken in bounded time", async () => {
    const dir = await project({ "skills/deep/SKILL.md": skillMd("deep", "Deep.", "See [x](missing.md) and [the tree](a/a/a/).") });
    const bottom = join(dir, "skills/deep", ...Array.from({ length: 250 }, () => "a"));
    await mkdir(bottom, { recursive: true });
    await Promise.all(Array.from({ length: 9_000 }, (_, file) => writeFile(join(bottom, `f${file}`), "")));
    // Each file's folders named one by one took 4.7 s (13 s for 3,000 files 800 deep, before walks stopped at 256).
    const started = performance.now();
    const { result } = await checkAll(dir);
    expect(performance.now() - started).toBeLessThan(2_500);
    expect(result.diagnostics).toEqual([expect.objectContaining({ code: "link-broken", file: "skills/deep/SKILL.md", message: 'the link "missing.md" names no file in the skill folder' })]);
  });

  it(`.gitignore files that would try the folders above them against their patterns over ${MAX_GITIGNORE_TESTS.toLocaleString("en-US")} times: the rest are gitignore-too-large`, async () => {
    // 999 patterns 250 folders down, then 400 folders beside each other there, each with a .gitignore of its own (and
    // a folder to try against it): each of those tries the folders above it against 1,000 patterns. Took 10 s.
    const chain = Array.from({ length: 250 }, () => "a").join("/");
    const tree: Tree = { [`skills/${chain}/.gitignore`]: `${Array.from({ length: 999 }, (_, i) => `*zz${i}*`).join("\n")}\n` };
    for (let folder = 0; folder < 400; folder++) {
      const name = `s${String(folder).padStart(3, "0")}`;
      tree[`skills/${chain}/${name}/.gitignore`] = "drafts/\n";
      tree[`skills/${chain}/${name}/d/notes.md`] = "notes";
    }
    const dir = await project(tree);
    const started = performance.now();
    const { result } = await checkAll(dir);
    expect(performance.now() - started).toBeLessThan(5_000);
    const refused = result.diagnostics.filter((diagnostic) => diagnostic.code === "gitignore-too-large");
    // The folders from the root down: 251 × 999 for the first, then 252 × 1,000 each: 38 fit under the limit.
    expect(refused).toHaveLength(400 - 38);
    expect(refused[0]).toMatchObject({ file: `skills/${chain}/s038/.gitignore`, severity: "error" });
    expect(refused[0]!.message).toMatch(/s038 is left out$/);
  });

  it(`the same lattice inside a skill folder stops at ${MAX_SKILL_FOLDER_ENTRIES.toLocaleString("en-US")} entries: skill-folder-too-large, an error`, async () => {
    const tree: Tree = { "skills/wide/SKILL.md": skillMd("wide"), "skills/wide/d24/end.txt": "end" };
    for (let level = 0; level < 24; level++) {
      tree[`skills/wide/d${level}/a`] = { link: `../d${level + 1}` };
      tree[`skills/wide/d${level}/b`] = { link: `../d${level + 1}` };
    }
    const dir = await project(tree);
    const started = performance.now();
    const { result } = await checkAll(dir);
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(result.diagnostics).toEqual([
      expect.objectContaining({
        code: "skill-folder-too-large",
        severity: "error",
        file: "skills/wide/SKILL.md",
        message: "the skill folder skills/wide holds more than 10,000 files and folders (counting each path its links lead to); the rest are left out of its file list",
      }),
    ]);
  });
});

/** Bytes this process has read so far (Linux's /proc/self/io `rchar`: every read call, the page cache's too). */
function bytesRead(): number {
  return Number(/^rchar: (\d+)$/m.exec(readFileSync("/proc/self/io", "utf8"))![1]);
}

/** `folders` skill folders under skills/, each with `links` links to the one file skills/big.bin of `size` bytes. */
async function linkedProject(folders: number, links: number, size: number): Promise<string> {
  const tree: Tree = {};
  for (let folder = 0; folder < folders; folder++) {
    tree[`skills/s${folder}/SKILL.md`] = skillMd(`s${folder}`);
    for (let link = 0; link < links; link++) tree[`skills/s${folder}/l${link}.bin`] = { link: "../big.bin" };
  }
  const dir = await project(tree);
  await writeFile(join(dir, "skills/big.bin"), Buffer.alloc(size, 7));
  return dir;
}

describe("what links multiply is read once, and a skill folder's bytes have a limit", () => {
  it.skipIf(!existsSync("/proc/self/io"))("a file reached through 2,000 links in the root is read once, here and in the hashing worker (5,000)", { timeout: 120_000 }, async () => {
    for (const [folders, size] of [
      [40, 1024 * 1024], // 2,000 links: hashed on this thread
      [100, 256 * 1024], // 5,000: in the hashing worker
    ] as const) {
      const dir = await linkedProject(folders, 50, size);
      const before = bytesRead();
      const result = await check({ cwd: dir });
      const read = bytesRead() - before;
      expect(result.diagnostics).toEqual([]);
      const files = result.agents[0]!.skills.flatMap((skill) => skill.files.filter((file) => file.path.endsWith(".bin")));
      expect(files).toHaveLength(folders * 50);
      expect(new Set(files.map((file) => `${file.size} ${file.sha256}`)).size).toBe(1);
      // Once, and the SKILL.md files: not 2,000 or 5,000 times.
      expect(read).toBeLessThan(2 * size + 1024 * 1024);
    }
  });

  it(`a skill folder's files past ${MAX_SKILL_FOLDER_BYTES / 1024 / 1024} MiB in all (each path links lead to counted) are left out, unread: skill-files-too-large, an error`, async () => {
    const dir = await linkedProject(1, 2000, 1024 * 1024);
    const { result } = await checkAll(dir);
    expect(result.diagnostics).toEqual([
      expect.objectContaining({
        code: "skill-files-too-large",
        severity: "error",
        file: "skills/s0/SKILL.md",
        message: "the files of the skill folder skills/s0 total more than 64 MiB (counting each path its links lead to); 1937 of 2001, the last in path order, are left out of its file list",
      }),
    ]);
    // SKILL.md and 63 MiB of links: the first 63 in path order.
    const links = Array.from({ length: 2000 }, (_, link) => `l${link}.bin`).sort();
    expect(result.agents[0]!.skills.find((skill) => skill.name === "s0")!.files.map((file) => file.path)).toEqual(["SKILL.md", ...links.slice(0, 63)]);
  });
});

describe("SKILL.md that is not a file", () => {
  it("a folder, a FIFO, a device and a link to nothing named SKILL.md: each reported, none read, the walk goes on", async () => {
    const dir = await project({ "skills/folder/SKILL.md/inner/SKILL.md": skillMd("inner"), "skills/dangling/SKILL.md": { link: "missing.md" } });
    await mkdir(join(dir, "skills/fifo"));
    execFileSync("mkfifo", [join(dir, "skills/fifo/SKILL.md"), join(dir, "skills/fifo-entry")]);
    let device = true;
    try {
      await mkdir(join(dir, "skills/device"));
      execFileSync("mknod", [join(dir, "skills/device/SKILL.md"), "c", "1", "3"], { stdio: "ignore" });
    } catch {
      device = false; // no CAP_MKNOD here: the FIFO stands for special files
    }
    const { result, skills } = await checkAll(dir);
    const messages = Object.fromEntries(result.diagnostics.map((diagnostic) => [diagnostic.file, `${diagnostic.code}: ${diagnostic.message}`]));
    expect(messages).toEqual({
      "skills/dangling/SKILL.md": "path-unreadable: skills/dangling/SKILL.md is a link to nothing, not a file; the folder is not a skill",
      "skills/fifo/SKILL.md": "path-unreadable: skills/fifo/SKILL.md is a FIFO, not a file; the folder is not a skill",
      "skills/folder/SKILL.md": "path-unreadable: skills/folder/SKILL.md is a folder, not a file; the folder is not a skill",
      ...(device ? { "skills/device/SKILL.md": "path-unreadable: skills/device/SKILL.md is a device, not a file; the folder is not a skill" } : {}),
    });
    expect(skills).toEqual(["skills/good/SKILL.md", "skills/folder/SKILL.md/inner/SKILL.md"]);
  });

  it("a FIFO among a skill's files, or a link to one: reported and left out of the files, the skill builds", async () => {
    const dir = await project({ "skills/piped/SKILL.md": skillMd("piped"), "skills/piped/references/guide.md": "# Guide\n", "skills/piped/references/to-fifo": { link: "fifo" } });
    execFileSync("mkfifo", [join(dir, "skills/piped/references/fifo")]);
    const { result } = await checkAll(dir);
    expect(result.diagnostics.map((diagnostic) => `${diagnostic.code}: ${diagnostic.message}`)).toEqual([
      "path-unreadable: skills/piped/references/fifo is a FIFO, not a regular file; it is left out of the skill's files",
      "path-unreadable: skills/piped/references/to-fifo is a link to something that is a FIFO, not a regular file; it is left out of the skill's files",
    ]);
    const piped = result.agents[0]!.skills.find((skill) => skill.name === "piped")!;
    expect(piped.files.map((file) => file.path)).toEqual(["SKILL.md", "references/guide.md"]);
  });

  it("a SKILL.md replaced by a folder or a FIFO between discovery and reading: a diagnostic, no hang", async () => {
    const dir = await tempDir();
    await mkdir(join(dir, "now-a-folder"));
    execFileSync("mkfifo", [join(dir, "now-a-fifo")]);
    const found = { dev: 0n, ino: 0n }; // what discovery saw: a file that is gone now
    expect(readSkillBytes(join(dir, "now-a-folder"), found)).toMatchObject({ code: "path-unreadable", message: "SKILL.md is not a regular file; the skill is left out" });
    expect(readSkillBytes(join(dir, "now-a-fifo"), found)).toMatchObject({ code: "path-unreadable", message: "SKILL.md is not a regular file; the skill is left out" });
    expect(readSkillBytes(join(dir, "gone"), found)).toMatchObject({ code: "path-unreadable", message: "SKILL.md does not exist; the skill is left out" });
  });
});

describe("unreadable files and folders", () => {
  // Permissions do not stop root: as root, the CLI runs as the unprivileged user "nobody" instead.
  const asRoot = process.getuid?.() === 0;

  it("a folder and a SKILL.md without read permission: path-unreadable each, the rest builds", async () => {
    const dir = await project({ "skills/locked/inner/SKILL.md": skillMd("inner"), "skills/secret/SKILL.md": skillMd("secret") });
    await chmod(dir, 0o755);
    await chmod(join(dir, "skills/locked"), 0o000);
    await chmod(join(dir, "skills/secret/SKILL.md"), 0o000);
    const run = await new Promise<{ code: number | null; stdout: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, "check", "--format", "json"], {
        cwd: dir,
        env: { ...process.env, NO_COLOR: "1", GITHUB_ACTIONS: "" },
        ...(asRoot ? { uid: 65534, gid: 65534 } : {}),
        stdio: ["ignore", "pipe", "inherit"],
      });
      let stdout = "";
      child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
      child.on("error", reject).on("close", (code) => resolve({ code, stdout }));
    });
    const report = JSON.parse(run.stdout) as { diagnostics: Diagnostic[]; agents: { skills: number }[] };
    expect(report.diagnostics.map((diagnostic) => `${diagnostic.file}: ${diagnostic.message}`)).toEqual([
      "skills/locked: the folder skills/locked cannot be read (permission denied); skills below it are left out",
      "skills/secret/SKILL.md: SKILL.md cannot be read (permission denied); the skill is left out",
    ]);
    expect(report.agents[0]!.skills).toBe(1);
    expect(run.code).toBe(0);
  });
});

describe("file names with newlines, quotes, <, & and bytes that are not UTF-8", () => {
  it("folders named __proto__ and constructor in a skill: in the manifest's structure as any other, nothing added to Object.prototype", async () => {
    const dir = await project({ "skills/odd/SKILL.md": skillMd("odd"), "skills/odd/__proto__/a.md": "aa", "skills/odd/constructor/b.md": "b" });
    const { result } = await checkAll(dir);
    const manifest = JSON.parse(bundleTexts(bundleOf(result)).get("manifest.json")!) as { skills: { name: string; structure: { folders: object } }[] };
    const odd = manifest.skills.find((skill) => skill.name === "odd")!;
    expect(Object.entries(odd.structure.folders)).toEqual([
      ["__proto__", { bytes: 2, files: 1 }],
      ["constructor", { bytes: 1, files: 1 }],
    ]);
    // Counted on objects looked up by name, the folders' counts went to Object.prototype and the Object function.
    expect([({} as Record<string, unknown>).files, (Object as unknown as Record<string, unknown>).files]).toEqual([undefined, undefined]);
  });

  it("names fall back to such folder names; every format escapes them, and the diagnostics name them", async () => {
    const folders = ["line\nbreak", 'say "hi"', "<skill name=x>", "a&b", "it's"];
    const tree: Tree = {};
    // Descriptions of their own: one shared would be description-duplicate.
    folders.forEach((folder, index) => (tree[`skills/${folder}/SKILL.md`] = `---\ndescription: Named by its folder, number ${index + 1}.\n---\nBody.\n`));
    const dir = await project(tree, { location: "relative", agents: { pi: { skills: [{ root: "skills" }] }, md: { format: "markdown", skills: [{ root: "skills" }] } } });
    const { result, output } = await checkAll(dir);
    for (const folder of folders) {
      const codes = result.diagnostics.filter((diagnostic) => diagnostic.file === `skills/${folder}/SKILL.md`).map((diagnostic) => diagnostic.code);
      expect(codes.sort()).toEqual(["name-invalid", "name-missing"]);
    }
    const [pi, md] = result.agents;
    expect(pi!.prompt).toContain("<name>&lt;skill name=x&gt;</name>");
    expect(pi!.prompt).toContain("<location>skills/&lt;skill name=x&gt;/SKILL.md</location>");
    expect(pi!.prompt).toContain("<name>say &quot;hi&quot;</name>");
    expect(pi!.prompt).toContain("<name>a&amp;b</name>");
    expect(pi!.prompt).toContain("<name>it&apos;s</name>");
    expect(pi!.prompt).toContain("<name>line\nbreak</name>");
    expect(pi!.prompt.match(/<skill>/g)).toHaveLength(folders.length + 1);
    expect(pi!.prompt).not.toContain("<skill name=x>");
    // One list item per skill: the line break in a name cannot start another.
    expect(md!.prompt.split("\n").filter((line) => line.startsWith("- "))).toHaveLength(folders.length + 1);
    expect(md!.prompt).toContain("- line break: Named by its folder, number 1. (file: skills/line break/SKILL.md)");
    expect(output).toContain("line\\nbreak"); // JSON keeps the real name
  });

  it("a folder and a resource whose names are not UTF-8: reported, the rest builds", async () => {
    const dir = await project({});
    const badFolder = Buffer.concat([Buffer.from(join(dir, "skills", "bad")), Buffer.from([0xff])]);
    await mkdir(badFolder);
    await writeFile(Buffer.concat([badFolder, Buffer.from("/SKILL.md")]), skillMd("bad"));
    await writeFile(Buffer.concat([Buffer.from(join(dir, "skills", "good", "ref")), Buffer.from([0xfe]), Buffer.from(".md")]), "x");
    const { result, skills } = await checkAll(dir);
    expect(find(result.diagnostics, "skills/bad\uFFFD")).toMatchObject({
      code: "path-unreadable",
      message: "the folder skills/bad\uFFFD has a name that is not valid UTF-8 (rename it); skills below it are left out",
    });
    expect(find(result.diagnostics, "skills/good/ref\uFFFD.md")).toMatchObject({ code: "path-unreadable" });
    expect(skills).toEqual(["skills/good/SKILL.md"]);
    expect(await readFile(join(dir, "skills/good/SKILL.md"), "utf8")).toBe(skillMd("good"));
  });
});
