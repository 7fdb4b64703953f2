export { build, check, type BuildOptions, type BuildResult, type CheckOptions, type CheckResult, type StaleFile } from "./api.js";
export { ConfigError, defineConfig, loadConfig, type LoadedConfig, type SkillsConfig } from "./config.js";
export type { AgentSkill, CompiledAgent, Compilation } from "./compile.js";
export type { Diagnostic, RuleCode, Severity } from "./diagnostics.js";
export { OutputError } from "./emit.js";
export { manifestSchema, type Manifest } from "./manifest.js";
export type { FormatContext, FormatFunction, FormatSkill } from "./render.js";
