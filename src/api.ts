import { readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { bundleFiles } from "./bundle.js";
import { compile, type Compilation, type CompileOptions } from "./compile.js";
import { loadConfig } from "./config.js";
import { countBySeverity } from "./diagnostics.js";
import { writeBundle } from "./emit.js";

export interface CheckOptions {
  /** Config file; found in `cwd` when omitted. */
  config?: string;
  cwd?: string;
  /** Warnings fail the run too. */
  strict?: boolean;
  /** More warnings than this fail the run (`--max-warnings`). */
  maxWarnings?: number;
  /** Progress of reading and checking SKILL.md files. */
  onProgress?: CompileOptions["onProgress"];
}

export interface CheckResult extends Compilation {
  errors: number;
  warnings: number;
  /** No error, and no more warnings than `maxWarnings` allows (none with `strict`). */
  ok: boolean;
}

export interface BuildOptions extends CheckOptions {
  /** Overrides the config's `outDir`; relative to `cwd`. */
  outDir?: string;
  /** Compare with the bundle on disk instead of writing. */
  check?: boolean;
}

export interface BuildResult extends CheckResult {
  outDir: string;
  /** True when the bundle was written. */
  written: boolean;
  /** With `check`: bundle files that are missing or differ on disk. */
  stale: string[];
}

/** Everything `build` does except writing. */
export async function check(options: CheckOptions = {}): Promise<CheckResult> {
  const cwd = options.cwd ?? process.cwd();
  const compilation = await compile(await loadConfig(options.config, cwd), { onProgress: options.onProgress });
  const { errors, warnings } = countBySeverity(compilation.diagnostics);
  const tooManyWarnings = warnings > (options.strict ? 0 : (options.maxWarnings ?? Infinity));
  return { ...compilation, errors, warnings, ok: errors === 0 && !tooManyWarnings };
}

/** Compiles and, when nothing failed, swaps the new bundle into `outDir`. */
export async function build(options: BuildOptions = {}): Promise<BuildResult> {
  const result = await check(options);
  const outDir = options.outDir ? resolve(options.cwd ?? process.cwd(), options.outDir) : resolve(result.config.dir, result.config.config.outDir);
  if (!result.ok) return { ...result, outDir, written: false, stale: [] };
  const files = bundleFiles(result);
  if (options.check) return { ...result, outDir, written: false, stale: await staleFiles(outDir, files) };
  await writeBundle(outDir, files);
  return { ...result, outDir, written: true, stale: [] };
}

async function staleFiles(outDir: string, files: ReadonlyMap<string, string>): Promise<string[]> {
  const stale: string[] = [];
  for (const [path, text] of files) {
    const onDisk = await readFile(join(outDir, path), "utf8").catch(() => undefined);
    if (onDisk !== text) stale.push(path);
  }
  return stale;
}
