// The JavaScript text of src/runtime/helpers.ts, as every generated bundle module embeds it. One compile, shared
// by the CLI build (scripts/build-cli.mjs) and the tests (vitest.config.ts), both of which hand it to
// src/bundle/module.ts as the constant __SKILLBAKE_RUNTIME__: so the emitted helpers are always the type-checked
// source of this commit, with no generated copy in the repo to fall out of date.
import { buildSync } from "esbuild";
import { fileURLToPath } from "node:url";

export function runtimeText() {
  const { outputFiles } = buildSync({
    entryPoints: [fileURLToPath(new URL("../src/runtime/helpers.ts", import.meta.url))],
    bundle: true,
    format: "esm",
    target: "node20",
    charset: "ascii",
    legalComments: "none",
    write: false,
    logLevel: "silent",
  });
  const text = outputFiles[0].text;
  // esbuild writes `// src/runtime/helpers.ts`, the code, then one `export { … };`: the modules keep the code only
  // (their own exports are the bundle's API).
  const code = text.replace(/^\/\/ [^\n]*\n/, "").replace(/\nexport \{[^}]*\};\n$/, "\n");
  if (code === text || /^\s*(export|import)\b/m.test(code)) throw new Error("runtime-text: unexpected esbuild output for src/runtime/helpers.ts");
  return code;
}
