// Real public skill catalogues for `npm run bench` (its `real` rows), each at a pinned commit (its roots' folders
// only), so runs stay comparable. The bench never downloads them; it skips the case when they are missing. Get them once with
//
//   node bench/catalogues.mjs
//
// which fills bench/.catalogues/ (git-ignored; $SKILLBAKE_BENCH_CATALOGUES names another folder) from, in order:
// the folder itself when already filled; a bare mirror of each repository, $SKILLBAKE_BENCH_MIRRORS/<owner>+<name>/repo
// (default /work/.mirror, where this team's machines keep snapshots), read with `git archive`; else a shallow
// `git fetch` of the commit from GitHub (the only step that needs the network).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Each repository, its commit, and the roots a project vendoring it would point its config at. */
export const CATALOGUES = [
  { repo: "anthropics/skills", commit: "9d2f1ae187231d8199c64b5b762e1bdf2244733d", roots: ["skills"] },
  { repo: "openai/skills", commit: "f6b8344b4e519f964d8884d6f60b57991f3f4993", roots: ["skills/.curated", "skills/.system"] },
  { repo: "github/awesome-copilot", commit: "ab7544d03d4c49fdd07f5958e1888ad39c4118e2", roots: ["skills"] },
  { repo: "obra/superpowers", commit: "44c9b2d6e889982ac18c27d05a19fefe335194e1", roots: ["skills"] },
  { repo: "trailofbits/skills", commit: "293fb74c3151cceda32a85a545fe8acd67f8f5c6", roots: ["plugins"] },
  { repo: "K-Dense-AI/claude-scientific-skills", commit: "899a51bfbd63218153b272c9459dcb4a7ae88da6", roots: ["scientific-skills"] },
  { repo: "sickn33/antigravity-awesome-skills", commit: "e1dd8f41bcb43c3bb025d5056183729a626b696d", roots: ["skills"] },
  { repo: "wshobson/agents", commit: "367cb6a4a182cf7e9b0a17c9429f7411ddd9cf35", roots: ["plugins"] },
  { repo: "vercel-labs/agent-skills", commit: "b9c8ee0643d87d3c5a953d1e22382ff2ead39229", roots: ["skills"] },
];

const BENCH = dirname(fileURLToPath(import.meta.url));

/** Where the catalogues are kept: one folder per repository, `<owner>+<name>`, holding its tree at the commit. */
export function cataloguesDir() {
  return resolve(process.env.SKILLBAKE_BENCH_CATALOGUES ?? join(BENCH, ".catalogues"));
}

/** A repository's folder, when it has been filled. */
export function catalogueDir({ repo }) {
  const dir = join(cataloguesDir(), repo.replace("/", "+"));
  return existsSync(join(dir, ".complete")) ? dir : undefined;
}

/** Fills one repository's folder (see the header). */
function fetchCatalogue({ repo, commit, roots }) {
  const dir = join(cataloguesDir(), repo.replace("/", "+"));
  const partial = `${dir}.partial`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  const mirror = join(resolve(process.env.SKILLBAKE_BENCH_MIRRORS ?? "/work/.mirror"), repo.replace("/", "+"), "repo");
  let gitDir = mirror;
  if (!existsSync(mirror)) {
    gitDir = join(partial, ".git");
    execFileSync("git", ["init", "--quiet", "--bare", gitDir]);
    execFileSync("git", ["--git-dir", gitDir, "fetch", "--quiet", "--depth", "1", `https://github.com/${repo}.git`, commit], { stdio: "inherit" });
  }
  // The roots alone: what the bench builds (a mirror may leave out a repository's largest files elsewhere).
  const archive = execFileSync("git", ["--git-dir", gitDir, "archive", "--format=tar", commit, "--", ...roots], { maxBuffer: 1 << 30 });
  execFileSync("tar", ["-x", "-C", partial], { input: archive });
  rmSync(join(partial, ".git"), { recursive: true, force: true });
  execFileSync("touch", [join(partial, ".complete")]);
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  return dir;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const catalogue of CATALOGUES) {
    const dir = catalogueDir(catalogue) ?? fetchCatalogue(catalogue);
    console.log(`${catalogue.repo} @ ${catalogue.commit.slice(0, 12)}: ${dir}`);
  }
}
