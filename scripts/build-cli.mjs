// Bundles the CLI and the programmatic API into dist/ (run by `npm install` through `prepare`).
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import { build } from "esbuild";
import { embeddedTexts } from "./embedded-text.mjs";

/** A digest of src/: part of the cache key (src/compile/version.ts), so a rebuilt tool never reuses a stale cache. */
function sourceDigest() {
  const hash = createHash("sha256");
  for (const path of readdirSync("src", { recursive: true }).sort()) {
    const file = join("src", path);
    if (statSync(file).isFile()) hash.update(`${path}\0`).update(readFileSync(file)).update("\0");
  }
  return hash.digest("hex").slice(0, 16);
}

const common = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  logLevel: "warning",
  legalComments: "none",
  define: { ...embeddedTexts(), __SKILLBAKE_BUILD__: JSON.stringify(sourceDigest()) },
};
const STRICT = '"use strict";';
/**
 * A CommonJS script: Node starts no ES module loader for it (~3 ms of every run), and `import.meta.url` becomes its
 * file's URL.
 */
const script = {
  ...common,
  format: "cjs",
  define: { ...common.define, "import.meta.url": "__skillbakeUrl" },
  // Strict before anything else (esbuild's own "use strict" comes after the banner, where it is no directive).
  banner: { js: `${STRICT}\nconst __skillbakeUrl = require("node:url").pathToFileURL(__filename).href;` },
};
/**
 * In the CLI, a config's `z` comes from dist/zod.cjs (src/cli/config-zod.ts in src/compile/config-zod.ts's place):
 * zod's whole namespace in the CLI's bundle kept every part of zod in it, read and deserialized at every start.
 */
const configZodFromFile = {
  name: "config-zod-from-file",
  setup(build) {
    build.onResolve({ filter: /^\.\/config-zod\.js$/ }, (args) => (args.importer.endsWith(join("src", "compile", "config.ts")) ? { path: resolve("src/cli/config-zod.ts") } : undefined));
  },
};

await Promise.all([
  // The CLI carries its dependencies (all but esbuild, a native binary loaded only for TypeScript configs, and
  // gpt-tokenizer, megabytes of token ranks loaded only when a config asks for token counts): resolving and
  // loading their hundreds of module files took ~0.15 s of every `skills` run, half its start-up.
  // The API leaves them to the installing project. The CLI is a script, not a module, so that the launcher
  // (dist/launch.cjs) can start it from V8's code cache (see launch.ts).
  build({
    ...script,
    entryPoints: ["src/cli/bin.ts"],
    outfile: "dist/cli.cjs",
    // Without comments (some of its dependencies' are past ASCII) it is ASCII, which the launcher copies into a
    // string rather than decodes, and 15% smaller to read and hash at every start.
    minifyWhitespace: true,
    packages: undefined,
    external: ["esbuild", "gpt-tokenizer"],
    plugins: [configZodFromFile],
  }),
  // zod whole, for the configs that import `z` (src/cli/config-zod.ts), run by the launcher from its code cache.
  build({
    ...script,
    stdin: { contents: 'export { z } from "zod";', resolveDir: ".", loader: "js" },
    outfile: "dist/zod.cjs",
    minifyWhitespace: true,
    packages: undefined,
    banner: { js: STRICT },
  }),
  // The `skills` command.
  build({ ...script, entryPoints: ["src/cli/launch.ts"], outfile: "dist/launch.cjs" }),
  build({ ...common, entryPoints: ["src/index.ts"], outfile: "dist/index.js" }),
  // The bundler plugins: optional entry points (`skillbake/vite`, `skillbake/esbuild`); vite is only a type here.
  build({ ...common, entryPoints: ["src/plugins/vite.ts", "src/plugins/esbuild.ts"], outdir: "dist" }),
]);
