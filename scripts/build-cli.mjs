// Bundles the CLI and the programmatic API into dist/ (run by `npm install` through `prepare`).
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { runtimeText } from "./runtime-text.mjs";

/** A digest of src/: part of the cache key (src/version.ts), so a rebuilt tool never reuses a stale cache. */
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
  define: { __SKILLBAKE_RUNTIME__: JSON.stringify(runtimeText()), __SKILLBAKE_BUILD__: JSON.stringify(sourceDigest()) },
};
await Promise.all([
  build({ ...common, entryPoints: ["src/bin.ts"], outfile: "dist/cli.js" }),
  build({ ...common, entryPoints: ["src/index.ts"], outfile: "dist/index.js" }),
]);
