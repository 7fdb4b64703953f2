// Produce the Pi conformance goldens under test/fixtures/pi/<case>/expected/.
//
// Run through scripts/pi-goldens.sh, which executes this file under
// `npx -p @mariozechner/pi-coding-agent@0.73.1`. Pi's package is found via the
// node_modules/.bin folder npx puts on PATH.
//
// Outputs per case (paths inside root replaced by the literal `<ROOT>`):
//   available.txt        formatSkillsForPrompt(skills) minus Pi's two leading "\n\n"
//   inline.txt           every skill's `/skill:NAME` expansion, joined by "\n\n"
//   pi-diagnostics.json  Pi's diagnostics, paths relative to root (reference only)
// Skills are ordered by name, then by file path (bytewise), as in SPEC §5.
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const PI_PACKAGE = "@mariozechner/pi-coding-agent";
const PI_VERSION = "0.73.1";

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const fixturesDir = join(repoRoot, "test", "fixtures", "pi");

function findPi() {
  for (const entry of (process.env.PATH ?? "").split(delimiter)) {
    if (!entry) continue;
    const binDir = resolve(entry);
    if (!binDir.endsWith(`${sep}node_modules${sep}.bin`)) continue;
    const pkgDir = join(dirname(binDir), ...PI_PACKAGE.split("/"));
    const pkgJson = join(pkgDir, "package.json");
    if (!existsSync(pkgJson)) continue;
    const { version } = JSON.parse(readFileSync(pkgJson, "utf8"));
    if (version !== PI_VERSION) {
      console.warn(`skipping ${pkgDir}: version ${version}, want ${PI_VERSION}`);
      continue;
    }
    return pkgDir;
  }
  throw new Error(
    `${PI_PACKAGE}@${PI_VERSION} not found on PATH; run via \`npm run goldens\` (scripts/pi-goldens.sh)`,
  );
}

const piDir = findPi();
const load = (rel) => import(pathToFileURL(join(piDir, rel)).href);
const { loadSkills, formatSkillsForPrompt } = await load("dist/core/skills.js");
const { AgentSession } = await load("dist/core/agent-session.js");
console.log(`using ${PI_PACKAGE}@${PI_VERSION} from ${piDir}`);

const byteOrder = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

function expandSkill(skills, name) {
  const fakeSession = {
    resourceLoader: { getSkills: () => ({ skills }) },
    _extensionRunner: {
      emitError(e) {
        throw new Error(e.error);
      },
    },
  };
  const command = `/skill:${name}`;
  const out = AgentSession.prototype._expandSkillCommand.call(fakeSession, command);
  if (out === command) throw new Error(`Pi did not expand ${command}`);
  return out;
}

function placeholder(text, rootAbs) {
  return text.split(rootAbs).join("<ROOT>");
}

function relativizeDiagnostics(value, rootAbs, key) {
  if (typeof value === "string") {
    if (["path", "winnerPath", "loserPath"].includes(key) && (value === rootAbs || value.startsWith(rootAbs + sep))) {
      return relative(rootAbs, value).split(sep).join("/") || ".";
    }
    return placeholder(value, rootAbs);
  }
  if (Array.isArray(value)) return value.map((v) => relativizeDiagnostics(v, rootAbs));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, relativizeDiagnostics(v, rootAbs, k)]));
  }
  return value;
}

const cases = readdirSync(fixturesDir, { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(fixturesDir, d.name, "root")))
  .map((d) => d.name)
  .sort(byteOrder);
if (cases.length === 0) throw new Error(`no cases under ${fixturesDir}`);

const agentDir = mkdtempSync(join(tmpdir(), "pi-goldens-agent-"));
try {
  for (const name of cases) {
    const caseDir = join(fixturesDir, name);
    const rootAbs = join(caseDir, "root");
    const { skills, diagnostics } = loadSkills({
      cwd: caseDir,
      agentDir,
      skillPaths: [rootAbs],
      includeDefaults: false,
    });
    const sorted = [...skills].sort((a, b) => byteOrder(a.name, b.name) || byteOrder(a.filePath, b.filePath));

    let available = formatSkillsForPrompt(sorted);
    if (available !== "") {
      if (!available.startsWith("\n\n")) throw new Error(`${name}: unexpected catalogue prefix`);
      available = available.slice(2);
    }
    const inline = sorted.map((s) => expandSkill(sorted, s.name)).join("\n\n");

    const outDir = join(caseDir, "expected");
    mkdirSync(outDir, { recursive: true });
    writeFileSync(join(outDir, "available.txt"), placeholder(available, rootAbs));
    writeFileSync(join(outDir, "inline.txt"), placeholder(inline, rootAbs));
    writeFileSync(
      join(outDir, "pi-diagnostics.json"),
      JSON.stringify(relativizeDiagnostics(diagnostics, rootAbs), null, 2) + "\n",
    );
    console.log(`${name}: ${sorted.length} skill(s), ${diagnostics.length} diagnostic(s)`);
  }
} finally {
  rmSync(agentDir, { recursive: true, force: true });
}
