import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * Real token counts (`tokens` in the config, `budget: { tokens }`), with gpt-tokenizer's BPE encodings. An
 * encoding is megabytes of ranks that take a second or more to load, so it is loaded only by a build that asks
 * for counts, never at start-up (the CLI bundle leaves the package out, see scripts/build-cli.mjs), and in a
 * worker thread: started before discovery, it loads while the build reads and checks the skills, and stays (not
 * keeping the process alive) for the next build of a watch session.
 *
 * The worker remembers the tokens of each line it counted, so that text counted before (by a budget's bisection,
 * by an earlier build through the build cache, or earlier in a watch session) is not counted again; a count with
 * nothing to reuse is made whole (faster than line by line) and its lines remembered while the worker is idle.
 * The lines and their counts stay in the worker: the build's own thread sends texts and gets sums.
 */

export const TOKEN_ENCODINGS = ["o200k_base", "cl100k_base"] as const;
export type TokenEncoding = (typeof TOKEN_ENCODINGS)[number];
export const DEFAULT_TOKEN_ENCODING: TokenEncoding = "o200k_base";

export interface TokenCounter {
  /** The tokens of each text, in order. */
  count(texts: readonly string[]): Promise<number[]>;
  /** The tokens of every line the counts since the last call held (`<digest><tokens>,…`): what the build cache keeps. */
  used(): Promise<string>;
}

/**
 * Where a count may be split: after a line break that ends one of the tokenizers' pre-tokenization pieces for
 * certain, so that the tokens of the whole are the sum of the tokens of the parts. That holds at the start of
 * a line whose leading blanks hold no line break and are followed by more than blanks, when the line does not
 * start with `/` (o200k's punctuation pieces take line breaks and slashes after them): no piece of either
 * pattern (o200k_base, cl100k_base) reaches across such a point, and the patterns look ahead, never back.
 * test/tokens.test.ts checks the rule against whole counts, with random and with real text.
 */
const LINE_END = String.raw`\n(?=[^\S\r\n]*[^\s/]|[^\S\r\n]+\/)`;

/**
 * The worker: loads the encoding and warms it up, then answers `{ id, texts }` with `{ id, counts }` (or `{ id,
 * error }`) and `{ id, used: true }` with `{ id, used }`. `{ known }` is what an earlier `used` returned; an
 * entry that is not a count is ignored (the build cache is only checked by its checksum). Skill text is data, not
 * a chat transcript: `<|endoftext|>` in a description is counted as the characters it is (the tokenizer would
 * otherwise throw on it), as tiktoken's `encode(text, disallowed_special=())`.
 */
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const { createHash, hash } = require("node:crypto");
/** 66 bits of a line's sha256: 10,000 skills make ~50,000 lines, so two of them sharing a digest is a 1-in-10^10 chance. */
const DIGEST_LENGTH = 11;
const plainText = { disallowedSpecial: new Set() };
const lineEnd = new RegExp(workerData.lineEnd, "g");
let countTokens;
try {
  countTokens = require(workerData.module).countTokens;
  countTokens("warm up", plainText);
} catch (error) {
  countTokens = () => { throw error; };
}
/** Tokens by line, each line named by its digest: what an earlier build left costs little to keep and to load. */
const known = new Map();
let used = new Map();
/** Texts counted whole whose lines are still to be remembered. */
let unsplit = [];
// Node's one-shot digest (20.12 and later) costs a third as much a line as a Hash object: ~50,000 lines at 10,000 skills.
const digest = hash ? (line) => hash("sha256", line, "base64").slice(0, DIGEST_LENGTH) : (line) => createHash("sha256").update(line).digest("base64").slice(0, DIGEST_LENGTH);
const remember = (text) => {
  for (const entry of text.split(",")) {
    const tokens = entry.slice(DIGEST_LENGTH);
    if (/^[0-9]{1,9}$/.test(tokens)) known.set(entry.slice(0, DIGEST_LENGTH), Number(tokens));
  }
};
const countLine = (line) => {
  const key = digest(line);
  let tokens = known.get(key);
  if (tokens === undefined) {
    tokens = countTokens(line, plainText);
    known.set(key, tokens);
  }
  used.set(key, tokens);
  return tokens;
};
const byLines = (text) => {
  let total = 0;
  let start = 0;
  for (const match of text.matchAll(lineEnd)) {
    total += countLine(text.slice(start, match.index + 1));
    start = match.index + 1;
  }
  return start < text.length || text === "" ? total + countLine(text.slice(start)) : total;
};
const split = () => {
  for (const text of unsplit) byLines(text);
  unsplit = [];
};
const count = (text) => {
  if (known.size > 0) return byLines(text);
  unsplit.push(text);
  return countTokens(text, plainText);
};
parentPort.on("message", (message) => {
  if (message.known !== undefined) return remember(message.known);
  const { id } = message;
  try {
    split();
    if (message.used) {
      parentPort.postMessage({ id, used: Array.from(used, ([key, tokens]) => key + tokens).join(",") });
      used = new Map();
      return;
    }
    parentPort.postMessage({ id, counts: message.texts.map(count) });
    if (unsplit.length > 0) setImmediate(split);
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message || error) });
  }
});
`;

interface Answer {
  counts?: number[];
  used?: string;
  error?: string;
}

/** A counter that can also be told what an earlier build counted. */
type WorkerCounter = TokenCounter & { remember(json: string): void };

const counters = new Map<TokenEncoding, WorkerCounter>();

/**
 * The counter of an encoding, its worker started on first use and shared by later builds in this process.
 * `known`: an earlier build's `used()`, counts the worker need not make again.
 */
export function tokenCounter(encoding: TokenEncoding, known?: string): TokenCounter {
  let counter = counters.get(encoding);
  if (!counter) {
    counter = startWorker(encoding);
    counters.set(encoding, counter);
  }
  if (known !== undefined) counter.remember(known);
  return counter;
}

function startWorker(encoding: TokenEncoding): WorkerCounter {
  const module = createRequire(import.meta.url).resolve(`gpt-tokenizer/encoding/${encoding}`);
  const worker = new Worker(WORKER, { eval: true, workerData: { module, lineEnd: LINE_END } });
  const pending = new Map<number, { resolve(answer: Answer): void; reject(error: Error): void }>();
  let next = 0;
  // Idle, the worker does not keep the process alive; while an answer is awaited, it must.
  worker.unref();
  const settle = (id: number) => {
    const request = pending.get(id)!;
    pending.delete(id);
    if (pending.size === 0) worker.unref();
    return request;
  };
  worker.on("message", ({ id, ...answer }: Answer & { id: number }) => {
    const request = settle(id);
    if (answer.error === undefined) request.resolve(answer);
    else request.reject(new Error(`token counting (${encoding}) failed: ${answer.error}`));
  });
  worker.on("error", (error) => {
    counters.delete(encoding);
    for (const id of [...pending.keys()]) settle(id).reject(error);
  });
  const ask = (message: { texts: readonly string[] } | { used: true }) => {
    const id = next++;
    if (pending.size === 0) worker.ref();
    return new Promise<Answer>((resolve, reject) => {
      pending.set(id, { resolve, reject });
      worker.postMessage({ id, ...message });
    });
  };
  return {
    count: async (texts) => (await ask({ texts })).counts!,
    used: async () => (await ask({ used: true })).used!,
    remember: (json) => worker.postMessage({ known: json }),
  };
}
