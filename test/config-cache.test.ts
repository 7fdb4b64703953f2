import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { readFile, rename, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/compile/config.js";
import { runCli, skillMd, tempDir, writeTree } from "./helpers.js";

const ENTRY = "node_modules/.cache/skillbake/config/skills.config.ts.json";

/** A TypeScript config whose agent's description comes from a local module (`./agents`, resolved to agents.js). */
async function project(): Promise<string> {
  const dir = join(await tempDir(), "app");
  await writeTree(dir, {
    "skills.config.ts": 'import { defineConfig } from "skillbake";\nimport { description } from "./agents";\nexport default defineConfig({ agents: { main: { description, skills: [{ root: "skills" }] } } });\n',
    "agents.js": 'export const description = "aaaa";\n',
    "skills/alpha/SKILL.md": skillMd("alpha"),
  });
  return dir;
}

const description = async (dir: string) => (await loadConfig(undefined, dir)).config.agents.main!.description;

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** Rewrites the entry's code (`aaaa` becomes `cccc`), with a checksum that agrees unless `corrupt`: only the cache can say cccc. */
async function forgeEntry(dir: string, corrupt = false): Promise<void> {
  const text = await readFile(join(dir, ENTRY), "utf8");
  const newline = text.indexOf("\n");
  const header = JSON.parse(text.slice(0, newline)) as { sha256: string };
  const payload = text.slice(newline + 1).replaceAll("aaaa", "cccc");
  expect(payload).not.toBe(text.slice(newline + 1));
  if (!corrupt) header.sha256 = sha256(payload);
  await writeFile(join(dir, ENTRY), `${JSON.stringify(header)}\n${payload}`);
}

describe("the transpiled-config cache", () => {
  it("is written on the first load and used on the next while nothing it was made from changed", async () => {
    const dir = await project();
    expect(await description(dir)).toBe("aaaa");
    expect(existsSync(join(dir, ENTRY))).toBe(true);
    await forgeEntry(dir);
    expect(await description(dir)).toBe("cccc");
  });

  it("is not used once an imported file changes, even to the same size within the same second", async () => {
    const dir = await project();
    await description(dir);
    await forgeEntry(dir);
    await writeFile(join(dir, "agents.js"), 'export const description = "bbbb";\n');
    expect(await description(dir)).toBe("bbbb");
    // …and the entry written for the new text is used again.
    expect((await readFile(join(dir, ENTRY), "utf8")).includes("bbbb")).toBe(true);
  });

  it("is not used once the config itself changes", async () => {
    const dir = await project();
    await description(dir);
    await forgeEntry(dir);
    const config = join(dir, "skills.config.ts");
    await writeFile(config, (await readFile(config, "utf8")).replace("{ description,", "{ description: description + '!',"));
    expect(await description(dir)).toBe("aaaa!");
  });

  it("is not used when a new file changes what an import resolves to (agents.ts beside agents.js)", async () => {
    const dir = await project();
    await description(dir);
    await forgeEntry(dir);
    await writeFile(join(dir, "agents.ts"), 'export const description: string = "dddd";\n');
    expect(await description(dir)).toBe("dddd");
  });

  it("is not used when the folder of an import is renamed and a link to another put in its place, its file the same size and mtime", async () => {
    const dir = await project();
    await writeTree(dir, {
      "skills.config.ts": 'import { defineConfig } from "skillbake";\nimport { description } from "./lib/agents";\nexport default defineConfig({ agents: { main: { description, skills: [{ root: "skills" }] } } });\n',
      "lib/agents.js": 'export const description = "aaaa";\n',
      "other/agents.js": 'export const description = "eeee";\n',
    });
    await description(dir);
    await forgeEntry(dir);
    execFileSync("touch", ["-r", join(dir, "lib/agents.js"), join(dir, "other/agents.js")]);
    await rename(join(dir, "lib"), join(dir, "lib-old"));
    await symlink(join(dir, "other"), join(dir, "lib"));
    expect(await description(dir)).toBe("eeee");
  });

  it("is not used when a tsconfig.json appears in a folder above the config's", async () => {
    const dir = await project();
    await description(dir);
    await forgeEntry(dir);
    await writeFile(join(dir, "..", "tsconfig.json"), "{}\n");
    expect(await description(dir)).toBe("aaaa");
  });

  it("reads no device or FIFO an entry names as an input, and follows no link in the entry's place", async () => {
    const dir = await project();
    expect(await description(dir)).toBe("aaaa");
    // A committed entry that names /dev/zero as a file the config was made from: it is not used, and nothing hangs.
    const text = await readFile(join(dir, ENTRY), "utf8");
    const newline = text.indexOf("\n");
    const header = JSON.parse(text.slice(0, newline)) as { sha256: string };
    const entry = JSON.parse(text.slice(newline + 1)) as { inputs: Record<string, string> };
    entry.inputs["/dev/zero"] = sha256("");
    const payload = JSON.stringify(entry);
    await writeFile(join(dir, ENTRY), `${JSON.stringify({ ...header, sha256: sha256(payload) })}\n${payload}`);
    expect(await description(dir)).toBe("aaaa");

    await forgeEntry(dir);
    const forged = join(dir, "forged.json");
    await rename(join(dir, ENTRY), forged);
    await symlink(forged, join(dir, ENTRY));
    expect(await description(dir)).toBe("aaaa");
  });

  it("ignores and replaces a corrupt entry", async () => {
    const dir = await project();
    await description(dir);
    await forgeEntry(dir, true);
    expect(await description(dir)).toBe("aaaa");
    await forgeEntry(dir); // the entry was rewritten: forging it again works
    expect(await description(dir)).toBe("cccc");
  });

  it("is not written for a config that imports a package: where a package resolves to is not a file's bytes", async () => {
    const dir = await project();
    await writeTree(dir, {
      "node_modules/shared/package.json": '{ "name": "shared", "type": "module", "main": "index.js" }',
      "node_modules/shared/index.js": 'export const description = "eeee";\n',
      "agents.js": 'export { description } from "shared";\n',
    });
    expect(await description(dir)).toBe("eeee");
    expect(existsSync(join(dir, ENTRY))).toBe(false);
  });

  it("lets the CLI build from the cached config, and pick up an edit of it", async () => {
    const dir = await project();
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect(existsSync(join(dir, ENTRY))).toBe(true);
    await writeFile(join(dir, "agents.js"), 'export const description = "ffff";\n');
    expect((await runCli(["build"], { cwd: dir })).code).toBe(0);
    expect(JSON.parse(await readFile(join(dir, "dist/skills/manifest.json"), "utf8")).agents.main.description).toBe("ffff");
  });
});
