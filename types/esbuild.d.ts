// The types of `skillbake/esbuild` (dist/esbuild.js, built from src/plugins/esbuild.ts; test/plugins.test.ts keeps them in step).
import type { Plugin } from "esbuild";

export interface SkillsPluginOptions {
  /** The config file, relative to the bundler's root; found there as the CLI finds it when omitted. */
  config?: string;
  /** The declaration file typing the virtual modules, relative to the bundler's root; default `skills-env.d.ts` beside the config. */
  types?: string;
}

/** Resolves `virtual:skills` and `virtual:skills/<agent>`, compiled from the skills config in memory. */
export default function skills(options?: SkillsPluginOptions): Plugin;
