// Source compiled into text that the tool carries as a string constant. One compile, shared by the CLI build
// (scripts/build-cli.mjs) and the tests (vitest.config.ts), both of which hand the texts to the source as
// constants: so what is embedded is always the type-checked source of this commit, with no generated copy in
// the repo to fall out of date.
import { buildSync } from "esbuild";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

function compile(entry, options) {
  const { outputFiles } = buildSync({
    entryPoints: [fileURLToPath(new URL(`../${entry}`, import.meta.url))],
    bundle: true,
    ...options,
    target: "node20",
    charset: "ascii",
    legalComments: "none",
    write: false,
    logLevel: "silent",
  });
  return outputFiles[0].text;
}

/** src/runtime/helpers.ts as every generated bundle module embeds it (src/bundle/module.ts). */
function runtimeText() {
  const text = compile("src/runtime/helpers.ts", { format: "esm" });
  // esbuild writes `// src/runtime/helpers.ts`, the code, then one `export { … };`: the modules keep the code only
  // (their own exports are the bundle's API).
  const code = text.replace(/^\/\/ [^\n]*\n/, "").replace(/\nexport \{[^}]*\};\n$/, "\n");
  if (code === text || /^\s*(export|import)\b/m.test(code)) throw new Error("embedded-text: unexpected esbuild output for src/runtime/helpers.ts");
  return code;
}

/**
 * src/runtime/serve.ts as the modules of agents that embed their skill files add it after the helpers: its import
 * from helpers.ts is left out, as the helpers' code is there already, under the same names.
 */
function serveRuntimeText() {
  const text = compile("src/runtime/serve.ts", { format: "esm", absWorkingDir: fileURLToPath(new URL("..", import.meta.url)), external: ["./src/runtime/helpers.ts"] });
  const code = text
    .replace(/^\/\/ [^\n]*\n/, "")
    .replace(/^import \{ [\w, ]+ \} from "[^"]*helpers\.ts";\n/, "")
    .replace(/\nexport \{[^}]*\};\n$/, "\n");
  if (/^\s*(export|import)\b/m.test(code)) throw new Error("embedded-text: unexpected esbuild output for src/runtime/serve.ts");
  // Both texts share the module's scope: a name declared by both would not load.
  const declared = (source) => [...source.matchAll(/^(?:var|let|const|function|class) (\w+)/gm)].map((match) => match[1]);
  const shared = declared(code).filter((name) => declared(runtimeText()).includes(name));
  if (shared.length > 0) throw new Error(`embedded-text: src/runtime/serve.ts and helpers.ts both declare ${shared.join(", ")}`);
  return code;
}

/**
 * src/compile/hash-worker.ts with what it imports: the script of the worker thread that hashes skill files
 * (src/compile/resources.ts). In a function of its own: a worker's eval script runs at global scope, where its names
 * would be globals (and `crypto` is one already, a getter that esbuild's `var crypto` cannot replace).
 */
function hashWorkerText() {
  return compile("src/compile/hash-worker.ts", { format: "iife", platform: "node" });
}

/**
 * src/compile/token-worker.ts with what it imports (src/compile/bpe.ts): the script of the token-counting worker
 * (src/compile/tokens.ts), which requires gpt-tokenizer's data at run time.
 */
function tokenWorkerText() {
  return compile("src/compile/token-worker.ts", { format: "iife", platform: "node" });
}

/**
 * The body of the `SkillFields` interface every generated .d.ts declares (`fieldTypes` in src/bundle/module.ts): made
 * from the frontmatter model's zod schemas here, so that no build builds them for it (~2 ms of a small build).
 */
function fieldTypesText() {
  const { outputFiles } = buildSync({
    stdin: { contents: 'import { fieldTypes } from "./src/bundle/module.ts";\nmodule.exports = fieldTypes();\n', resolveDir: fileURLToPath(new URL("..", import.meta.url)), loader: "ts" },
    bundle: true,
    format: "cjs",
    platform: "node",
    target: "node20",
    write: false,
    logLevel: "silent",
  });
  const module = { exports: undefined };
  new Function("module", "require", outputFiles[0].text)(module, createRequire(import.meta.url));
  if (typeof module.exports !== "string" || !module.exports.includes("readonly")) throw new Error("embedded-text: fieldTypes() gave no field types");
  return module.exports;
}

/** The constants the source declares for these texts, as esbuild's and vitest's `define` take them. */
export function embeddedTexts() {
  return {
    __SKILLBAKE_RUNTIME__: JSON.stringify(runtimeText()),
    __SKILLBAKE_SERVE_RUNTIME__: JSON.stringify(serveRuntimeText()),
    __SKILLBAKE_HASH_WORKER__: JSON.stringify(hashWorkerText()),
    __SKILLBAKE_TOKEN_WORKER__: JSON.stringify(tokenWorkerText()),
    __SKILLBAKE_FIELD_TYPES__: JSON.stringify(fieldTypesText()),
  };
}
