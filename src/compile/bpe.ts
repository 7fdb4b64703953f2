/**
 * Token counts as tiktoken and gpt-tokenizer make them (a text split into pieces by the encoding's pattern, each
 * piece byte-pair encoded: the pair of adjacent tokens of lowest rank merged first, the leftmost of equal ones), in
 * time linear in the text. gpt-tokenizer merges a piece by scanning it whole for every merge: a run of a million
 * letters, CJK characters or emoji, one piece, took minutes. Here a merge costs a heap operation, and a long piece
 * is encoded a window at a time:
 *
 * - An encoding is the byte-pair encoding of its bytes (valid) when every two adjacent tokens are: two valid
 *   encodings join into a valid one when the last token of the first and the first of the second are a valid pair,
 *   and any part of a valid encoding is valid (the properties github.com/github/rust-gems' `bpe` crate is built on).
 *   Each text has one valid encoding: the one byte-pair encoding makes.
 * - So a window's tokens but its last (which the window's end may have cut) are kept when they join what was kept
 *   before; the next window starts where they end. When they do not join, the last kept token is given back and the
 *   window starts earlier. What is kept is valid at every step, so the count is exact; a windowed encoding that keeps
 *   failing to join (no text seen so far does) falls back to encoding the piece whole, in O(n log n).
 *
 * The token-counting worker (token-worker.ts) runs it; the tests run the same code in their own thread.
 */

/** An encoding's tokens by rank: a token's text, or its bytes where they are not UTF-8 (gpt-tokenizer's data). */
export type TokenRanks = readonly (string | readonly number[])[];

/** Bytes a window of a long piece holds: more than twice the longest token (128 bytes), so it always holds two. */
const WINDOW = 256;
/** Entries each memo keeps before it starts over. */
const MEMO_ENTRIES = 100_000;
/** A merge's heap key: its rank times this, plus the byte offset of its left token (a piece under 4 GiB). */
const RANK_SCALE = 2 ** 32;
const ASCII = /^[\x00-\x7f]*$/;

export class BpeCounter {
  /** Each token's bytes as a Latin-1 string (one character a byte), and back. */
  private readonly rankOf = new Map<string, number>();
  private readonly bytesOf: string[] = [];
  private readonly byteRank = new Int32Array(256);
  /** Per left token: the rank of each right token's merge with it, or -1. */
  private merges: (Map<number, number> | undefined)[] = [];
  /** Per left token: whether each right token follows it in a valid encoding, 1 or 0. */
  private pairs: (Map<number, number> | undefined)[] = [];
  /** Entries of both, which start over past `MEMO_ENTRIES` times ten (random text makes a new pair a byte). */
  private pairEntries = 0;
  /** Tokens of each short piece (by its text), and of each window (by its bytes). */
  private readonly pieceCounts = new Map<string, number>();
  private readonly windowTokens = new Map<string, number[]>();
  private heap = new Float64Array(1024);

  constructor(
    ranks: TokenRanks,
    private readonly pattern: RegExp,
  ) {
    ranks.forEach((token, rank) => {
      const bytes = typeof token !== "string" ? String.fromCharCode(...token) : ASCII.test(token) ? token : latin1(token);
      this.rankOf.set(bytes, rank);
      this.bytesOf[rank] = bytes;
    });
    for (let byte = 0; byte < 256; byte++) this.byteRank[byte] = this.rankOf.get(String.fromCharCode(byte))!;
  }

  /** The tokens of `text`, every special token's text counted as plain text. */
  count(text: string): number {
    let total = 0;
    for (const [piece] of text.matchAll(this.pattern)) total += this.pieceTokens(piece);
    return total;
  }

  /**
   * The tokens of each part of `text`, `ends` giving where each part ends (ascending, the last the text's length),
   * in one pass over it: each part's `count` alone, where no piece of the pattern reaches across an end (the
   * pattern looks ahead, never back; see LINE_END in tokens.ts).
   */
  countParts(text: string, ends: readonly number[]): number[] {
    const counts = ends.map(() => 0);
    let part = 0;
    for (const match of text.matchAll(this.pattern)) {
      while (part < ends.length - 1 && match.index >= ends[part]!) part++;
      counts[part]! += this.pieceTokens(match[0]);
    }
    return counts;
  }

  /** A piece's tokens, short pieces remembered by their text (most of a prompt's pieces come again and again). */
  private pieceTokens(piece: string): number {
    const known = this.pieceCounts.get(piece);
    if (known !== undefined) return known;
    const bytes = ASCII.test(piece) ? piece : latin1(piece);
    if (bytes.length > WINDOW) return this.countLong(bytes) ?? this.encode(bytes).length;
    const tokens = this.encode(bytes).length;
    if (this.pieceCounts.size >= MEMO_ENTRIES) this.pieceCounts.clear();
    this.pieceCounts.set(piece, tokens);
    return tokens;
  }

  /** A long piece's tokens, a window at a time (see above); undefined when the windows keep failing to join. */
  private countLong(bytes: string): number | undefined {
    const kept: number[] = [];
    let start = 0;
    // Given-back tokens allowed: a few per window keeps the work linear.
    let retries = 8 + (bytes.length >> 6);
    for (;;) {
      const end = Math.min(bytes.length, start + WINDOW);
      const tokens = this.windowOf(bytes.slice(start, end));
      if (kept.length === 0 || this.joins(kept[kept.length - 1]!, tokens[0]!)) {
        const keep = end === bytes.length ? tokens.length : tokens.length - 1;
        for (let index = 0; index < keep; index++) {
          kept.push(tokens[index]!);
          start += this.bytesOf[tokens[index]!]!.length;
        }
        if (end === bytes.length) return kept.length;
      } else {
        if (--retries < 0) return undefined;
        start -= this.bytesOf[kept.pop()!]!.length;
      }
    }
  }

  private windowOf(bytes: string): number[] {
    let tokens = this.windowTokens.get(bytes);
    if (!tokens) {
      tokens = this.encode(bytes);
      if (this.windowTokens.size >= MEMO_ENTRIES / 10) this.windowTokens.clear();
      this.windowTokens.set(bytes, tokens);
    }
    return tokens;
  }

  /** Whether `left` then `right` is the encoding of their bytes together, so that encodings ending and starting with them join. */
  private joins(left: number, right: number): boolean {
    let valid = this.pairs[left]?.get(right);
    if (valid === undefined) {
      const tokens = this.encode(this.bytesOf[left]! + this.bytesOf[right]!);
      valid = tokens.length === 2 && tokens[0] === left && tokens[1] === right ? 1 : 0;
      this.remember("pairs", left, right, valid);
    }
    return valid === 1;
  }

  /** The rank of the token `left` and `right` make together, or -1. */
  private mergeRank(left: number, right: number): number {
    let rank = this.merges[left]?.get(right);
    if (rank === undefined) {
      rank = this.rankOf.get(this.bytesOf[left]! + this.bytesOf[right]!) ?? -1;
      this.remember("merges", left, right, rank);
    }
    return rank;
  }

  private remember(table: "merges" | "pairs", left: number, right: number, value: number): void {
    if (++this.pairEntries > MEMO_ENTRIES * 10) {
      this.merges = [];
      this.pairs = [];
      this.pairEntries = 1;
    }
    (this[table][left] ??= new Map()).set(right, value);
  }

  /**
   * The byte-pair encoding of `bytes`: each byte a token, then the lowest-ranked merge of two adjacent tokens, the
   * leftmost of equal ones, until none is left. A heap of candidate merges (rank, left offset) keeps each step
   * O(log n); a candidate whose tokens have changed since is skipped when it comes up.
   */
  private encode(bytes: string): number[] {
    const whole = this.rankOf.get(bytes);
    if (whole !== undefined) return [whole];
    const length = bytes.length;
    const token = new Int32Array(length);
    const next = new Int32Array(length);
    const previous = new Int32Array(length);
    /** The rank of the merge of the token at each offset with the next, or -1. */
    const rank = new Int32Array(length);
    let size = 0;
    const push = (left: number, merged: number) => {
      if (size === this.heap.length) {
        const larger = new Float64Array(size * 2);
        larger.set(this.heap);
        this.heap = larger;
      }
      const key = merged * RANK_SCALE + left;
      let at = size++;
      while (at > 0) {
        const parent = (at - 1) >> 1;
        if (this.heap[parent]! <= key) break;
        this.heap[at] = this.heap[parent]!;
        at = parent;
      }
      this.heap[at] = key;
    };
    const pop = (): number => {
      const top = this.heap[0]!;
      const last = this.heap[--size]!;
      let at = 0;
      for (;;) {
        let child = 2 * at + 1;
        if (child >= size) break;
        if (child + 1 < size && this.heap[child + 1]! < this.heap[child]!) child++;
        if (this.heap[child]! >= last) break;
        this.heap[at] = this.heap[child]!;
        at = child;
      }
      this.heap[at] = last;
      return top;
    };
    const candidate = (left: number) => {
      const right = next[left]!;
      rank[left] = right < length ? this.mergeRank(token[left]!, token[right]!) : -1;
      if (rank[left]! >= 0) push(left, rank[left]!);
    };
    for (let offset = 0; offset < length; offset++) {
      token[offset] = this.byteRank[bytes.charCodeAt(offset)]!;
      next[offset] = offset + 1;
      previous[offset] = offset - 1;
    }
    for (let offset = 0; offset < length; offset++) candidate(offset);
    while (size > 0) {
      const key = pop();
      const merged = Math.floor(key / RANK_SCALE);
      const left = key - merged * RANK_SCALE;
      if (rank[left] !== merged) continue; // its tokens changed since
      const right = next[left]!;
      token[left] = merged;
      rank[right] = -1;
      next[left] = next[right]!;
      if (next[left]! < length) previous[next[left]!] = left;
      candidate(left);
      if (previous[left]! >= 0) candidate(previous[left]!);
    }
    const tokens: number[] = [];
    for (let offset = 0; offset < length; offset = next[offset]!) tokens.push(token[offset]!);
    return tokens;
  }
}

/** A string's UTF-8 bytes, one character a byte (a lone surrogate as U+FFFD's, as TextEncoder writes it). */
function latin1(text: string): string {
  return Buffer.from(text, "utf8").toString("latin1");
}
