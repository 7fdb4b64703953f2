import { createHash, type Hash } from "node:crypto";

/**
 * A bundle file's sha256 as it was taken: the hash's state every `every` bytes (`states[k]` after `k × every`
 * bytes; states are only ever copied, never updated), the file's length and its digest.
 */
export interface HashCheckpoints {
  every: number;
  states: readonly Hash[];
  length: number;
  digest: string;
}

/** What a file's hash needs of the earlier version of the file: its checkpoints, and a read of its bytes as they are on disk. */
export interface EarlierHashed {
  checkpoints: HashCheckpoints;
  /** Reads up to `into.byteLength` bytes at `position`; how many were read (fewer at the end, none on a failure). */
  readAt(into: Uint8Array, position: number): number;
}

/** How far apart the states are kept: ~100 states for a 10,000-skill module, each a few hundred bytes. */
const EVERY_BYTES = 1 << 20;

/**
 * The sha256 of a bundle file being written, fed its bytes in order. SHA-256 reads a file front to back, so the
 * state after the part of the file that is as it was is the state the earlier version had there: while the bytes
 * fed are the earlier file's at the same offsets (compared with what is on disk), nothing is hashed, and at the
 * first byte that differs the hash resumes from the earlier file's last state before it. In watch mode one edited
 * skill leaves the module's front as it was: half of its ~40 ms of hashing at 10,000 skills, on average, is not done.
 */
export class PrefixHash {
  /** Undefined while every byte so far is the earlier file's at the same offset. */
  private hash: Hash | undefined;
  private length = 0;
  private readonly states: Hash[] = [];
  /** While matching: the bytes since the last state, from which the hash resumes. */
  private tail: Buffer | undefined;
  private scratch: Buffer | undefined;

  constructor(
    private readonly earlier: EarlierHashed | undefined,
    private readonly every = earlier?.checkpoints.every ?? EVERY_BYTES,
  ) {
    if (earlier && earlier.checkpoints.every === every && earlier.checkpoints.states.length > 0) {
      this.states.push(earlier.checkpoints.states[0]!);
      this.tail = Buffer.allocUnsafe(every);
    } else {
      this.earlier = undefined;
      this.hash = createHash("sha256");
      this.states.push(this.hash.copy());
    }
  }

  update(bytes: Uint8Array): void {
    if (!this.hash && this.earlierHolds(bytes)) {
      this.keep(bytes);
      return;
    }
    this.resume();
    for (let at = 0; at < bytes.byteLength; ) {
      const step = Math.min(this.every - (this.length % this.every), bytes.byteLength - at);
      this.hash!.update(bytes.subarray(at, at + step));
      at += step;
      this.length += step;
      if (this.length % this.every === 0) this.states.push(this.hash!.copy());
    }
  }

  /** The digest of everything fed, and the checkpoints for the next version of the file. */
  finish(): HashCheckpoints {
    const earlier = this.earlier?.checkpoints;
    if (!this.hash && earlier && this.length === earlier.length) return earlier;
    this.resume();
    return { every: this.every, states: this.states, length: this.length, digest: this.hash!.digest("hex") };
  }

  /** Whether the earlier file, on disk, holds `bytes` at the current offset. */
  private earlierHolds(bytes: Uint8Array): boolean {
    const { earlier } = this;
    if (!earlier || this.length + bytes.byteLength > earlier.checkpoints.length) return false;
    this.scratch ??= Buffer.allocUnsafe(this.every);
    for (let at = 0; at < bytes.byteLength; ) {
      const want = Math.min(this.scratch.byteLength, bytes.byteLength - at);
      const read = earlier.readAt(this.scratch.subarray(0, want), this.length + at);
      if (read !== want || !this.scratch.subarray(0, want).equals(bytes.subarray(at, at + want))) return false;
      at += want;
    }
    return true;
  }

  /** Goes past bytes the earlier file holds: its states are this file's up to there. */
  private keep(bytes: Uint8Array): void {
    const { every } = this;
    const states = this.earlier!.checkpoints.states;
    for (let at = 0; at < bytes.byteLength; ) {
      const step = Math.min(every - (this.length % every), bytes.byteLength - at);
      this.tail!.set(bytes.subarray(at, at + step), this.length % every);
      at += step;
      this.length += step;
      if (this.length % every === 0) this.states.push(states[this.length / every]!);
    }
  }

  /** From matching to hashing: the earlier file's last state, fed the bytes since. */
  private resume(): void {
    if (this.hash) return;
    this.hash = this.states.at(-1)!.copy().update(this.tail!.subarray(0, this.length % this.every));
    this.tail = undefined;
    this.scratch = undefined;
  }
}
