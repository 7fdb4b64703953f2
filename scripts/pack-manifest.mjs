// `prepack` (strip) and `postpack` (restore): the packed package.json has no scripts. They build and test this
// repository from src/, scripts/ and test/, which a tarball does not hold: its dist/ is built already. `prepare`
// above all: it builds dist/ in a clone and in a git install, npm never runs it for a tarball, yet npm 11.16+
// would list it among the install scripts a user must approve. So `prepack` moves the scripts aside into a file
// the tarball leaves out, and `postpack` puts them back (as husky's pinst does for `postinstall`).
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";

const MANIFEST = "package.json";
const ASIDE = ".packed-scripts.json";

const manifest = JSON.parse(readFileSync(MANIFEST, "utf8"));
const write = (fields) => writeFileSync(MANIFEST, `${JSON.stringify(fields, null, 2)}\n`);
const mode = process.argv[2];
if (mode === "strip" && manifest.scripts) {
  writeFileSync(ASIDE, JSON.stringify(manifest.scripts));
  const { scripts: _, ...rest } = manifest;
  write(rest);
} else if (mode === "restore" && existsSync(ASIDE)) {
  // Back where they were: just before `dependencies`.
  const scripts = JSON.parse(readFileSync(ASIDE, "utf8"));
  const entries = Object.entries(manifest);
  const at = entries.findIndex(([key]) => key === "dependencies");
  entries.splice(at < 0 ? entries.length : at, 0, ["scripts", scripts]);
  write(Object.fromEntries(entries));
  rmSync(ASIDE);
} else if (mode !== "strip" && mode !== "restore") {
  throw new Error("usage: node scripts/pack-manifest.mjs strip|restore");
}
