/**
 * `publish: { wellKnown }`: the Agent Skills discovery index (0.2.0) of a real catalogue (test/fixtures/catalogue),
 * as docs/runtime.md's "Publish on your site" configures it, served by a plain static server and fetched as a client
 * would: every digest checked, every archive unpacked by `tar` to exactly the skill's files, the bytes the same from
 * two builds; and the folder written only where skillbake may replace it.
 */
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cp, mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { extname, join, normalize } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tarGz } from "../src/bundle/tar.js";
import { REPO, runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const CATALOGUE = join(REPO, "test/fixtures/catalogue/skills");
const docs = await readFile(join(REPO, "docs/runtime.md"), "utf8");
const docsConfig = /<!-- publish: config -->\n```json\n([\s\S]*?)^```$/m.exec(docs)?.[1] ?? "";
const docsRun = /<!-- publish: run -->\n```sh\n([\s\S]*?)^```$/m.exec(docs)?.[1] ?? "";
const INDEX = "public/.well-known/agent-skills";

/** The project of the docs' section: its config, the fixture catalogue, and a site's own file beside the index. */
async function project(): Promise<string> {
  const dir = await tempDir("skillbake-publish-");
  await cp(CATALOGUE, join(dir, "skills"), { recursive: true });
  await writeTree(dir, { "skills.config.json": docsConfig, "public/index.html": "<h1>Our site</h1>\n", "public/.well-known/security.txt": "Contact: mailto:security@example.com\n" });
  return dir;
}

/** Every file under `dir`, relative, `/`-separated, sorted. */
async function filesIn(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

/** A plain static server over `root`, as a site serves its public folder. */
async function staticServer(root: string): Promise<{ url: string; close: () => void }> {
  const types: Record<string, string> = { ".json": "application/json", ".md": "text/markdown", ".gz": "application/gzip" };
  const server = createServer(async (request, response) => {
    const path = normalize(decodeURIComponent(new URL(request.url!, "http://x").pathname));
    try {
      const body = await readFile(join(root, path));
      response.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" }).end(body);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

let dir = "";
let site: { url: string; close: () => void };

beforeAll(async () => {
  dir = await project();
  // The section's commands, as written: the build (the fetch is this test's client below).
  const [build] = docsRun.split("\n").map((line) => line.replace(/#.*$/, "").trim());
  expect(build).toBe("npx skills build");
  expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
  site = await staticServer(join(dir, "public"));
}, 120_000);

afterAll(() => site?.close());

describe("the discovery index, fetched as a client would", () => {
  it("lists each skill with its artifact, every digest matching, every archive unpacking to exactly the skill's files", async () => {
    const indexUrl = `${site.url}/.well-known/agent-skills/index.json`;
    const response = await fetch(indexUrl);
    expect(response.headers.get("content-type")).toBe("application/json");
    const index = (await response.json()) as { $schema: string; skills: { name: string; type: string; description: string; url: string; digest: string }[] };
    expect(index.$schema).toBe("https://schemas.agentskills.io/discovery/0.2.0/schema.json");
    expect(index.skills.map((skill) => [skill.name, skill.type])).toEqual([
      ["doc-coauthoring", "skill-md"],
      ["internal-comms", "archive"],
      ["web-artifacts-builder", "archive"],
    ]);
    for (const skill of index.skills) {
      expect(skill.description.length).toBeGreaterThan(20);
      const bytes = new Uint8Array(await (await fetch(new URL(skill.url, indexUrl))).arrayBuffer());
      expect(`sha256:${sha256(bytes)}`, skill.name).toBe(skill.digest);
      const source = join(CATALOGUE, skill.name);
      if (skill.type === "skill-md") {
        expect(Buffer.from(bytes).equals(await readFile(join(source, "SKILL.md")))).toBe(true);
        continue;
      }
      const unpacked = await tempDir("skillbake-unpacked-");
      await writeFile(join(unpacked, "archive.tar.gz"), bytes);
      await mkdir(join(unpacked, "out"));
      execFileSync("tar", ["-xzf", join(unpacked, "archive.tar.gz"), "-C", join(unpacked, "out")]);
      expect(await filesIn(join(unpacked, "out"))).toEqual(await filesIn(source));
      for (const file of await filesIn(source)) expect((await readFile(join(unpacked, "out", file))).equals(await readFile(join(source, file))), file).toBe(true);
      // Regular files only, at the root, with fixed modes, owners and times.
      const listing = execFileSync("tar", ["-tvzf", join(unpacked, "archive.tar.gz"), "--numeric-owner"], { env: { ...process.env, TZ: "UTC" } }).toString().trim().split("\n");
      for (const line of listing) expect(line).toMatch(/^-rw-r--r-- 0\/0 +\d+ 1970-01-01 00:00 [^/.][^ ]*$/);
    }
  });

  it("two builds, elsewhere and later, give the same bytes; build --check finds them current", async () => {
    const again = await project();
    expect((await runCli(["build"], { cwd: again })).code).toBe(0);
    const files = await filesIn(join(dir, INDEX));
    expect(await filesIn(join(again, INDEX))).toEqual(files);
    for (const file of files) expect((await readFile(join(again, INDEX, file))).equals(await readFile(join(dir, INDEX, file))), file).toBe(true);
    expect((await runCli(["build", "--check"], { cwd: again })).code).toBe(0);
  });
});

describe("the published folder is the bundle's to check and the site's to keep", () => {
  it("build --check reports a published file changed, missing or extra; build puts the folder back, the site's files untouched", async () => {
    const copy = await project();
    expect((await runCli(["build"], { cwd: copy })).code).toBe(0);
    await writeFile(join(copy, INDEX, "doc-coauthoring/SKILL.md"), "edited\n");
    await rm(join(copy, INDEX, "internal-comms.tar.gz"));
    const stale = await runCli(["build", "--check"], { cwd: copy });
    expect(stale.code).toBe(1);
    expect(stale.stderr).toContain("changed  ../../public/.well-known/agent-skills/doc-coauthoring/SKILL.md");
    expect(stale.stderr).toContain("missing  ../../public/.well-known/agent-skills/internal-comms.tar.gz");
    expect((await runCli(["build"], { cwd: copy })).code).toBe(0);
    expect((await runCli(["build", "--check"], { cwd: copy })).code).toBe(0);
    expect(await readFile(join(copy, "public/index.html"), "utf8")).toBe("<h1>Our site</h1>\n");
    expect(await filesIn(join(copy, "public/.well-known"))).toEqual([
      "agent-skills/doc-coauthoring/SKILL.md",
      "agent-skills/index.json",
      "agent-skills/internal-comms.tar.gz",
      "agent-skills/web-artifacts-builder.tar.gz",
      "security.txt",
    ]);
  });

  it("a file its index does not list, or a folder without skillbake's index, stops the build and is not deleted", async () => {
    const copy = await project();
    expect((await runCli(["build"], { cwd: copy })).code).toBe(0);
    await writeFile(join(copy, INDEX, "notes.txt"), "mine\n");
    await writeFile(join(copy, "skills/doc-coauthoring/SKILL.md"), `${await readFile(join(copy, "skills/doc-coauthoring/SKILL.md"), "utf8")}\nMore.\n`);
    let run = await runCli(["build"], { cwd: copy });
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split("\n")).toEqual([`skills: ${join(copy, INDEX)} holds files its index does not list (notes.txt); a build replaces the whole folder, so it will not delete them. Move them out of ${join(copy, INDEX)}.`]);
    expect(await readFile(join(copy, INDEX, "notes.txt"), "utf8")).toBe("mine\n");

    const theirs = await project();
    await writeTree(theirs, { [`${INDEX}/index.json`]: JSON.stringify({ $schema: "https://schemas.agentskills.io/discovery/0.2.0/schema.json", skills: [] }) });
    run = await runCli(["build"], { cwd: theirs });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("holds no discovery index written by skillbake; refusing to replace it");
    expect(await readFile(join(theirs, INDEX, "index.json"), "utf8")).toContain('"skills":[]');
  });

  it("refuses a folder inside the outDir, and two agents publishing into one folder", async () => {
    const inside = await tempDir();
    await writeTree(inside, { "skills/one/SKILL.md": skillMd("one"), "skills.config.json": JSON.stringify({ agents: { a: { skills: [{ root: "skills" }], publish: { wellKnown: "dist/skills" } } } }) });
    let run = await runCli(["build"], { cwd: inside });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("is inside the outDir");
    const twice = await tempDir();
    await writeTree(twice, {
      "skills/one/SKILL.md": skillMd("one"),
      "skills.config.json": JSON.stringify({ agents: { a: { skills: [{ root: "skills" }], publish: { wellKnown: "public" } }, b: { skills: [{ root: "skills" }], publish: { wellKnown: "public" } } } }),
    });
    run = await runCli(["build"], { cwd: twice });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('agents.b.publish.wellKnown: agent "a" publishes into');
  });
});

describe("tarGz", () => {
  it("puts a path too long for ustar in a pax header, which tar reads back", async () => {
    const path = `${"deep-folder-name/".repeat(12)}${"n".repeat(120)}.md`;
    const out = await tempDir();
    await writeFile(join(out, "long.tar.gz"), tarGz([{ path, bytes: Buffer.from("long\n") }, { path: "a/b.txt", bytes: Buffer.from("short\n") }]));
    expect(execFileSync("tar", ["-tzf", join(out, "long.tar.gz")]).toString()).toBe(`a/b.txt\n${path}\n`);
    execFileSync("tar", ["-xzf", join(out, "long.tar.gz"), "-C", out]);
    expect(await readFile(join(out, path), "utf8")).toBe("long\n");
  });

  it("refuses a path that leaves the archive's root", () => {
    for (const path of ["../x", "a/../../x", "/etc/passwd", "a//b", "./a"]) expect(() => tarGz([{ path, bytes: new Uint8Array() }]), path).toThrow(/cannot archive/);
  });
});
