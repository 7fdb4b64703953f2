import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/compile/config.js";
import { dataJson, readTranspiledConfig, writeTranspiledConfig, writeValidatedConfig } from "../src/compile/config-cache.js";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const ENTRY = "node_modules/.cache/skillbake/config/skills.config.ts.json";

/** A TypeScript config whose agent's description comes from a local module (`./agents`, resolved to agents.js). */
async function project(): Promise<string> {
  const dir = join(await tempDir(), "app");
  await writeTree(dir, {
    "skills.config.ts": 'import { defineConfig } from "skillbake";\nimport { description } from "./agents";\nexport default defineConfig({ agents: { main: { description, skills: [{ root: "skills" }] } } });\n',
    "agents.js": 'export const description = "aaaa";\n',
    "skills/alpha/SKILL.md": skillMd("alpha"),
  });
  return dir;
}

const description = async (dir: string) => (await loadConfig(undefined, dir)).config.agents.main!.description;

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Rewrites the entry's code (`aaaa` becomes `cccc`), with a checksum that agrees unless `corrupt`: only the cache can say cccc. */
async function forgeEntry(dir: string, corrupt = false): Promise<void> {
  const text = await readFile(join(dir, ENTRY), "utf8");
  const newline = text.indexOf("\n");
  const header = JSON.parse(text.slice(0, newline)) as { sha256: string };
  const payload = text.slice(newline + 1).replaceAll("aaaa", "cccc");
  expect(payload).not.toBe(text.slice(newline + 1));
  if (!corrupt) header.sha256 = sha256(payload);
  await writeFile(join(dir, ENTRY), `${JSON.stringify(header)}\n${payload}`);
}

describe("the transpiled-config cache", () => {
  it("is written on the first load and used on the next while nothing it was made from changed", async () => {
    const dir = await project();
    expect(await description(dir)).toBe("aaaa");
    expect(existsSync(join(dir, ENTRY))).toBe(true);
    await forgeEntry(dir);
    expect(await description(dir)).toBe("cccc");
  });

  it("is not used once an imported file changes, even to the same size within the same second", async () => {
    const dir = await project();
    await description(dir);
    await forgeEntry(dir);
    await writeFile(join(dir, "agents.js"), 'export const description = "bbbb";\n');
    expect(await description(dir)).toBe("bbbb");
    // …and the entry written for the new text is used again.
    expect((await readFile(join(dir, ENTRY), "utf8")).includes("bbbb")).toBe(true);
  });

  it("is not used once the config itself changes", async () => {
    const dir = await project();
    await description(dir);
    await forgeEntry(dir);
    const config = join(dir, "skills.config.ts");
    await writeFile(config, (await readFile(config, "utf8")).replace("{ description,", "{ description: description + '!',"));
    expect(await description(dir)).toBe("aaaa!");
  });

  it("is not used when a new file changes what an import resolves to (agents.ts beside agents.js)", async () => {
    const dir = await project();
    await description(dir);
    await forgeEntry(dir);
    await writeFile(join(dir, "agents.ts"), 'export const description: string = "dddd";\n');
    expect(await description(dir)).toBe("dddd");
  });

  it("is not used when the folder of an import is renamed and a link to another put in its place, its file the same size and mtime", async () => {
    const dir = await project();
    await writeTree(dir, {
      "skills.config.ts": 'import { defineConfig } from "skillbake";\nimport { description } from "./lib/agents";\nexport default defineConfig({ agents: { main: { description, skills: [{ root: "skills" }] } } });\n',
      "lib/agents.js": 'export const description = "aaaa";\n',
      "other/agents.js": 'export const description = "eeee";\n',
    });
    await description(dir);
    await forgeEntry(dir);
    execFileSync("touch", ["-r", join(dir, "lib/agents.js"), join(dir, "other/agents.js")]);
    await rename(join(dir, "lib"), join(dir, "lib-old"));
    await symlink(join(dir, "other"), join(dir, "lib"));
    expect(await description(dir)).toBe("eeee");
  });

  it("is not used when a tsconfig.json appears in a folder above the config's", async () => {
    const dir = await project();
    await description(dir);
    await forgeEntry(dir);
    await writeFile(join(dir, "..", "tsconfig.json"), "{}\n");
    expect(await description(dir)).toBe("aaaa");
  });

  it("reads no device or FIFO an entry names as an input, and follows no link in the entry's place", async () => {
    const dir = await project();
    expect(await description(dir)).toBe("aaaa");
    // A committed entry that names /dev/zero as a file the config was made from: it is not used, and nothing hangs.
    const text = await readFile(join(dir, ENTRY), "utf8");
    const newline = text.indexOf("\n");
    const header = JSON.parse(text.slice(0, newline)) as { sha256: string };
    const entry = JSON.parse(text.slice(newline + 1)) as { inputs: Record<string, string> };
    entry.inputs["/dev/zero"] = sha256("");
    const payload = JSON.stringify(entry);
    await writeFile(join(dir, ENTRY), `${JSON.stringify({ ...header, sha256: sha256(payload) })}\n${payload}`);
    expect(await description(dir)).toBe("aaaa");

    await forgeEntry(dir);
    const forged = join(dir, "forged.json");
    await rename(join(dir, ENTRY), forged);
    await symlink(forged, join(dir, ENTRY));
    expect(await description(dir)).toBe("aaaa");
  });

  it("ignores and replaces a corrupt entry", async () => {
    const dir = await project();
    await description(dir);
    await forgeEntry(dir, true);
    expect(await description(dir)).toBe("aaaa");
    await forgeEntry(dir); // the entry was rewritten: forging it again works
    expect(await description(dir)).toBe("cccc");
  });

  it("is not written for a config that imports a package: where a package resolves to is not a file's bytes", async () => {
    const dir = await project();
    await writeTree(dir, {
      "node_modules/shared/package.json": '{ "name": "shared", "type": "module", "main": "index.js" }',
      "node_modules/shared/index.js": 'export const description = "eeee";\n',
      "agents.js": 'export { description } from "shared";\n',
    });
    expect(await description(dir)).toBe("eeee");
    expect(existsSync(join(dir, ENTRY))).toBe(false);
  });

  it("lets the CLI build from the cached config, and pick up an edit of it", async () => {
    const dir = await project();
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect(existsSync(join(dir, ENTRY))).toBe(true);
    await writeFile(join(dir, "agents.js"), 'export const description = "ffff";\n');
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect(JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8")).agents.main.description).toBe("ffff");
  });
});

describe("the transpiled-config cache, in process: what an entry is made from and when it is used", () => {
  const CONFIG = 'import { description } from "./agents";\nexport default { agents: { main: { description } } };\n';
  const AGENTS = 'export const description = "aaaa";\n';
  const CODE = "export default 1;\n";

  interface Project {
    dir: string;
    config: string;
    agents: string;
  }

  /** A config importing ./agents.js (and `extra` files), in a folder of its own. */
  async function project(extra: Record<string, string | { link: string }> = {}): Promise<Project> {
    const dir = join(await tempDir(), "app");
    await writeTree(dir, { "skills.config.ts": CONFIG, "agents.js": AGENTS, ...extra });
    return { dir, config: join(dir, "skills.config.ts"), agents: join(dir, "agents.js") };
  }

  interface Written {
    inputs?: string[];
    imports?: Map<string, { path: string; external?: boolean }[]>;
    sources?: Map<string, string>;
  }

  /** Writes the entry as a build does after esbuild; by default the config and agents.js, each file's text as it is now. */
  async function write({ dir, config, agents }: Project, options: Written = {}): Promise<void> {
    const inputs = options.inputs ?? [config, agents];
    const imports = options.imports ?? new Map([[config, [{ path: agents }]], [agents, []]]);
    const sources = options.sources ?? new Map(await Promise.all(inputs.map(async (input) => [input, await readFile(input, "utf8")] as const)));
    writeTranspiledConfig(config, dir, { code: CODE, inputs, kind: "module" }, imports, sources);
  }

  const read = ({ dir, config }: Project) => readTranspiledConfig(config, dir);
  const entryOf = async ({ dir }: Project) => JSON.parse((await readFile(join(dir, ENTRY), "utf8")).split("\n")[1]!) as Record<string, unknown>;

  /** Rewrites the entry's payload, its checksum agreeing: what a committed node_modules/.cache could hold. */
  async function forge({ dir }: Project, edit: (entry: Record<string, unknown>) => unknown): Promise<void> {
    const text = await readFile(join(dir, ENTRY), "utf8");
    const newline = text.indexOf("\n");
    const payload = JSON.stringify(edit(JSON.parse(text.slice(newline + 1)) as Record<string, unknown>));
    const header = JSON.parse(text.slice(0, newline)) as Record<string, unknown>;
    await writeFile(join(dir, ENTRY), `${JSON.stringify({ ...header, sha256: sha256(payload) })}\n${payload}`);
  }

  it("is used while nothing changed, naming its inputs sorted; it records the folders of local imports, not of Node's modules", async () => {
    const app = await project();
    const imports = new Map([[app.config, [{ path: "node:fs", external: true }, { path: app.agents }]], [app.agents, []]]);
    // The config first: the entry names its inputs in the order given, and what it gives back is sorted.
    await write(app, { imports });
    expect(read(app)).toEqual({ code: CODE, kind: "module", inputs: [app.agents, app.config] });
    expect(Object.keys((await entryOf(app)).folders as object)).toEqual([app.dir]);
  });

  it("is used for a config without local imports (no folder recorded)", async () => {
    const app = await project();
    await write(app, { inputs: [app.config], imports: new Map([[app.config, []]]) });
    expect(read(app)).toEqual({ code: CODE, kind: "module", inputs: [app.config] });
  });

  it("is not used for another config path or working folder: esbuild's output names both", async () => {
    const app = await project();
    await write(app);
    expect(read(app)).toBeDefined();
    expect(readTranspiledConfig(app.config, join(app.dir, "skills"))).toBeUndefined();
    await writeFile(join(app.dir, "other.config.ts"), CONFIG);
    await rename(join(app.dir, ENTRY), join(app.dir, ENTRY.replace("skills.config.ts", "other.config.ts")));
    expect(readTranspiledConfig(join(app.dir, "other.config.ts"), app.dir)).toBeUndefined();
  });

  it("ignores an entry that is not what it writes, its checksum agreeing: null, an array, code that is no text, no inputs, digests that are not a record of text", async () => {
    const forgeries: ((entry: Record<string, unknown>) => unknown)[] = [
      () => null,
      (entry) => [entry],
      (entry) => ({ ...entry, code: 42 }),
      (entry) => ({ ...entry, inputs: {} }),
      (entry) => ({ ...entry, inputs: Object.fromEntries(Object.keys(entry.inputs as object).map((path) => [path, 42])) }),
      (entry) => ({ ...entry, folders: null }),
      (entry) => ({ ...entry, folders: [] }),
      (entry) => ({ ...entry, folders: 5 }),
      (entry) => ({ ...entry, folders: "" }),
      (entry) => ({ ...entry, settings: [] }),
      (entry) => ({ ...entry, settings: null }),
    ];
    for (const edit of forgeries) {
      const app = await project();
      await write(app);
      expect(read(app)).toBeDefined();
      await forge(app, edit);
      expect(read(app), String(edit)).toBeUndefined();
    }
  });

  it("is not written when an input's text is not what esbuild read: edited since, not read, or gone", async () => {
    const edited = await project();
    await write(edited, { sources: new Map([[edited.config, CONFIG], [edited.agents, 'export const description = "bbbb";\n']]) });
    const unread = await project();
    await write(unread, { sources: new Map([[unread.config, CONFIG]]) });
    const gone = await project();
    await rm(gone.agents);
    await write(gone, { sources: new Map([[gone.config, CONFIG], [gone.agents, AGENTS]]) });
    for (const app of [edited, unread, gone]) expect(existsSync(join(app.dir, ENTRY))).toBe(false);
  });

  it("is not written when a tsconfig.json or jsconfig.json on the way up extends another; an extends in package.json is no setting", async () => {
    for (const name of ["tsconfig.json", "jsconfig.json"]) {
      const app = await project({ [name]: '{ "extends": "./base.json" }\n', "base.json": "{}\n" });
      await write(app);
      expect(existsSync(join(app.dir, ENTRY)), name).toBe(false);
    }
    const app = await project({ "package.json": '{ "name": "app", "extends": "nothing" }\n', "tsconfig.json": '{ "compilerOptions": { "strict": true } }\n' });
    await write(app);
    expect(read(app)).toBeDefined();
    await writeFile(join(app.dir, "package.json"), '{ "name": "app", "type": "module" }\n');
    expect(read(app)).toBeUndefined();
  });

  it("follows a link in place of a tsconfig.json or of an input, and sees its target change", async () => {
    const shared = await tempDir();
    await writeTree(shared, { "tsconfig.json": "{}\n", "agents.js": AGENTS });
    for (const [name, target, edit] of [
      ["tsconfig.json", "tsconfig.json", '{ "compilerOptions": { "strict": true } }\n'],
      ["agents.js", "agents.js", 'export const description = "bbbb";\n'],
    ] as const) {
      const app = await project({ [name]: { link: join(shared, target) } });
      await write(app);
      expect(read(app), name).toBeDefined();
      await writeFile(join(shared, target), edit);
      expect(read(app), name).toBeUndefined();
    }
  });

  it("counts a folder missing when the entry was written as changed once it appears", async () => {
    // In a folder no import was resolved in, so that its own listing is not what changes.
    const app = await project({ "lib/README.md": "" });
    const gone = join(app.dir, "lib", "gone", "agents.js");
    await write(app, { imports: new Map([[app.config, [{ path: app.agents }, { path: gone }]], [app.agents, []]]) });
    expect(read(app)).toBeDefined();
    await mkdir(dirname(gone));
    expect(read(app)).toBeUndefined();
  });

  it("tells a folder's names apart however they run together, and ignores node_modules beside an import", async () => {
    const app = await project({ "lib/agents.js": AGENTS, "lib/x": "", "lib/yz": "" });
    const agents = join(app.dir, "lib", "agents.js");
    await write(app, { inputs: [app.config, agents], imports: new Map([[app.config, [{ path: agents }]], [agents, []]]) });
    await mkdir(join(app.dir, "lib", "node_modules"));
    expect(read(app)).toBeDefined();
    await rename(join(app.dir, "lib", "x"), join(app.dir, "lib", "xy"));
    await rename(join(app.dir, "lib", "yz"), join(app.dir, "lib", "z"));
    expect(read(app)).toBeUndefined();
  });
});

const VALIDATED = "node_modules/.cache/skillbake/config/skills.config.ts.validated.json";

/** A value of a config, as a TypeScript config writes it: `-0` and `undefined` kept, `FUNCTION` a format function. */
function literal(value: unknown): string {
  if (value === FUNCTION) return '() => "prompt"';
  if (value === undefined) return "undefined";
  if (typeof value === "number") return Object.is(value, -0) ? "-0" : String(value);
  if (Array.isArray(value)) return `[${value.map(literal).join(", ")}]`;
  if (typeof value === "object" && value !== null) return `{ ${Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${literal(item)}`).join(", ")} }`;
  return JSON.stringify(value);
}
const FUNCTION = Symbol("a format function");

/** Mostly `right`, now and then `wrong`. */
const mostly = <T,>(right: readonly T[], wrong: readonly T[]): fc.Arbitrary<T> => fc.oneof({ arbitrary: fc.constantFrom(...right), weight: 5 }, { arbitrary: fc.constantFrom(...wrong), weight: 1 });

/** Configs right and wrong: unknown keys, wrong types, `-0`, a function. */
const configValue = fc.record(
  {
    outDir: mostly<unknown>(["dist/skills", "out"], ["", 7]),
    format: mostly<unknown>(["pi", "markdown"], ["html", FUNCTION]),
    yaml: mostly(["strict", "recover"], ["loose"]),
    rules: fc.dictionary(mostly(["name-invalid", "description-missing"], ["nope"]), mostly(["off", "warn", "error"], ["fatal"]), { maxKeys: 2 }),
    stage: fc.oneof(fc.boolean(), fc.record({ layout: mostly(["shared", "per-agent"], ["flat"]) }, { requiredKeys: [] })),
    agents: fc.dictionary(
      mostly(["main", "docs"], ["Bad_id"]),
      fc.record(
        {
          skills: fc.array(fc.record({ root: mostly(["skills"], ["", "other"]), nested: mostly<unknown>([true, false], ["yes"]) }, { requiredKeys: ["root"] }), { maxLength: 2 }),
          budget: mostly<unknown>([1000, { tokens: 200 }], [-0, 0.5, { contextWindow: 0 }]),
          description: mostly<unknown>(["Helps."], ["", 3]),
        },
        { requiredKeys: [] },
      ),
      { minKeys: 1, maxKeys: 2 },
    ),
  },
  { requiredKeys: ["agents"] },
);

/**
 * A config and its twins that JSON cannot tell from it: an unknown setting, or an unknown rule, set to `undefined`
 * (which validation reports, and JSON leaves out).
 */
const TWISTS = {
  none: (config: Record<string, unknown>) => config,
  "unknown setting undefined": (config: Record<string, unknown>) => ({ ...config, outdir: undefined }),
  "unknown rule undefined": (config: Record<string, unknown>) => ({ ...config, rules: { ...(config.rules as object), nope: undefined } }),
};

/** `value` with each function as its source: each load of a config makes its functions anew. */
function comparable(value: unknown): unknown {
  if (typeof value === "function") return `function ${String(value)}`;
  if (Array.isArray(value)) return value.map(comparable);
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, comparable(item)]));
  return value;
}

/** The outcome of loading a config: what it resolved to, or the message it failed with. */
async function outcome(dir: string, readOnly: boolean): Promise<unknown> {
  try {
    const loaded = await loadConfig(undefined, dir, { readOnly });
    return comparable({ config: loaded.config, inputs: loaded.inputs, environmentBudget: loaded.environmentBudget });
  } catch (error) {
    return { error: (error as Error).message };
  }
}

describe("the validated-config cache", () => {
  it("never changes the outcome: random configs (some invalid, some not data), loaded again and again, against a load without it", async () => {
    const dir = join(await tempDir(), "app");
    await writeTree(dir, { "skills/alpha/SKILL.md": skillMd("alpha") });
    await fc.assert(
      fc.asyncProperty(fc.array(configValue, { minLength: 1, maxLength: 2 }), fc.array(fc.record({ pick: fc.nat(), twist: fc.constantFrom(...(Object.keys(TWISTS) as (keyof typeof TWISTS)[])) }), { minLength: 2, maxLength: 8 }), async (configs, steps) => {
        for (const { pick, twist } of steps) {
          const value = TWISTS[twist](configs[pick % configs.length]!);
          await writeFile(join(dir, "skills.config.ts"), `import { defineConfig } from "skillbake";\nexport default defineConfig(${literal(value)} as never);\n`);
          const cached = await outcome(dir, false);
          // The same config without the entry: validated, and nothing written.
          const entry = join(dir, VALIDATED);
          const aside = `${entry}.aside`;
          if (existsSync(entry)) await rename(entry, aside);
          const validated = await outcome(dir, true);
          expect(existsSync(entry)).toBe(false);
          if (existsSync(aside)) await rename(aside, entry);
          expect(cached).toEqual(validated);
        }
      }),
      { numRuns: Number(process.env.DIFF_RUNS ?? 12) },
    );
  });

  it("is what a TS config's value as data resolves to: an entry for it stands in for validating", async () => {
    const dir = join(await tempDir(), "app");
    await writeTree(dir, { "skills.config.ts": 'import { defineConfig } from "skillbake";\nexport default defineConfig({ agents: { main: { skills: [{ root: "skills" }] } } });\n' });
    const first = await loadConfig(undefined, dir);
    expect(existsSync(join(dir, VALIDATED))).toBe(true);
    const value = dataJson({ agents: { main: { skills: [{ root: "skills" }] } } })!;
    writeValidatedConfig(join(dir, "skills.config.ts"), value, { ...first.config, outDir: "from-the-entry" });
    expect((await loadConfig(undefined, dir)).config.outDir).toBe("from-the-entry");
    // An environment read by the config gives another value: validated afresh.
    await writeFile(join(dir, "skills.config.ts"), 'import { defineConfig } from "skillbake";\nexport default defineConfig({ outDir: process.env.SKILLS_TEST_OUT_DIR, agents: { main: { skills: [{ root: "skills" }] } } });\n');
    process.env.SKILLS_TEST_OUT_DIR = "out";
    try {
      expect((await loadConfig(undefined, dir)).config.outDir).toBe("out");
    } finally {
      delete process.env.SKILLS_TEST_OUT_DIR;
    }
    // undefined is not data: that value is validated (defaults applied), never taken from an entry.
    expect((await loadConfig(undefined, dir)).config.outDir).toBe("dist/skills");
  });

  it("is never used for a JSON config, which a pull request may change beside a forged entry", async () => {
    const dir = join(await tempDir(), "app");
    const config = { agents: { main: { skills: [{ root: "skills" }] } } };
    await writeTree(dir, { "skills.config.json": JSON.stringify(config) });
    const file = join(dir, "skills.config.json");
    writeValidatedConfig(file, dataJson(config)!, { ...(await loadConfig(undefined, dir)).config, agents: { "../../escaped": { skills: [] } } });
    expect(existsSync(join(dir, "node_modules/.cache/skillbake/config/skills.config.json.validated.json"))).toBe(true);
    expect(Object.keys((await loadConfig(undefined, dir)).config.agents)).toEqual(["main"]);
  });

  it("takes only data JSON gives back as it is", () => {
    expect(dataJson({ a: [1, "x", null, true], b: { c: -1.5 } })).toBe('{"a":[1,"x",null,true],"b":{"c":-1.5}}');
    const sparse = [1, , 3];
    const withExtra = Object.assign([1], { extra: true });
    const getter = Object.defineProperty({}, "a", { enumerable: true, get: () => 1 });
    const hidden = Object.defineProperty({}, "a", { enumerable: false, value: 1 });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const shared = { x: 1 };
    expect(dataJson({ length: 3 })).toBe('{"length":3}');
    for (const value of [-0, NaN, Infinity, undefined, { a: undefined }, { length: () => 1 }, () => 1, 1n, Symbol("s"), new Date(0), Object.create(null), sparse, withExtra, getter, hidden, { [Symbol("k")]: 1 }, new Proxy({}, {}), cyclic]) {
      expect(dataJson(value), String(typeof value)).toBeUndefined();
    }
    // The same object twice is no cycle.
    expect(dataJson({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
  });
});
