// Bundles the CLI and the programmatic API into dist/ (run by `npm install` through `prepare`).
import { build } from "esbuild";
import { runtimeText } from "./runtime-text.mjs";

const common = {
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node20",
  packages: "external",
  logLevel: "warning",
  legalComments: "none",
  define: { __SKILLBAKE_RUNTIME__: JSON.stringify(runtimeText()) },
};
await Promise.all([
  build({ ...common, entryPoints: ["src/bin.ts"], outfile: "dist/cli.js" }),
  build({ ...common, entryPoints: ["src/index.ts"], outfile: "dist/index.js" }),
]);
