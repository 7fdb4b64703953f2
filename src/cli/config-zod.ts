// In the CLI, src/compile/config-zod.ts's place (scripts/build-cli.mjs puts it there).

/** The launcher's `require`, which runs a file beside the CLI from V8's code cache (see launch.ts). */
declare const __skillbakeRequire: (id: string) => unknown;

/**
 * The `z` of a config's `import { z } from "skillbake"`: zod whole, from dist/zod.cjs, loaded when a config first
 * reads it. The CLI's own bundle holds only the parts of zod it uses; with all of zod's namespace in it (every
 * locale, the JSON Schema importer…), every start read, checked and deserialized ~0.45 MB more (~4 ms).
 */
export function zodForConfigs(): unknown {
  return (__skillbakeRequire("./zod.cjs") as { z: unknown }).z;
}
