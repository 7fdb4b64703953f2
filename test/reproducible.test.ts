import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cp, readdir, readFile, rm, utimes } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { stableJson } from "../src/bundle/parts.js";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

/** A catalogue whose names sort differently by locale than bytewise, nested folders, and a date-like field. */
function catalogue(location?: unknown): Record<string, string> {
  return {
    "skills.config.ts": `import { defineConfig } from "skillbake";
export default defineConfig({${location === undefined ? "" : `\n  location: ${JSON.stringify(location)},`}
  agents: {
    coding: { skills: [{ root: "skills", available: ["*"], inline: ["b-inline"] }] },
    review: { skills: [{ root: "skills", available: ["a-*", "z*"] }, { root: "more" }], format: "markdown" },
  },
});
`,
    "skills/a-first/SKILL.md": skillMd("a-first"),
    "skills/B-upper/SKILL.md": skillMd("B-upper"),
    "skills/b-inline/SKILL.md": skillMd("b-inline", "Inlined whole.", "# Inline\n\nSee [the guide](references/guide.md)."),
    "skills/b-inline/references/guide.md": "# Guide\n",
    "skills/ä-umlaut/SKILL.md": skillMd("ä-umlaut"),
    "skills/group/zeta/SKILL.md": `---\nname: zeta\ndescription: "Dates stay text: 2024-03-01T10:00:00"\nmetadata:\n  released: 2024-03-01T10:00:00\n---\n\nBody\n`,
    "skills/group/Zulu/SKILL.md": skillMd("zulu"),
    "more/a-more/SKILL.md": skillMd("a-more"),
  };
}

/** Every file under `dir` (relative path → bytes). */
async function readBundle(dir: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) {
      const path = join(entry.parentPath, entry.name);
      files.set(path.slice(dir.length + 1), await readFile(path));
    }
  }
  return new Map([...files].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/** Preloaded into the second build: its clock reads ten years ahead, so a timestamp in the bundle would show. */
const SHIFT_CLOCK = `const RealDate = Date;
const offset = 10 * 365 * 24 * 3600 * 1000;
globalThis.Date = class extends RealDate {
  constructor(...args) { super(...(args.length > 0 ? args : [RealDate.now() + offset])); }
  static now() { return RealDate.now() + offset; }
};
`;

/**
 * Two projects holding the same catalogue, written in opposite orders with different file times, built under
 * different clocks, TZ, locale and user.
 */
async function buildTwice(location: unknown): Promise<{ first: string; second: string; bundles: Map<string, Buffer>[] }> {
  const tree = catalogue(location);
  const first = await tempDir("skillbake-repro-a-");
  const second = await tempDir("skillbake-repro-b-");
  await writeTree(first, tree);
  for (const path of Object.keys(tree).reverse()) await writeTree(second, { [path]: tree[path]! });
  for (const path of Object.keys(tree)) await utimes(join(second, path), new Date("2001-02-03T04:05:06Z"), new Date("2001-02-03T04:05:06Z"));

  const clock = await tempDir("skillbake-clock-");
  await writeTree(clock, { "shift-clock.mjs": SHIFT_CLOCK });
  const shifted = `--import=${pathToFileURL(join(clock, "shift-clock.mjs")).href}`;
  const year = execFileSync(process.execPath, ["-e", "process.stdout.write(String(new Date().getFullYear()))"], { env: { ...process.env, NODE_OPTIONS: shifted } });
  expect(Number(year)).toBeGreaterThanOrEqual(new Date().getFullYear() + 9);

  const environments = [
    { TZ: "UTC", LANG: "C", LC_ALL: "C", HOME: join(first, "home"), USER: "alice", LOGNAME: "alice" },
    { TZ: "Pacific/Kiritimati", LANG: "tr_TR.UTF-8", LC_ALL: "tr_TR.UTF-8", HOME: join(second, "home"), USER: "bob", LOGNAME: "bob", NODE_OPTIONS: shifted },
  ];
  const bundles: Map<string, Buffer>[] = [];
  for (const [index, cwd] of [first, second].entries()) {
    const run = await runCli(["build"], { cwd, env: environments[index] });
    expect(run.code, run.stderr).toBe(0);
    bundles.push(await readBundle(join(cwd, "dist/skills")));
  }
  return { first, second, bundles };
}

describe("reproducible bundles", () => {
  it("are byte-identical across folders, creation order, file times, clock, TZ, locale and user with relative locations", async () => {
    const { first, second, bundles } = await buildTwice("relative");
    const [a, b] = bundles as [Map<string, Buffer>, Map<string, Buffer>];
    expect([...a.keys()]).toEqual([...b.keys()]);
    expect([...a.keys()]).toEqual(expect.arrayContaining(["manifest.json", "prompts/coding.txt", "prompts/review.txt"]));
    for (const [path, bytes] of a) expect(b.get(path)!.equals(bytes), path).toBe(true);

    for (const [path, bytes] of a) {
      const text = bytes.toString("utf8");
      expect(text, path).not.toContain(first);
      expect(text, path).not.toContain(second);
      expect(text, path).not.toContain("\r");
    }
    const manifestText = a.get("manifest.json")!.toString("utf8");
    expect(manifestText.endsWith("}\n")).toBe(true);
    expect(stableJson(JSON.parse(manifestText))).toBe(manifestText);
    const manifest = JSON.parse(manifestText);
    expect(manifest.skills.find((skill: { name: string }) => skill.name === "zeta").fields.metadata).toEqual({ released: "2024-03-01T10:00:00" });
    // By name, bytewise ("B" < "a" < "b" < "z" < "ä"), never the locale's.
    expect(manifest.agents.coding.skills.map((skill: { name: string }) => skill.name)).toEqual(["B-upper", "a-first", "b-inline", "zeta", "zulu", "ä-umlaut"]);
  });

  it("are byte-identical with a { base } location, which names the base and never the build folder", async () => {
    const { first, bundles } = await buildTwice({ base: "/srv/app" });
    const [a, b] = bundles as [Map<string, Buffer>, Map<string, Buffer>];
    for (const [path, bytes] of a) expect(b.get(path)!.equals(bytes), path).toBe(true);
    const prompt = a.get("prompts/coding.txt")!.toString("utf8");
    expect(prompt).toContain("<location>/srv/app/skills/a-first/SKILL.md</location>");
    expect(prompt).toContain("References are relative to /srv/app/skills/b-inline.");
    for (const bytes of a.values()) expect(bytes.toString("utf8")).not.toContain(first);
  });

  it("record the sha256 of every other file and a hash of the inputs that follows the catalogue, not the folder", async () => {
    const { first, bundles } = await buildTwice("relative");
    const bundle = bundles[0]!;
    const manifest = JSON.parse(bundle.get("manifest.json")!.toString("utf8"));
    const expected = Object.fromEntries([...bundle].filter(([path]) => path !== "manifest.json").map(([path, bytes]) => [path, createHash("sha256").update(bytes).digest("hex")]));
    expect(manifest.hashes.outputs).toEqual(expected);
    expect(manifest.hashes.inputs).toMatch(/^[0-9a-f]{64}$/);

    await writeTree(first, { "README.md": "unrelated\n" });
    expect((await runCli(["build"], { cwd: first })).code).toBe(0);
    const unrelated = JSON.parse(await readFile(join(first, "dist/skills/manifest.json"), "utf8"));
    expect(unrelated.hashes.inputs).toBe(manifest.hashes.inputs);

    await writeTree(first, { "skills/a-first/SKILL.md": skillMd("a-first", "A new description.") });
    expect((await runCli(["build"], { cwd: first })).code).toBe(0);
    const edited = JSON.parse(await readFile(join(first, "dist/skills/manifest.json"), "utf8"));
    expect(edited.hashes.inputs).not.toBe(manifest.hashes.inputs);
  });

  it("are byte-identical by default: one project copied to another folder checks as current and rebuilds the same bytes", async () => {
    const first = await tempDir("skillbake-copy-a-");
    await writeTree(first, catalogue()); // no `location`: the default
    expect((await runCli(["build"], { cwd: first })).code).toBe(0);
    const second = join(await tempDir("skillbake-copy-b-"), "another/checkout");
    await cp(first, second, { recursive: true });

    const check = await runCli(["build", "--check"], { cwd: second });
    expect(check.code, check.stderr).toBe(0);
    await rm(join(second, "dist"), { recursive: true });
    expect((await runCli(["build"], { cwd: second })).code).toBe(0);
    const [a, b] = [await readBundle(join(first, "dist/skills")), await readBundle(join(second, "dist/skills"))];
    expect([...b.keys()]).toEqual([...a.keys()]);
    for (const [path, bytes] of a) expect(b.get(path)!.equals(bytes), path).toBe(true);
  });
});
