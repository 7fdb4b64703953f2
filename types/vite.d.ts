// The types of `skillbake/vite` (dist/vite.js, built from src/plugins/vite.ts; test/plugins.test.ts keeps them in step).
import type { Plugin } from "vite";

export interface SkillsPluginOptions {
  /** The config file, relative to the bundler's root; found there as the CLI finds it when omitted. */
  config?: string;
  /** The declaration file typing the virtual modules, relative to the bundler's root; default `skills-env.d.ts` beside the config. */
  types?: string;
}

/** Serves `virtual:skills` and `virtual:skills/<agent>`, compiled from the skills config in memory. */
export default function skills(options?: SkillsPluginOptions): Plugin;
