/**
 * Real token counts (`tokens` in the config, `budget: { tokens }`), with gpt-tokenizer's BPE encodings. An
 * encoding is megabytes of ranks that take about half a second to load, so it is imported only by a build that
 * asks for counts, never at start-up (the CLI bundle leaves the package out, see scripts/build-cli.mjs).
 */

export const TOKEN_ENCODINGS = ["o200k_base", "cl100k_base"] as const;
export type TokenEncoding = (typeof TOKEN_ENCODINGS)[number];
export const DEFAULT_TOKEN_ENCODING: TokenEncoding = "o200k_base";

/** Counts the tokens of a text. */
export type TokenCounter = (text: string) => number;

/**
 * Skill text is data, not a chat transcript: `<|endoftext|>` in a description is counted as the characters it is
 * (the tokenizer would otherwise throw on it), as `tiktoken`'s `encode(text, disallowed_special=())` does.
 */
const PLAIN_TEXT = { disallowedSpecial: new Set<string>() };

export async function loadTokenCounter(encoding: TokenEncoding): Promise<TokenCounter> {
  // One literal import per encoding: each is its own module of ranks.
  const { countTokens } = encoding === "o200k_base" ? await import("gpt-tokenizer/encoding/o200k_base") : await import("gpt-tokenizer/encoding/cl100k_base");
  return (text) => countTokens(text, PLAIN_TEXT);
}
