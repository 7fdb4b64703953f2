import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { buildSync } from "esbuild";
import ts from "typescript";
import { describe, expect, it } from "vitest";

/**
 * The pipeline's stages, lowest first (DEVELOPERS.md, Layout): a file may import from its own stage or a lower
 * one, never a higher one, and no files import each other in a loop.
 */
const STAGES = ["runtime", "compile", "bundle", "review", "lint", "api.ts", "index.ts", "cli", "plugins"] as const;

const src = resolve("src");
const files = (readdirSync(src, { recursive: true }) as string[]).filter((path) => path.endsWith(".ts")).map((path) => join(src, path));

/** Every relative module a file imports, exports from or loads with import(), types included, as a src path. */
function importsOf(file: string): string[] {
  const { importedFiles } = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
  return importedFiles
    .map(({ fileName }) => fileName)
    .filter((name) => name.startsWith("."))
    .map((name) => resolve(dirname(file), name).replace(/\.js$/, ".ts"))
    .filter((target) => target.startsWith(`${src}/`));
}

const graph = new Map(files.map((file) => [file, importsOf(file)]));
const stageOf = (file: string) => STAGES.indexOf(relative(src, file).split("/")[0] as (typeof STAGES)[number]);
const name = (file: string) => relative(src, file);

describe("the source layout", () => {
  it("puts every file of src/ in a stage", () => {
    expect(files.filter((file) => stageOf(file) < 0).map(name)).toEqual([]);
  });

  it("imports only from the same or a lower stage", () => {
    const upward = [...graph].flatMap(([file, targets]) => targets.filter((target) => stageOf(target) > stageOf(file)).map((target) => `${name(file)} -> ${name(target)}`));
    expect(upward).toEqual([]);
  });

  it("has no import circle", () => {
    expect(circles(graph).map((circle) => circle.map(name).join(" -> "))).toEqual([]);
  });

  // Each worker thread starts by evaluating its script (embedded in the CLI and the API as text): one bundled with
  // zod or yaml would parse and run them in every worker, and carry them in the package twice.
  it.each(["src/compile/hash-worker.ts", "src/compile/token-worker.ts"])("bundles %s with no package", (worker) => {
    const { metafile } = buildSync({ entryPoints: [worker], bundle: true, platform: "node", write: false, metafile: true, logLevel: "silent" });
    expect(Object.keys(metafile.inputs).filter((input) => input.includes("node_modules/"))).toEqual([]);
  });

  it("finds a circle and an upward import when there is one (the checks can fail)", () => {
    const a = join(src, "compile/a.ts");
    const b = join(src, "compile/b.ts");
    expect(circles(new Map([[a, [b]], [b, [a]]]))).toHaveLength(1);
    expect(stageOf(join(src, "cli/main.ts")) > stageOf(join(src, "review/diff.ts"))).toBe(true);
  });
});

/** Tarjan's strongly connected components of more than one file. */
function circles(edges: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (stack.includes(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return found;
}
