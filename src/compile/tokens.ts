import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/**
 * Real token counts (`tokens` in the config, `budget: { tokens }`), with gpt-tokenizer's BPE encodings. An
 * encoding is megabytes of ranks that take a second or more to load, so it is loaded only by a build that asks
 * for counts, never at start-up (the CLI bundle leaves the package out, see scripts/build-cli.mjs), and in a
 * worker thread: started before discovery, it loads while the build reads and checks the skills, and stays (not
 * keeping the process alive) for the next build of a watch session.
 *
 * The worker counts a text a line at a time and remembers each line's tokens, so that text counted before (by a
 * budget's bisection, by an earlier build through the build cache, by a prefetch) is not counted again. The
 * lines, and the remembered counts, stay in the worker: the build's own thread only sends texts and gets sums.
 */

export const TOKEN_ENCODINGS = ["o200k_base", "cl100k_base"] as const;
export type TokenEncoding = (typeof TOKEN_ENCODINGS)[number];
export const DEFAULT_TOKEN_ENCODING: TokenEncoding = "o200k_base";

export interface TokenCounter {
  /** The tokens of each text, in order. */
  count(texts: readonly string[]): Promise<number[]>;
  /**
   * Counts, in the background, text a later `count` is likely to hold (the catalogue entries of skills as they
   * are read), so that the count waits less. Only a speed-up: `count` is exact whatever was prefetched.
   */
  prefetch(text: string): void;
  /** The counts of every line the counts since the last call summed, as JSON (`{ line: tokens }`): what the build cache keeps. */
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
 * The worker: loads the encoding (at once when `eager`, else on the first line it does not know) and warms it
 * up; answers `{ id, texts }` with `{ id, counts }` (or `{ id, error }`) and `{ id, used: true }` with `{ id,
 * used }`; counts `{ prefetch }` silently. `known` is the JSON an earlier `used` returned; an entry that is not a
 * count is ignored (the build cache is only checked by its checksum). Skill text is data, not a chat transcript:
 * `<|endoftext|>` in a description is counted as the characters it is (the tokenizer would otherwise throw on
 * it), as tiktoken's `encode(text, disallowed_special=())`.
 */
const WORKER = `
const { parentPort, workerData } = require("node:worker_threads");
const plainText = { disallowedSpecial: new Set() };
const lineEnd = new RegExp(workerData.lineEnd, "g");
let countTokens;
const load = () => {
  try {
    countTokens = require(workerData.module).countTokens;
    countTokens("warm up", plainText);
  } catch (error) {
    countTokens = () => { throw error; };
  }
};
if (workerData.eager) load();
const known = new Map();
let used = new Map();
const remember = (json) => {
  let counts;
  try {
    counts = JSON.parse(json);
  } catch {
    return;
  }
  if (typeof counts !== "object" || counts === null) return;
  for (const [line, tokens] of Object.entries(counts)) if (Number.isSafeInteger(tokens) && tokens >= 0 && !known.has(line)) known.set(line, tokens);
};
const countLine = (line, record) => {
  let tokens = known.get(line);
  if (tokens === undefined) {
    if (!countTokens) load();
    tokens = countTokens(line, plainText);
    known.set(line, tokens);
  }
  if (record) used.set(line, tokens);
  return tokens;
};
const count = (text, record) => {
  let total = 0;
  let start = 0;
  for (const match of text.matchAll(lineEnd)) {
    total += countLine(text.slice(start, match.index + 1), record);
    start = match.index + 1;
  }
  return start < text.length || text === "" ? total + countLine(text.slice(start), record) : total;
};
parentPort.on("message", (message) => {
  if (message.known !== undefined) return remember(message.known);
  if (message.prefetch !== undefined) {
    try {
      count(message.prefetch, false);
    } catch {}
    return;
  }
  const { id } = message;
  if (message.used) {
    parentPort.postMessage({ id, used: JSON.stringify(Object.fromEntries(used)) });
    used = new Map();
    return;
  }
  try {
    parentPort.postMessage({ id, counts: message.texts.map((text) => count(text, true)) });
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
 * `known`: the JSON of an earlier build's `used()`, counts the worker need not make again.
 */
export function tokenCounter(encoding: TokenEncoding, known?: string): TokenCounter {
  let counter = counters.get(encoding);
  if (!counter) {
    // With no counts to reuse, the encoding is sure to be needed: it loads while the skills are read. With them,
    // only a line they lack loads it (a prefetch finds that early), and a rebuild of unchanged text never does.
    counter = startWorker(encoding, known === undefined);
    counters.set(encoding, counter);
  }
  if (known !== undefined) counter.remember(known);
  return counter;
}

function startWorker(encoding: TokenEncoding, eager: boolean): WorkerCounter {
  const module = createRequire(import.meta.url).resolve(`gpt-tokenizer/encoding/${encoding}`);
  const worker = new Worker(WORKER, { eval: true, workerData: { module, lineEnd: LINE_END, eager } });
  const pending = new Map<number, { resolve(answer: Answer): void; reject(error: Error): void }>();
  let next = 0;
  // Idle (or busy with prefetches), the worker does not keep the process alive; while an answer is awaited, it must.
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
    prefetch: (text) => worker.postMessage({ prefetch: text }),
    remember: (json) => worker.postMessage({ known: json }),
  };
}
