import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";

/** One file of a skill folder, as the manifest lists it. */
export interface SkillFile {
  /** Relative to the skill folder, `/`-separated. */
  path: string;
  size: number;
  sha256: string;
}

/** Size and sha256 of a file, streamed so a large asset is never held in memory whole. */
export async function hashFile(path: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash("sha256");
  let size = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { size, sha256: hash.digest("hex") };
}

/** The folder-structure summary of the manifest: totals, and counts per top-level folder (`references`, `scripts`…). */
export interface SkillStructure {
  files: number;
  bytes: number;
  folders: Record<string, { files: number; bytes: number }>;
}

export function summarizeStructure(files: readonly SkillFile[]): SkillStructure {
  const structure: SkillStructure = { files: 0, bytes: 0, folders: {} };
  for (const file of files) {
    structure.files++;
    structure.bytes += file.size;
    const slash = file.path.indexOf("/");
    if (slash < 0) continue;
    const folder = (structure.folders[file.path.slice(0, slash)] ??= { files: 0, bytes: 0 });
    folder.files++;
    folder.bytes += file.size;
  }
  return structure;
}
