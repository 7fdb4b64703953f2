import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hashFile, sha256Hex } from "../src/compile/resources.js";
import { tempDir } from "./helpers.js";

const CHUNK = 256 * 1024;

describe("hashFile", () => {
  it("gives the size and sha256 of files read in one read, at the read size's edges, and in many", async () => {
    const dir = await tempDir();
    for (const size of [0, 1, 7000, CHUNK - 1, CHUNK, CHUNK + 1, 3 * CHUNK + 5]) {
      const bytes = Buffer.alloc(size, size % 251);
      const file = join(dir, `f${size}`);
      writeFileSync(file, bytes);
      const hashed = hashFile(file);
      expect({ size: hashed.size, sha256: hashed.sha256 }).toEqual({ size, sha256: createHash("sha256").update(bytes).digest("hex") });
      expect(sha256Hex(bytes)).toBe(hashed.sha256);
    }
  });
});
