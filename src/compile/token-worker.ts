// The worker thread of `tokenCounter` (tokens.ts): loads an encoding and answers `{ id, texts }` with `{ id, counts }`
// (or `{ id, error }`) and `{ id, used: true }` with `{ id, used }`. `{ known }` is what an earlier `used` returned; an
// entry that is not a count is ignored (the build cache is only checked by its checksum). Skill text is data, not a
// chat transcript: `<|endoftext|>` in a description is counted as the characters it is, as tiktoken's
// `encode(text, disallowed_special=())`.
import * as crypto from "node:crypto";
import { parentPort, workerData } from "node:worker_threads";
import { BpeCounter, type TokenRanks } from "./bpe.js";

interface TokenWorkerData {
  /** gpt-tokenizer's files for the encoding: its token ranks, and the module of its split patterns. */
  ranks: string;
  patterns: string;
  /** The name of the encoding's pattern in that module. */
  pattern: string;
  /** The source of `LINE_END` (tokens.ts). */
  lineEnd: string;
}

const { ranks, patterns, pattern, lineEnd } = workerData as TokenWorkerData;
/** 66 bits of a line's sha256: 10,000 skills make ~50,000 lines, so two of them sharing a digest is a 1-in-10^10 chance. */
const DIGEST_LENGTH = 11;
const lineEnds = new RegExp(lineEnd, "g");

let loaded: BpeCounter | undefined;
let loadError: unknown;
try {
  // Required at run time from the installed package: megabytes of ranks, never bundled.
  loaded = new BpeCounter((require(ranks) as { default: TokenRanks }).default, (require(patterns) as Record<string, RegExp>)[pattern]!);
} catch (error) {
  loadError = error;
}
/** The encoding's counter; a failure to load it is each count's error. */
function counter(): BpeCounter {
  if (!loaded) throw loadError;
  return loaded;
}

/** Tokens by line, each line named by its digest: what an earlier build left costs little to keep and to load. */
const known = new Map<string, number>();
let used = new Map<string, number>();
/** Texts counted whole, with where their lines end and each line's tokens, whose lines are still to be remembered. */
let unsplit: { text: string; ends: number[]; counts: number[] }[] = [];
// Node's one-shot digest (20.12 and later) costs a third as much a line as a Hash object: ~50,000 lines at 10,000 skills.
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: "base64") => string }).hash;
const digest = (line: string) => (oneShotHash ? oneShotHash("sha256", line, "base64") : crypto.createHash("sha256").update(line).digest("base64")).slice(0, DIGEST_LENGTH);

function remember(text: string): void {
  for (const entry of text.split(",")) {
    const tokens = entry.slice(DIGEST_LENGTH);
    if (/^[0-9]{1,9}$/.test(tokens)) known.set(entry.slice(0, DIGEST_LENGTH), Number(tokens));
  }
}

/** Where each line of `text` ends, the last at the text's end (a line break is the last character of its line; "" is one empty line). */
function lineEndsOf(text: string): number[] {
  const ends: number[] = [];
  for (const match of text.matchAll(lineEnds)) ends.push(match.index + 1);
  ends.push(text.length); // LINE_END looks ahead for more than a line break: it never matches at the end
  return ends;
}

function countLine(line: string): number {
  const key = digest(line);
  let tokens = known.get(key);
  if (tokens === undefined) {
    tokens = counter().count(line);
    known.set(key, tokens);
  }
  used.set(key, tokens);
  return tokens;
}

function byLines(text: string): number {
  let total = 0;
  let start = 0;
  for (const end of lineEndsOf(text)) {
    total += countLine(text.slice(start, end));
    start = end;
  }
  return total;
}

/** Remembers the lines of the texts counted whole, by their tokens counted then. */
function split(): void {
  for (const { text, ends, counts } of unsplit) {
    let start = 0;
    ends.forEach((end, index) => {
      const key = digest(text.slice(start, end));
      known.set(key, counts[index]!);
      used.set(key, counts[index]!);
      start = end;
    });
  }
  unsplit = [];
}

/**
 * A count with nothing to reuse is made in one pass over the text, each line's tokens kept (what counting the lines
 * one by one gives, and faster): their digests are taken while the worker is idle.
 */
function count(text: string): number {
  if (known.size > 0) return byLines(text);
  const ends = lineEndsOf(text);
  const counts = counter().countParts(text, ends);
  unsplit.push({ text, ends, counts });
  return counts.reduce((total, tokens) => total + tokens, 0);
}

parentPort!.on("message", (message: { known?: string; id: number; texts?: string[]; used?: true }) => {
  if (message.known !== undefined) return remember(message.known);
  const { id } = message;
  try {
    split();
    if (message.used) {
      parentPort!.postMessage({ id, used: Array.from(used, ([key, tokens]) => key + tokens).join(",") });
      used = new Map();
      return;
    }
    parentPort!.postMessage({ id, counts: message.texts!.map(count) });
    if (unsplit.length > 0) setImmediate(split);
  } catch (error) {
    parentPort!.postMessage({ id, error: String((error as Error | undefined)?.message ?? error) });
  }
});
