import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { PrefixHash, type HashCheckpoints } from "../src/bundle/prefix-hash.js";

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

/** Feeds `bytes` in pieces of the given sizes (the rest as one), as a file's writer hands them over. */
function hashed(bytes: Buffer, pieces: readonly number[], earlier?: { checkpoints: HashCheckpoints; disk: Buffer; reads?: number[] }, every = 5): HashCheckpoints {
  const hash = new PrefixHash(
    earlier && {
      checkpoints: earlier.checkpoints,
      readAt: (into, position) => {
        earlier.reads?.push(position);
        return position < earlier.disk.byteLength ? earlier.disk.copy(into, 0, position, Math.min(earlier.disk.byteLength, position + into.byteLength)) : 0;
      },
    },
    every,
  );
  let at = 0;
  for (const size of pieces) {
    hash.update(bytes.subarray(at, Math.min(bytes.byteLength, at + size)));
    at = Math.min(bytes.byteLength, at + size);
  }
  hash.update(bytes.subarray(at));
  return hash.finish();
}

/** Each state digested: the sha256 of the file's first `k × every` bytes. */
const stateDigests = (checkpoints: HashCheckpoints) => checkpoints.states.map((state) => state.copy().digest("hex"));

describe("PrefixHash", () => {
  it("gives the sha256 of what it was fed, with or without the earlier version of the file, whatever changed and however it was cut", () => {
    const bytes = fc.uint8Array({ maxLength: 40 }).map((array) => Buffer.from(array));
    const pieces = fc.array(fc.integer({ min: 0, max: 13 }), { maxLength: 8 });
    fc.assert(
      fc.property(bytes, fc.integer({ min: 0, max: 40 }), bytes, fc.integer({ min: 0, max: 40 }), pieces, pieces, (before, kept, inserted, cut, firstPieces, nextPieces) => {
        // The next version: a front of the earlier one kept, new bytes, then the earlier one's rest from some point.
        const after = Buffer.concat([before.subarray(0, kept), inserted, before.subarray(Math.min(cut, before.byteLength))]);
        const first = hashed(before, firstPieces);
        expect(first.digest).toBe(sha256(before));
        const next = hashed(after, nextPieces, { checkpoints: first, disk: before });
        expect(next.digest).toBe(sha256(after));
        expect(next.length).toBe(after.byteLength);
        expect(stateDigests(next)).toEqual(Array.from({ length: Math.floor(after.byteLength / 5) + 1 }, (_, k) => sha256(after.subarray(0, k * 5))));
        // And the version after that, resumed from states that were partly the first file's.
        expect(hashed(before, nextPieces, { checkpoints: next, disk: after }).digest).toBe(sha256(before));
      }),
    );
  });

  it("hashes again what the file on disk no longer holds, and holds to its own spacing of states", () => {
    const before = Buffer.from("abcdefghijklmnopqrstuvwxyz");
    const first = hashed(before, [3, 3, 3]);
    // The earlier file on disk is shorter than its checkpoints say (cut short since): hashed from the start.
    const reads: number[] = [];
    expect(hashed(before, [26], { checkpoints: first, disk: before.subarray(0, 10), reads }).digest).toBe(sha256(before));
    expect(reads).toEqual([0, 5, 10]);
    // Bytes past a cut-short file's end are never taken as held, whatever a read left in its buffer before.
    const held = hashed(Buffer.from("aaaaabbbbb"), []);
    expect(hashed(Buffer.from("aaaaaaaaaa"), [5, 5], { checkpoints: held, disk: Buffer.from("aaaaa") }).digest).toBe(sha256(Buffer.from("aaaaaaaaaa")));
    // Checkpoints of another spacing are not used.
    const other = hashed(before, [], undefined, 7);
    expect(hashed(before, [], { checkpoints: other, disk: before }).digest).toBe(sha256(before));
    expect(stateDigests(hashed(before, [], { checkpoints: other, disk: before }))).toHaveLength(6);
  });

  it("answers a file the same as the earlier one with its checkpoints, reading it but hashing nothing", () => {
    const before = Buffer.from("the same bytes, build after build");
    const first = hashed(before, [4]);
    expect(hashed(before, [4, 9], { checkpoints: first, disk: before })).toBe(first);
  });
});
