// Generates a realistic skill catalogue for the benchmark: deterministic (seeded), so the same count always
// gives the same bytes and results stay comparable over time.
//
//   root/<area>/<skill>/SKILL.md             depth 2 (two thirds of the skills)
//   root/<area>/<group>/<skill>/SKILL.md     depth 3
//   …/<skill>/references/*.md                resources beside one skill in five
//
// A SKILL.md is ~7 KB: frontmatter with name, description and, for some, optional fields, then a
// Markdown body of headings, paragraphs, lists and code blocks. A .gitignore at the root hides a
// drafts/ folder, as real catalogues do.
//
// `realistic: true` shapes it like a mix of real public catalogues: one skill in four has resource folders
// of dozens of files (references/, scripts/, assets/), one in six a name that differs from its folder and one
// in eleven an upper-case one (warnings), one in eight a folded block scalar or an anchor and one in ten a
// double-quoted description with escapes (YAML that needs the full parser), and one in forty a description
// over 1,024 characters (a warning).
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const WORDS = (
  "the a to of and in for with when use run check build test deploy review commit release debug fix " +
  "configure install update migrate format lint bundle verify inspect measure trace profile cache index " +
  "query schema table service endpoint request response token secret key file folder path branch merge " +
  "pull push tag version changelog note issue ticket log error warning failure retry timeout limit budget " +
  "prompt agent skill model tool command script server client module package dependency graph node edge " +
  "first then after before each every only never always carefully quickly safely locally remotely"
).split(" ");
const AREAS = ["backend", "frontend", "data", "devops", "security", "docs", "testing", "mobile", "ml", "infra"];
const GROUPS = ["core", "tools", "workflows", "integrations", "experimental"];
const TOOLS = ["Read", "Write", "Edit", "Bash", "Grep", "Glob", "WebFetch"];

/** Mulberry32: a small seeded PRNG, so catalogues are identical run after run. */
function random(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Writes `count` skills under `root` (which should be empty) and returns their SKILL.md paths in creation order. */
export function generateCatalogue(root, count, seed = 1, { realistic = false } = {}) {
  const rand = random(seed);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const sentence = (min, max) => {
    const length = min + Math.floor(rand() * (max - min));
    const words = Array.from({ length }, () => pick(WORDS));
    words[0] = words[0][0].toUpperCase() + words[0].slice(1);
    return `${words.join(" ")}.`;
  };
  const paragraph = () => Array.from({ length: 3 + Math.floor(rand() * 4) }, () => sentence(8, 20)).join(" ");

  const files = [];
  writeFileSync(join(root, ".gitignore"), "drafts/\n");
  for (let index = 0; index < count; index++) {
    const name = `${pick(WORDS.slice(17, 60))}-${pick(WORDS.slice(60, 100))}-${index.toString(36)}`;
    const area = AREAS[index % AREAS.length];
    const dir = index % 3 === 2 ? join(root, area, GROUPS[(index >> 2) % GROUPS.length], name) : join(root, area, name);
    mkdirSync(dir, { recursive: true });

    const description = `${sentence(12, 40).replace(/:/g, "")} Use when ${sentence(6, 14).toLowerCase()}`;
    const frontmatter = [`name: ${name}`, `description: ${description}`];
    if (realistic) {
      if (index % 6 === 1) frontmatter[0] = `name: ${name}-renamed`;
      else if (index % 11 === 3) frontmatter[0] = `name: ${name.toUpperCase()}`;
      if (index % 8 === 2) frontmatter[1] = `description: >-\n  ${description}\n  ${sentence(6, 12)}`;
      else if (index % 8 === 6) frontmatter.push("defaults: &defaults", "  owner: platform", "settings:", "  <<: *defaults", "  retries: 3");
      else if (index % 10 === 4) frontmatter[1] = `description: "${description} Note: \\"${sentence(4, 8)}\\""`;
      else if (index % 40 === 7) frontmatter[1] = `description: ${Array.from({ length: 8 }, () => sentence(20, 30)).join(" ")}`;
    }
    if (index % 4 === 0) frontmatter.push("license: MIT");
    if (index % 5 === 0) frontmatter.push(`allowed-tools: ${TOOLS.filter(() => rand() < 0.4).join(" ") || "Read"}`);
    if (index % 7 === 0) frontmatter.push("metadata:", `  author: team-${pick(AREAS)}`, `  version: "1.${index % 10}"`);
    if (index % 9 === 0) frontmatter.push(`tags: [${pick(AREAS)}, ${pick(GROUPS)}]`);

    const body = [`# ${name}`, "", paragraph(), ""];
    while (body.join("\n").length < 6800) {
      body.push(`## ${sentence(2, 5).slice(0, -1)}`, "", paragraph(), "");
      const kind = rand();
      if (kind < 0.4) body.push(...Array.from({ length: 3 + Math.floor(rand() * 4) }, (_, i) => `${i + 1}. ${sentence(5, 14)}`), "");
      else if (kind < 0.7) body.push("```bash", `${pick(WORDS)} --${pick(WORDS)} ./${pick(WORDS)}/${pick(WORDS)}.json`, "```", "");
      else body.push(`- ${sentence(4, 10)}`, `- ${sentence(4, 10)}`, "");
    }
    const file = join(dir, "SKILL.md");
    writeFileSync(file, `---\n${frontmatter.join("\n")}\n---\n\n${body.join("\n")}\n`);
    files.push(file);

    if (index % 5 === 0) {
      mkdirSync(join(dir, "references"));
      writeFileSync(join(dir, "references", "guide.md"), `# Guide\n\n${paragraph()}\n`);
      writeFileSync(join(dir, "references", "examples.md"), `# Examples\n\n${paragraph()}\n`);
    }
    if (realistic && index % 4 === 1) {
      for (const folder of ["references", "scripts", "assets"]) mkdirSync(join(dir, folder), { recursive: true });
      const resources = 24 + Math.floor(rand() * 24);
      for (let file = 0; file < resources; file++) {
        const [folder, extension] = [["references", "md"], ["scripts", "sh"], ["assets", "json"]][file % 3];
        writeFileSync(join(dir, folder, `${pick(WORDS)}-${file}.${extension}`), `${paragraph()}\n`);
      }
    }
  }
  mkdirSync(join(root, "drafts", "unfinished"), { recursive: true });
  writeFileSync(join(root, "drafts", "unfinished", "SKILL.md"), "---\nname: unfinished\n---\n");
  return files;
}
