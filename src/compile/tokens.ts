import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * Real token counts (`tokens` in the config, `budget: { tokens }`), with gpt-tokenizer's BPE encodings. An
 * encoding is megabytes of ranks that take a second or more to load, so it is loaded only by a build that asks
 * for counts, never at start-up (the CLI bundle leaves the package out, see scripts/build-cli.mjs), and in a
 * worker thread: started before discovery, it loads while the build reads and checks the skills, and stays (not
 * keeping the process alive) for the next build of a watch session.
 */

export const TOKEN_ENCODINGS = ["o200k_base", "cl100k_base"] as const;
export type TokenEncoding = (typeof TOKEN_ENCODINGS)[number];
export const DEFAULT_TOKEN_ENCODING: TokenEncoding = "o200k_base";

export interface TokenCounter {
  /** The tokens of each text, in order. */
  count(texts: readonly string[]): Promise<number[]>;
}

/**
 * The worker: loads the encoding, warms it up, then answers `{ id, texts }` with `{ id, counts }` (or `{ id,
 * error }`). Skill text is data, not a chat transcript: `<|endoftext|>` in a description is counted as the
 * characters it is (the tokenizer would otherwise throw on it), as tiktoken's `encode(text, disallowed_special=())`.
 */
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const plainText = { disallowedSpecial: new Set() };
let countTokens;
try {
  countTokens = require(workerData.module).countTokens;
  countTokens("warm up", plainText);
} catch (error) {
  countTokens = () => { throw error; };
}
parentPort.on("message", ({ id, texts }) => {
  try {
    parentPort.postMessage({ id, counts: texts.map((text) => countTokens(text, plainText)) });
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.message || error) });
  }
});
`;

const counters = new Map<TokenEncoding, TokenCounter>();

/** The counter of an encoding, its worker started on first use and shared by later builds in this process. */
export function tokenCounter(encoding: TokenEncoding): TokenCounter {
  let counter = counters.get(encoding);
  if (!counter) {
    counter = startWorker(encoding);
    counters.set(encoding, counter);
  }
  return counter;
}

function startWorker(encoding: TokenEncoding): TokenCounter {
  const module = createRequire(import.meta.url).resolve(`gpt-tokenizer/encoding/${encoding}`);
  const worker = new Worker(WORKER, { eval: true, workerData: { module } });
  const pending = new Map<number, { resolve(counts: number[]): void; reject(error: Error): void }>();
  let next = 0;
  // Idle, the worker does not keep the process alive; while a count is awaited, it must.
  worker.unref();
  const settle = (id: number) => {
    const request = pending.get(id)!;
    pending.delete(id);
    if (pending.size === 0) worker.unref();
    return request;
  };
  worker.on("message", ({ id, counts, error }: { id: number; counts?: number[]; error?: string }) => {
    const request = settle(id);
    if (counts) request.resolve(counts);
    else request.reject(new Error(`token counting (${encoding}) failed: ${error}`));
  });
  worker.on("error", (error) => {
    counters.delete(encoding);
    for (const id of [...pending.keys()]) settle(id).reject(error);
  });
  return {
    count(texts) {
      const id = next++;
      if (pending.size === 0) worker.ref();
      return new Promise((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, texts });
      });
    },
  };
}
