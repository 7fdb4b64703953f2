import { randomBytes } from "node:crypto";
import { copyFile, mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { GENERATOR, type StagedCopy } from "./bundle.js";
import { hashFile } from "./resources.js";

/** The outDir is one skillbake must not replace; the CLI exits 2. */
export class OutputError extends Error {
  override name = "OutputError";
}

/**
 * Writes the bundle into a sibling temporary folder, then swaps it in (SPEC §6), so readers see the old
 * bundle or the new one, never a mix. A folder that holds anything but a skillbake bundle is never replaced.
 * `copies` are skill files `stage: true` puts into the bundle.
 */
export async function writeBundle(outDir: string, files: ReadonlyMap<string, string>, copies: readonly StagedCopy[] = []): Promise<void> {
  await assertReplaceable(outDir);
  const parent = dirname(outDir);
  await mkdir(parent, { recursive: true });
  const suffix = `${process.pid}-${randomBytes(4).toString("hex")}`;
  const staging = join(parent, `.${basename(outDir)}.tmp-${suffix}`);
  const retired = join(parent, `.${basename(outDir)}.old-${suffix}`);
  try {
    for (const [path, text] of files) {
      const target = join(staging, path);
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, text);
    }
    await stageCopies(staging, copies);
    let replaced = false;
    try {
      await rename(outDir, retired);
      replaced = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
    await rename(staging, outDir);
    if (replaced) await rm(retired, { recursive: true, force: true });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/** Copies staged skill files (modes kept, so scripts stay executable), each checked against the manifest's hash. */
async function stageCopies(staging: string, copies: readonly StagedCopy[]): Promise<void> {
  for (const copy of copies) {
    const target = join(staging, copy.path);
    await mkdir(dirname(target), { recursive: true });
    await copyFile(copy.from, target);
    if (hashFile(target).sha256 !== copy.sha256) {
      throw new OutputError(`${copy.from} changed while the bundle was built; run \`skills build\` again`);
    }
  }
}

/** An absent or empty folder, or one whose manifest says skillbake wrote it. */
async function assertReplaceable(outDir: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(outDir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return;
    if (code === "ENOTDIR") throw new OutputError(`${outDir} is a file, not a folder; skillbake will not replace it`);
    throw error;
  }
  if (entries.length === 0) return;
  try {
    const manifest = JSON.parse(await readFile(join(outDir, "manifest.json"), "utf8"));
    if (manifest?.generator === GENERATOR) return;
  } catch {
    // no readable manifest: not ours
  }
  throw new OutputError(`${outDir} is not empty and was not written by skillbake; refusing to replace it. Choose another \`outDir\`, or empty the folder.`);
}
