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
  /**
   * Counts, in the background, pieces of text a later `count` is likely to hold (the catalogue entries of skills
   * as they are read), so that the count waits less. Only a speed-up: `count` is exact whatever was prefetched.
   */
  prefetch(text: string): void;
  /** Every piece `count` summed, with its tokens: what the build cache keeps for the next build. */
  readonly used: Map<string, number>;
}

/**
 * Where a count may be split: after a line break that ends one of the tokenizers' pre-tokenization pieces for
 * certain, so that the tokens of the whole are the sum of the tokens of the parts. That holds at the start of
 * a line whose leading blanks hold no line break and are followed by more than blanks, when the line does not
 * start with `/` (o200k's punctuation pieces take line breaks and slashes after them): no piece of either
 * pattern (o200k_base, cl100k_base) reaches across such a point, and the patterns look ahead, never back.
 * test/tokens.test.ts checks the rule against whole counts with random and real text.
 */
const CHUNK_END = /\n(?=[^\S\r\n]*[^\s/]|[^\S\r\n]+\/)/g;

/** `text` cut at every safe point (see CHUNK_END): a prompt's lines, mostly, each counted and remembered on its own. */
export function countableChunks(text: string): string[] {
  const chunks: string[] = [];
  let start = 0;
  for (const match of text.matchAll(CHUNK_END)) {
    const end = match.index + 1;
    chunks.push(text.slice(start, end));
    start = end;
  }
  if (start < text.length || text === "") chunks.push(text.slice(start));
  return chunks;
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

/** An encoding's worker, and the tokens of every piece of text it counted in this process (watch mode keeps them). */
interface ChunkCounter {
  known: Map<string, number>;
  /** Pieces sent and not yet answered, each with the answer it waits for. */
  inFlight: Map<string, Promise<void>>;
  /** Sends the pieces that are neither known nor in flight, as one message. */
  send(chunks: Iterable<string>): void;
  /** Awaits answers, keeping the process alive meanwhile: an idle worker (or one busy with prefetches) does not. */
  wait(answers: Iterable<Promise<void>>): Promise<void>;
}

const workers = new Map<TokenEncoding, ChunkCounter>();

/**
 * A build's counter in an encoding. The encoding's worker is started on first use and shared by later builds in
 * this process; `known` holds counts an earlier build left in the build cache, so text that did not change is
 * not counted again.
 */
export function tokenCounter(encoding: TokenEncoding, known: Iterable<readonly [string, number]> = []): TokenCounter {
  let chunks = workers.get(encoding);
  if (!chunks) {
    chunks = startWorker(encoding);
    workers.set(encoding, chunks);
  }
  for (const [chunk, tokens] of known) if (!chunks.known.has(chunk)) chunks.known.set(chunk, tokens);
  const worker = chunks;
  const used = new Map<string, number>();
  return {
    used,
    prefetch(text) {
      worker.send(countableChunks(text));
    },
    async count(texts) {
      const pieces = texts.map(countableChunks);
      worker.send(pieces.flat());
      const waiting = new Set<Promise<void>>();
      for (const chunk of pieces.flat()) {
        const answer = worker.inFlight.get(chunk);
        if (answer) waiting.add(answer);
      }
      if (waiting.size > 0) await worker.wait(waiting);
      return pieces.map((list) => {
        let total = 0;
        for (const chunk of list) {
          const tokens = worker.known.get(chunk)!;
          used.set(chunk, tokens);
          total += tokens;
        }
        return total;
      });
    },
  };
}

function startWorker(encoding: TokenEncoding): ChunkCounter {
  const module = createRequire(import.meta.url).resolve(`gpt-tokenizer/encoding/${encoding}`);
  const worker = new Worker(WORKER, { eval: true, workerData: { module } });
  const requests = new Map<number, { chunks: string[]; resolve(): void; reject(error: Error): void }>();
  const known = new Map<string, number>();
  const inFlight = new Map<string, Promise<void>>();
  let next = 0;
  let waiting = 0;
  worker.unref();
  const settle = (id: number) => {
    const request = requests.get(id)!;
    requests.delete(id);
    for (const chunk of request.chunks) inFlight.delete(chunk);
    return request;
  };
  worker.on("message", ({ id, counts, error }: { id: number; counts?: number[]; error?: string }) => {
    const request = settle(id);
    if (!counts) return request.reject(new Error(`token counting (${encoding}) failed: ${error}`));
    request.chunks.forEach((chunk, index) => known.set(chunk, counts[index]!));
    request.resolve();
  });
  worker.on("error", (error) => {
    workers.delete(encoding);
    for (const id of [...requests.keys()]) settle(id).reject(error);
  });
  return {
    known,
    inFlight,
    send(chunks) {
      const fresh = new Set<string>();
      for (const chunk of chunks) if (!known.has(chunk) && !inFlight.has(chunk)) fresh.add(chunk);
      if (fresh.size === 0) return;
      const id = next++;
      const texts = [...fresh];
      const answered = new Promise<void>((resolve, reject) => {
        requests.set(id, { chunks: texts, resolve, reject });
        worker.postMessage({ id, texts });
      });
      answered.catch(() => {}); // a failure is thrown where a count awaits it; a prefetch alone never does
      for (const chunk of texts) inFlight.set(chunk, answered);
    },
    async wait(answers) {
      if (waiting++ === 0) worker.ref();
      try {
        await Promise.all(answers);
      } finally {
        if (--waiting === 0) worker.unref();
      }
    },
  };
}
