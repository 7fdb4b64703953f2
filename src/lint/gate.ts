import { join } from "node:path";
import type { Compilation } from "../compile/compile.js";
import { compareDiagnostics, resolveFindings, type Diagnostic } from "../compile/diagnostics.js";
import { configSeverities } from "../compile/overrides.js";
import { applySuppressions, pruneSuppressions, readSuppressions, suppressAll, SUPPRESSIONS_FILE, writeSuppressions } from "./suppressions.js";

export interface GateOptions {
  /** Errors only: warnings are neither reported nor counted (`--quiet`). */
  quiet?: boolean;
  /** Records today's findings in skills-suppressions.json, beside the config (`--suppress`). */
  suppress?: boolean;
  /** Lowers each suppression to what remains, removing those with none left (`--prune-suppressions`). */
  pruneSuppressions?: boolean;
}

export interface Gated {
  /** What the run reports and counts: the compilation's diagnostics less the suppressed ones, with the stale suppressions. */
  diagnostics: Diagnostic[];
  /** The findings skills-suppressions.json covers. */
  suppressed: Diagnostic[];
  /** The suppressions file, when this run wrote it. */
  written?: string;
}

/**
 * What a run reports of a compilation: the suppressions file (beside the config) applied, written first with
 * `suppress` or `pruneSuppressions`, then with `quiet` the errors alone. Each stale entry is a `suppression-stale`
 * finding on the file, whose severity the config's `rules` and `overrides` set as for any other.
 */
export function gate(compilation: Compilation, options: GateOptions): Gated {
  const { config, dir } = compilation.config;
  const path = join(dir, SUPPRESSIONS_FILE);
  const read = readSuppressions(path);
  let suppressions = read?.suppressions ?? new Map<string, Map<string, number>>();
  let text = read?.text ?? "";
  let written: string | undefined;
  if (options.suppress || options.pruneSuppressions) {
    suppressions = options.suppress ? suppressAll(suppressions, compilation.diagnostics) : pruneSuppressions(suppressions, compilation.diagnostics);
    text = writeSuppressions(path, suppressions);
    written = path;
  }
  const { reported, suppressed, stale } = applySuppressions(compilation.diagnostics, suppressions, SUPPRESSIONS_FILE, text);
  const diagnostics = [...reported, ...resolveFindings(stale, configSeverities(config))].sort(compareDiagnostics);
  return { diagnostics: options.quiet ? diagnostics.filter((diagnostic) => diagnostic.severity === "error") : diagnostics, suppressed, ...(written ? { written } : {}) };
}
