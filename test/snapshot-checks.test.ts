import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { build, check } from "../src/api.js";
import { writeCacheFile } from "../src/compile/cache-file.js";
import { loadConfig } from "../src/compile/config.js";
import type { StatsTaken } from "../src/compile/discover.js";
import { InputLines, lastBuild } from "../src/compile/snapshot.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

// What the "nothing changed" shortcut (src/compile/snapshot.ts) checks before it answers with the last build, called
// in process on real folders: cache files whose header is valid but whose contents are not what a build writes (a
// pull request can commit any file), and what of the config and the roots the shortcut's key must tell.

const CACHE = "node_modules/.cache/skillbake/skills.config.json";
/** Longer than the build cache's racy window: files older than this get a signature. */
const SETTLE_MS = 2100;
const settle = () => new Promise((resolve) => setTimeout(resolve, SETTLE_MS));

const taken = (): StatsTaken => ({ folders: new Map(), files: new Map() });

/** A cache file's header format and key, and its payload. */
function cacheFile(file: string): { format: number; key: string; payload: Record<string, unknown> } {
  const text = readFileSync(file, "utf8");
  const newline = text.indexOf("\n");
  const { format, key } = JSON.parse(text.slice(0, newline)) as { format: number; key: string };
  return { format, key, payload: JSON.parse(text.slice(newline + 1)) as Record<string, unknown> };
}

describe("cache files with a valid header and contents no build writes", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha"),
      "skills/beta/SKILL.md": skillMd("beta"),
      "skills/beta/notes.md": { link: "../alpha/notes.md" },
      "skills/alpha/notes.md": "notes",
    });
    await settle();
    expect((await build({ cwd: dir })).written).toBe(true);
  }, 20_000);

  /**
   * The shortcut's answer with `file` holding `payload` (under its own key), and the stats it took; the file as the
   * build wrote it after.
   */
  /** The keys of the listings an answer gives instead of a compilation; undefined for any other answer. */
  const listingsOnly = (answer: ReturnType<typeof lastBuild>) => (answer && "listings" in answer ? [...answer.listings.keys()] : undefined);

  async function answerWith(file: string, payload: unknown) {
    const path = join(dir, file);
    const original = readFileSync(path);
    const { format, key } = cacheFile(path);
    writeCacheFile(path, format, key, payload);
    const stats = taken();
    try {
      return { answer: lastBuild(await loadConfig(undefined, dir), join(dir, "dist/skills"), stats), stats };
    } finally {
      await writeFile(path, original);
    }
  }

  it("the files as the build wrote them are used (what the cases below take apart), a link to a file signed by that file", async () => {
    const answer = lastBuild(await loadConfig(undefined, dir), join(dir, "dist/skills"), taken());
    if (!answer || !("compilation" in answer)) throw new Error("expected the last compilation");
    expect(answer.compilation.agents[0]!.skills.map((skill) => skill.name)).toEqual(["alpha", "beta"]);
    expect(answer.folders).toBe(3);
    // Each file as a check that walks and reads finds it (only the SKILL.md files' stats are kept as taken; the
    // others' are made from their lines when asked for), counted without being asked for.
    expect([answer.files.skillMdFiles, answer.files.filesOfSkills]).toEqual([2, 4]);
    const walked = (await check({ cwd: dir })).verified;
    expect(answer.compilation.verified.get(join(dir, "skills/beta/notes.md"))).toEqual(walked.get(join(dir, "skills/beta/notes.md")));
    expect(new Map(answer.compilation.verified)).toEqual(new Map(walked));
    expect(answer.compilation.verified.size).toBe(4);
  });

  it("a result file that is missing: the build goes by the listings, every file as it was", async () => {
    const result = join(dir, `${CACHE}.result.json`);
    const original = readFileSync(result);
    await rm(result);
    try {
      expect(listingsOnly(lastBuild(await loadConfig(undefined, dir), join(dir, "dist/skills"), taken()))).toEqual(["flat:" + join(dir, "skills")]);
    } finally {
      await writeFile(result, original);
    }
  });

  it("an inputs file comparing by contents a file or folder outside the roots: never read, so never the same", async () => {
    const { payload } = cacheFile(join(dir, `${CACHE}.inputs.json`));
    const inputs = (payload as { inputs: string }).inputs;
    await writeTree(dir, { "outside/notes.md": "notes" });
    const notes = `5:${createHash("sha256").update("notes").digest("hex")}`;
    // Inside the root: the same contents make the same answer.
    expect((await answerWith(`${CACHE}.inputs.json`, { ...payload, inputs: `${inputs}\nh\tskills/alpha/notes.md\t${notes}\nh\tskills/beta/notes.md\t${notes}` })).answer).toBeDefined();
    // Outside it (a path the build never read), the contents are not read: not the same, though they are.
    for (const line of [`h\toutside/notes.md\t${notes}`, `h\t${join(dir, "outside/notes.md")}\t${notes}`, "D\toutside\tfnotes.md"]) {
      expect((await answerWith(`${CACHE}.inputs.json`, { ...payload, inputs: `${inputs}\n${line}` })).answer).toBeUndefined();
    }
  });

  it("an inputs file naming a file or a folder that is not there: no stats taken", async () => {
    const { payload } = cacheFile(join(dir, `${CACHE}.inputs.json`));
    for (const line of ["f\tskills/gone.md\t1:2:3:4:5", "d\tskills/gone\t1:2:3:4:5"]) {
      const { answer, stats } = await answerWith(`${CACHE}.inputs.json`, { ...payload, inputs: line });
      expect(answer).toBeUndefined();
      expect([stats.folders.size, stats.files.size]).toEqual([0, 0]);
    }
  });

  it("a bundle's fingerprint that is not text, even with a result file written for it", async () => {
    const inputs = cacheFile(join(dir, `${CACHE}.inputs.json`)).payload as { bundle: Record<string, unknown> };
    const result = cacheFile(join(dir, `${CACHE}.result.json`));
    const fingerprint = inputs.bundle.fingerprint as string;
    const original = readFileSync(join(dir, `${CACHE}.result.json`));
    // The result file under the key such a fingerprint would give, then the inputs file naming it.
    writeCacheFile(join(dir, `${CACHE}.result.json`), result.format, result.key.replace(`:${fingerprint}`, ":5"), result.payload);
    try {
      expect((await answerWith(`${CACHE}.inputs.json`, { ...inputs, bundle: { ...inputs.bundle, fingerprint: 5 } })).answer).toBeUndefined();
    } finally {
      await writeFile(join(dir, `${CACHE}.result.json`), original);
    }
  });

  it("an inputs file without its inputs as text, without a bundle's fingerprint, or with a line of one field", async () => {
    const { payload } = cacheFile(join(dir, `${CACHE}.inputs.json`));
    const { inputs, bundle } = payload as { inputs: string; bundle: Record<string, unknown> };
    for (const tampered of [{ bundle }, { inputs: 5, bundle }, { inputs }, { inputs, bundle: null }, { inputs, bundle: { ...bundle, fingerprint: 5 } }, { inputs: `${inputs}\nstray`, bundle }]) {
      expect((await answerWith(`${CACHE}.inputs.json`, tampered)).answer).toBeUndefined();
    }
    expect((await answerWith(`${CACHE}.inputs.json`, payload)).answer).toBeDefined();
  });

  it("a result file whose agents, count, diagnostics or inputs are not what a build writes: the build goes by the listings", async () => {
    const { payload } = cacheFile(join(dir, `${CACHE}.result.json`));
    const inputs = payload.inputs as Record<string, unknown>;
    for (const tampered of [
      { ...payload, agents: {} },
      { ...payload, skillsChecked: "2" },
      { ...payload, diagnostics: {} },
      { ...payload, inputs: null },
      { ...payload, inputs: { ...inputs, folders: {} } },
      { ...payload, inputs: { ...inputs, files: {} } },
    ]) {
      expect(listingsOnly((await answerWith(`${CACHE}.result.json`, tampered)).answer)).toEqual(["flat:" + join(dir, "skills")]);
    }
    expect((await answerWith(`${CACHE}.result.json`, payload)).answer).toHaveProperty("compilation");
  });
});

describe("what the shortcut's key tells", () => {
  const projects: string[] = [];
  beforeAll(async () => {
    // An optional root that is a file; a config with an empty `context` list; two agents, one with `context` globs.
    for (const config of [
      { agents: { main: { skills: [{ root: "skills" }, { root: "later", optional: true }] } } },
      { agents: { main: { skills: [{ root: "skills" }], context: [] } } },
      { agents: { main: { skills: [{ root: "skills" }] }, other: { skills: [{ root: "skills" }], context: ["*.md"] } } },
    ]) {
      const dir = await tempDir();
      await writeTree(dir, { "skills.config.json": JSON.stringify(config), "skills/alpha/SKILL.md": skillMd("alpha"), later: "a file, for now" });
      projects.push(dir);
    }
    await settle();
    for (const dir of projects) expect((await build({ cwd: dir })).written).toBe(true);
  }, 20_000);

  it("an optional root that was a file and is a folder now is walked", async () => {
    const dir = projects[0]!;
    expect(existsSync(join(dir, `${CACHE}.inputs.json`))).toBe(true);
    await rm(join(dir, "later"));
    await mkdir(join(dir, "later/zeta"), { recursive: true });
    await writeFile(join(dir, "later/zeta/SKILL.md"), skillMd("zeta"));
    const after = await build({ cwd: dir });
    expect(after.written).toBe(true);
    expect(after.agents[0]!.skills.map((skill) => skill.name)).toEqual(["alpha", "zeta"]);
  });

  it("an empty `context` list matches nothing: the last build is kept and used", async () => {
    const dir = projects[1]!;
    expect(existsSync(join(dir, `${CACHE}.inputs.json`))).toBe(true);
    expect((await build({ cwd: dir })).cache.parsed).toBe(0);
  });

  it("one agent's `context` globs keep nothing, though another agent has none", async () => {
    const dir = projects[2]!;
    expect(existsSync(join(dir, `${CACHE}.inputs.json`))).toBe(false);
  });
});

describe("a listings file with contents no build writes (a rebuild after an edit goes by it instead of walking)", () => {
  let dir: string;
  const listingsFile = () => join(dir, `${CACHE}.listings.json`);
  beforeAll(async () => {
    dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha"),
      "skills/alpha/leak.md": { link: "../../outside/notes.md" },
      "skills/beta/SKILL.md": skillMd("beta"),
      "outside/SKILL.md": skillMd("outside"),
      "outside/notes.md": "notes outside the roots",
    });
    await settle();
    expect((await build({ cwd: dir })).written).toBe(true);
    // Only a skill's file changed since: what the listings are for.
    await writeFile(join(dir, "skills/alpha/SKILL.md"), skillMd("alpha", "Does alpha things, edited. Use when alpha is needed."));
  }, 20_000);

  /** The check's answer with the listings file's payload changed by `tamper`; the file as the build wrote it after. */
  async function answerWith(tamper: (listings: { root: string; folders: string[]; skills: Record<string, unknown>[] }[]) => void) {
    const original = readFileSync(listingsFile());
    const { format, key, payload } = cacheFile(listingsFile());
    const listings = structuredClone(payload) as unknown as Parameters<typeof tamper>[0];
    tamper(listings);
    writeCacheFile(listingsFile(), format, key, listings);
    try {
      return lastBuild(await loadConfig(undefined, dir), join(dir, "dist/skills"), taken());
    } finally {
      await writeFile(listingsFile(), original);
    }
  }

  it("the file as the build wrote it gives the listings, the edited SKILL.md with its stats now", async () => {
    const answer = await answerWith(() => {});
    if (!answer || !("listings" in answer)) throw new Error("expected the last listings");
    const [listing] = [...answer.listings.values()];
    expect(listing!.skills.map((skill) => [skill.dir, skill.files])).toEqual([["alpha", ["SKILL.md"]], ["beta", ["SKILL.md"]]]);
    expect(listing!.skills[0]!.identities.get("SKILL.md")!.size).toBe(BigInt(readFileSync(join(dir, "skills/alpha/SKILL.md")).byteLength));
  });

  it("a skill outside the roots, a file path out of its folder, a link leading out of the roots, a folder no line signs, fields no build writes: not used", async () => {
    const outside = join(dir, "outside");
    const tamperings: ((listings: { root: string; folders: string[]; skills: Record<string, unknown>[] }[]) => void)[] = [
      (listings) => listings[0]!.skills.push({ dir: "../outside", files: ["SKILL.md"] }),
      (listings) => (listings[0]!.skills[0]!.files = ["SKILL.md", "../../outside/notes.md"]),
      (listings) => (listings[0]!.skills[0]!.files = ["SKILL.md", "leak.md"]),
      (listings) => listings[0]!.folders.push(outside),
      (listings) => (listings[0]!.root = outside),
      (listings) => (listings[0]!.skills[0]!.files = "SKILL.md" as unknown as string[]),
      (listings) => listings[0]!.skills.push({ dir: "alpha/references", files: ["SKILL.md"] }),
      (listings) => ((listings[0] as unknown as { findings: unknown[] }).findings = [{ code: "no-such-rule", message: "made up" }]),
      (listings) => ((listings[0] as unknown as { unusable: unknown }).unusable = { code: "no-such-rule", reason: "made up" }),
    ];
    for (const tamper of tamperings) expect(await answerWith(tamper)).toBeUndefined();
  });
});

describe("the inputs file's lines", () => {
  it("are read as split would give each line's first three tab-separated fields, up to the first line of fewer", () => {
    const piece = fc.constantFrom("\t", "\n", "d", "f", "a/b", "", "x\ty", "1:2:3");
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }).map((pieces) => pieces.join("")), (text) => {
        const fields = text.split("\n").map((line) => line.split("\t")).map(([kind, path, signature]) => (path === undefined || signature === undefined ? undefined : { kind, path, signature }));
        const unreadable = fields.indexOf(undefined);
        const expected = unreadable < 0 ? fields : fields.slice(0, unreadable + 1);
        const lines = new InputLines(text);
        const read: unknown[] = [];
        for (let next = lines.next(); next !== false; next = lines.next()) read.push(next === undefined ? undefined : { kind: lines.kind, path: lines.path, signature: lines.signature });
        expect(read).toEqual(expected);
      }),
      { numRuns: 2000, seed: 22 },
    );
  });
});
