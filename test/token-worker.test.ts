// A first count in a process: the token worker counts the text whole, in one pass, and remembers each line by the
// tokens that pass gave it. Its own file, so that no earlier count has left the worker knowing lines.
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { countTokens as o200k } from "gpt-tokenizer/encoding/o200k_base";
import { describe, expect, it } from "vitest";
import { LINE_END, tokenCounter } from "../src/compile/tokens.js";

const plain = { disallowedSpecial: new Set<string>() };
const lineDigest = (line: string) => createHash("sha256").update(line).digest("base64").slice(0, 11);

describe("the token worker's first count", () => {
  it("remembers each line of the text with the tokens it has alone", async () => {
    const files = (await readdir("skills", { recursive: true })).filter((file) => file.endsWith(".md"));
    const text = (await Promise.all(files.map((file) => readFile(join("skills", file), "utf8")))).join("\n\n");
    const counter = tokenCounter("o200k_base");
    expect(await counter.count([text])).toEqual([o200k(text, plain)]);
    const ends = [...[...text.matchAll(new RegExp(LINE_END, "g"))].map((match) => match.index + 1), text.length];
    const lines = ends.map((end, index) => text.slice(index === 0 ? 0 : ends[index - 1], end));
    expect(lines.length).toBeGreaterThan(500);
    const remembered = new Map(lines.map((line) => [lineDigest(line), o200k(line, plain)]));
    expect(new Map((await counter.used()).split(",").map((entry) => [entry.slice(0, 11), Number(entry.slice(11))]))).toEqual(remembered);
  });
});
