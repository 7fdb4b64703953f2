import picomatch from "picomatch";
import type { ResolvedConfig } from "./config.js";
import type { Finding, RuleOverrides } from "./diagnostics.js";
import { PRESETS, RULES, type RuleCode, type RuleSetting } from "./rules.js";

/** Severities per path (`overrides`): globs over the files diagnostics name, relative to the config folder. */
export interface PathRules {
  files: readonly string[];
  rules: RuleOverrides;
}

/** A finding's setting: its code's default, then the config's `rules`, then each matching `overrides` entry in order. */
export type SeverityOf = (finding: Pick<Finding, "code" | "file">) => RuleSetting;

/**
 * ESLint's `overrides`: every entry whose `files` match a finding's file applies its `rules` over the ones before,
 * severities only (what a rule does to the skill stays). The merged rules are kept per file, as one file has many
 * findings. A finding about no file (`skills check PATH…` names no config) takes the top-level `rules` alone.
 */
export function severityResolver(rules: RuleOverrides, overrides: readonly PathRules[] = []): SeverityOf {
  const entries = overrides.map((entry) => ({ matches: picomatch([...entry.files], { dot: true }), rules: entry.rules }));
  const merged = new Map<string, RuleOverrides>();
  const rulesFor = (file: string): RuleOverrides => {
    let found = merged.get(file);
    if (!found) {
      found = { ...rules };
      for (const entry of entries) if (entry.matches(file)) Object.assign(found, entry.rules);
      merged.set(file, found);
    }
    return found;
  };
  return ({ code, file }) => (file === undefined || entries.length === 0 ? rules : rulesFor(file))[code] ?? RULES[code].severity;
}

/** The config's severities: its `preset`, then its `rules`, then its `overrides`. */
export function configSeverities(config: Pick<ResolvedConfig, "preset" | "rules" | "overrides">): SeverityOf {
  return severityResolver({ ...(config.preset ? PRESETS[config.preset] : {}), ...config.rules }, config.overrides);
}

/** Whether `code` is on anywhere: by default, by the config's `preset` or `rules`, or for some path by its `overrides`. */
export function ruleOnAnywhere(config: Pick<ResolvedConfig, "preset" | "rules" | "overrides">, code: RuleCode): boolean {
  const top = config.rules[code] ?? (config.preset ? (PRESETS[config.preset] as RuleOverrides)[code] : undefined) ?? RULES[code].severity;
  return top !== "off" || (config.overrides ?? []).some((entry) => entry.rules[code] !== undefined && entry.rules[code] !== "off");
}
