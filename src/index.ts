import { manifestSchema as manifestSchemaOnce } from "./bundle/manifest.js";
export { build, check, type BuildOptions, type BuildResult, type CheckOptions, type CheckResult, type StaleFile } from "./api.js";
export { ConfigError, defineConfig, loadConfig, type LoadedConfig, type SkillsConfig } from "./compile/config.js";
/** The zod the compiler validates with, for the config's `frontmatter` schema: no matching zod to install. */
export { z } from "zod";
export type { AgentSkill, CompiledAgent, Compilation } from "./compile/compile.js";
export type { Diagnostic } from "./compile/diagnostics.js";
export type { FileFixes } from "./lint/files.js";
export type { AppliedFix } from "./lint/fix.js";
export type { RuleCode, Severity } from "./compile/rules.js";
/** Named here so a config's inferred type can name it (declaration emit: TS2742). */
export type { FrontmatterSchema } from "./compile/custom-fields.js";
export { OutputError } from "./bundle/emit.js";
export { FileSystemError } from "./compile/fs-error.js";
export type { FormatContext, FormatFunction, FormatSkill } from "./compile/render.js";
export type { Manifest } from "./bundle/manifest.js";
/** The zod schema of a bundle's manifest.json, to read one with (`manifestSchema.parse(JSON.parse(text))`). */
export const manifestSchema = manifestSchemaOnce();
