import { createRequire } from "node:module";
import { workerThreads } from "./resources.js";

/**
 * Real token counts (`tokens` in the config, `budget: { tokens }`) in gpt-tokenizer's encodings (its ranks and split
 * patterns), counted by bpe.ts in time linear in the text. An
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
export const LINE_END = String.raw`\n(?=[^\S\r\n]*[^\s/]|[^\S\r\n]+\/)`;

/** The script of the token-counting worker (src/compile/token-worker.ts and what it imports), put in by the build (scripts/embedded-text.mjs). */
declare const __SKILLBAKE_TOKEN_WORKER__: string;

/** Where an encoding's split pattern is in gpt-tokenizer's module of them. */
const PATTERNS: Record<TokenEncoding, string> = { o200k_base: "O200K_TOKEN_SPLIT_REGEX", cl100k_base: "CL100K_TOKEN_SPLIT_REGEX" };

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
  const { resolve } = createRequire(import.meta.url);
  const workerData = { ranks: resolve(`gpt-tokenizer/bpeRanks/${encoding}`), patterns: resolve("gpt-tokenizer/encodingParams/constants"), pattern: PATTERNS[encoding], lineEnd: LINE_END };
  const worker = new (workerThreads().Worker)(__SKILLBAKE_TOKEN_WORKER__, { eval: true, workerData });
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
