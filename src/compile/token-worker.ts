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

let countTokens: (text: string) => number;
try {
  // Required at run time from the installed package: megabytes of ranks, never bundled.
  const counter = new BpeCounter((require(ranks) as { default: TokenRanks }).default, (require(patterns) as Record<string, RegExp>)[pattern]!);
  countTokens = (text) => counter.count(text);
} catch (error) {
  countTokens = () => {
    throw error;
  };
}

/** Tokens by line, each line named by its digest: what an earlier build left costs little to keep and to load. */
const known = new Map<string, number>();
let used = new Map<string, number>();
/** Texts counted whole whose lines are still to be remembered. */
let unsplit: string[] = [];
// Node's one-shot digest (20.12 and later) costs a third as much a line as a Hash object: ~50,000 lines at 10,000 skills.
const oneShotHash = (crypto as { hash?: (algorithm: string, data: string, encoding: "base64") => string }).hash;
const digest = (line: string) => (oneShotHash ? oneShotHash("sha256", line, "base64") : crypto.createHash("sha256").update(line).digest("base64")).slice(0, DIGEST_LENGTH);

function remember(text: string): void {
  for (const entry of text.split(",")) {
    const tokens = entry.slice(DIGEST_LENGTH);
    if (/^[0-9]{1,9}$/.test(tokens)) known.set(entry.slice(0, DIGEST_LENGTH), Number(tokens));
  }
}

function countLine(line: string): number {
  const key = digest(line);
  let tokens = known.get(key);
  if (tokens === undefined) {
    tokens = countTokens(line);
    known.set(key, tokens);
  }
  used.set(key, tokens);
  return tokens;
}

function byLines(text: string): number {
  let total = 0;
  let start = 0;
  for (const match of text.matchAll(lineEnds)) {
    total += countLine(text.slice(start, match.index + 1));
    start = match.index + 1;
  }
  return start < text.length || text === "" ? total + countLine(text.slice(start)) : total;
}

function split(): void {
  for (const text of unsplit) byLines(text);
  unsplit = [];
}

/** A count with nothing to reuse is made whole (faster than line by line), its lines remembered while the worker is idle. */
function count(text: string): number {
  if (known.size > 0) return byLines(text);
  unsplit.push(text);
  return countTokens(text);
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
