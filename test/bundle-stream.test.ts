import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import { build, BuildSession, buildInSession, check } from "../src/api.js";
import { agentRowJson, bundleOf, bundleTexts, filesJson, renderBundle, type Bundle, type EarlierFile, type Sink } from "../src/bundle/bundle.js";
import { inputLine } from "../src/bundle/module.js";
import { readCacheFile } from "../src/compile/cache-file.js";
import { BuildCache, type FilePlaces } from "../src/compile/cache.js";
import { loadConfig } from "../src/compile/config.js";
import { compareBundle } from "../src/bundle/emit.js";
import { asciiOnly, Each, escapePastAscii, indentedJson, jsonParts, jsonString, jsonText, MANIFEST_STYLE, MODULE_STYLE, plainJson, quoted, Slot, sortedData, stableJson, Written } from "../src/bundle/parts.js";
import { skillMd, tempDir, writeTree } from "./helpers.js";

/** The manifest's layout as it was first defined: JSON.stringify of a key-sorted copy, indented by 2. */
function sortedJson(value: unknown): string {
  const sort = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(sort);
    if (value && typeof value === "object") {
      const sorted: Record<string, unknown> = {};
      for (const key of Object.keys(value).sort()) Object.defineProperty(sorted, key, { value: sort((value as Record<string, unknown>)[key]), enumerable: true, writable: true, configurable: true });
      return sorted;
    }
    return value;
  };
  return JSON.stringify(sort(value), null, 2);
}

const jsonValue = fc.jsonValue({ maxDepth: 4 });
const withUndefined = fc.dictionary(fc.string(), fc.oneof(jsonValue, fc.constant(undefined)));

describe("JSON in parts", () => {
  it("writes exactly what JSON.stringify writes of the key-sorted value (manifest style)", () => {
    fc.assert(
      fc.property(fc.oneof(jsonValue, withUndefined, fc.array(fc.oneof(jsonValue, fc.constant(undefined)))), (value) => {
        expect(jsonText(value, MANIFEST_STYLE)).toBe(sortedJson(value));
        expect(stableJson(value)).toBe(`${sortedJson(value)}\n`);
      }),
      { numRuns: 300, seed: 11 },
    );
  });

  it("writes an ASCII JavaScript literal that evaluates to the same value (module style), __proto__ kept as a key", () => {
    fc.assert(
      fc.property(fc.oneof(jsonValue, fc.dictionary(fc.constantFrom("__proto__", "constructor", "a", "é"), jsonValue)), (value) => {
        const literal = jsonText(value, MODULE_STYLE);
        expect(/^[\x00-\x7e]*$/.test(literal)).toBe(true);
        const evaluated: unknown = new Function(`return (${literal});`)();
        expect(JSON.stringify(evaluated)).toBe(JSON.stringify(JSON.parse(sortedJson(value))));
      }),
      { numRuns: 300, seed: 12 },
    );
  });

  it("writes an Each as the array of its mapped items, at any depth, in both styles, an element at a time", () => {
    /** `value` with its arrays (those at even depths, or all) turned into an Each of the same elements. */
    const withEach = (value: unknown, all: boolean, depth = 0): unknown => {
      if (Array.isArray(value)) {
        const items = value.map((item) => withEach(item, all, depth + 1));
        return all || depth % 2 === 0 ? new Each(items, (item) => item) : items;
      }
      if (value && typeof value === "object") {
        const copy: Record<string, unknown> = {};
        for (const [key, item] of Object.entries(value)) Object.defineProperty(copy, key, { value: withEach(item, all, depth + 1), enumerable: true, writable: true, configurable: true });
        return copy;
      }
      return value;
    };
    fc.assert(
      fc.property(fc.oneof(jsonValue, fc.array(jsonValue), fc.dictionary(fc.string(), fc.array(jsonValue))), fc.boolean(), (value, all) => {
        const lazy = withEach(value, all);
        expect(jsonText(lazy, MANIFEST_STYLE)).toBe(jsonText(value, MANIFEST_STYLE));
        expect(jsonText(lazy, MODULE_STYLE)).toBe(jsonText(value, MODULE_STYLE));
      }),
      { numRuns: 500, seed: 14 },
    );
    const parts = [...jsonParts({ a: new Each([0, 1], (index) => ({ body: new Slot({ body: index, ascii: false }) })) }, MANIFEST_STYLE)];
    expect(parts).toEqual(['{\n  "a": ', "[\n    ", "{\n      \"body\": ", { body: 0, ascii: false }, "\n    }", ",\n    ", "{\n      \"body\": ", { body: 1, ascii: false }, "\n    }", "\n  ]", "\n}"]);
  });

  it("writes Written elements as their values would be written, many together, between elements of other kinds", () => {
    // Enough rows to pass the 64 KiB a part of Written elements holds, some of them values written by jsonParts.
    const rows = Array.from({ length: 3000 }, (_, index) => ({ file: `skills/skill-${index}/SKILL.md`, listed: index % 7 !== 0, mode: "available" }));
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 400 }), fc.constantFrom(0, 1, 2), (every, depth) => {
        const each = (style: typeof MANIFEST_STYLE) =>
          new Each(rows, (row, index) => (index % every === 0 ? row : new Written((at) => (style.indent ? indentedJson(row, at) : jsonText(row, style)))));
        for (const style of [MANIFEST_STYLE, MODULE_STYLE]) {
          let nested: unknown = { rows: each(style) };
          let plain: unknown = { rows };
          for (let level = 0; level < depth; level++) [nested, plain] = [{ at: nested }, { at: plain }];
          expect(jsonText(nested, style)).toBe(jsonText(plain, style));
        }
      }),
      { numRuns: 30, seed: 15 },
    );
  });

  it("orders keys as JavaScript objects do: array-index keys first, in numeric order, then the rest sorted", () => {
    expect(jsonText({ b: 1, 10: 2, 9: 3, a: 4 }, MODULE_STYLE)).toBe('{"9":3,"10":2,"a":4,"b":1}');
  });

  it("writes strings of 64 KiB and more (an agent's prompt) as it writes short ones, in both styles", () => {
    const unit = fc.constantFrom("\n", '"', "\\", "\t", "\u0000", "\u2028", "\ud800", "é", "😀", "a", '{"__proto__":1}');
    const long = fc.string({ unit, minLength: 1, maxLength: 8 }).map((text) => text.repeat(Math.ceil((1 << 16) / text.length) + 1));
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom("__proto__", "prompt", "a"), fc.oneof(long, fc.array(long, { maxLength: 2 }), jsonValue)), (value) => {
        expect(jsonText(value, MANIFEST_STYLE)).toBe(sortedJson(value));
        const literal = jsonText(value, MODULE_STYLE);
        expect(/^[\x00-\x7e]*$/.test(literal)).toBe(true);
        const evaluated: unknown = new Function(`return (${literal});`)();
        expect(JSON.stringify(evaluated)).toBe(JSON.stringify(JSON.parse(sortedJson(value))));
      }),
      { numRuns: 40, seed: 14 },
    );
  });

  it("jsonString is JSON.stringify of any text, line breaks, quotes, control characters and lone surrogates included; for ASCII text, its ASCII form too", () => {
    const unit = fc.constantFrom("\n", '"', "\\", "\t", "\r", "\u0000", "\u001f", "\u007f", "\u2028", "\ud800", "\udc00", "é", "😀", "a");
    const ascii = fc.oneof(fc.constantFrom("\n", '"', "\\", "\t", "\r", "\u0000", "\u001f", "\u007f", "a"), fc.integer({ min: 0, max: 0x7f }).map((code) => String.fromCharCode(code)));
    const text = fc.oneof(fc.string({ unit: fc.oneof(unit, fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code))) }), fc.string({ unit: ascii }));
    fc.assert(
      fc.property(text, (value) => {
        const { json, ascii } = jsonString(value);
        expect(json).toBe(JSON.stringify(value));
        expect(ascii).toBe(/^[\u0000-\u007f]*$/.test(value) ? json : undefined);
      }),
      { numRuns: 3000, seed: 13 },
    );
  });

  it("quoted is JSON.stringify of any string: plain text, and text with quotes, backslashes, control characters or surrogates, paired or lone", () => {
    const unit = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom("a", "/", ".", "-", " ", "é", "\u007f", "\u2028") },
      { weight: 1, arbitrary: fc.constantFrom('"', "\\", "\n", "\t", "\u0000", "\u001f", "\ud800", "\udc00", "😀") },
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)) },
    );
    fc.assert(
      fc.property(fc.string({ unit }), (value) => {
        expect(quoted(value)).toBe(JSON.stringify(value));
      }),
      { numRuns: 3000, seed: 15 },
    );
  });

  /** An array whose `toJSON` JSON.stringify calls: what a config's schema could make a frontmatter field. */
  class ArrayWithToJson extends Array<string> {
    toJSON(): string {
      return "l";
    }
  }

  it("plainJson writes what JSON.stringify writes of the sorted copy, compact or indented at any depth, or leaves the value to it", () => {
    const key = fc.oneof(fc.constantFrom("a", "b", "B", "__proto__", "constructor", "toJSON", "0", "2", "10", "01", "-1", "1.5", "4294967294", "4294967295", "é", ""), fc.string());
    const leaf = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constantFrom(undefined, -0, Number.NaN, Infinity, 1e21, 5e-7));
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: "small", withCrossShrink: true }, leaf, tie("array"), tie("record"), tie("odd")),
      array: fc.oneof(fc.array(tie("value"), { maxLength: 4 }), fc.sparseArray(tie("value"), { maxLength: 4 })),
      record: fc.tuple(fc.array(fc.tuple(key, tie("value")), { maxLength: 5 }), fc.boolean()).map(([entries, bare]) => {
        const record: Record<string, unknown> = bare ? Object.create(null) : {};
        for (const [name, item] of entries) Object.defineProperty(record, name, { value: item, enumerable: true, writable: true, configurable: true });
        return record;
      }),
      odd: fc.constantFrom(new Date(0), new String("x"), { toJSON: () => "j" }, Object.assign(["a"], { toJSON: () => "k" }), new ArrayWithToJson(), Object.create({ inherited: 1 }), () => 1, 10n),
    }));
    fc.assert(
      fc.property(value, fc.nat(3), (input, depth) => {
        const generic = (write: () => string | undefined): string | undefined => {
          try {
            return write();
          } catch {
            return "(throws)";
          }
        };
        const compact = plainJson(input);
        if (compact !== undefined) expect(compact).toBe(generic(() => JSON.stringify(sortedData(input))));
        const indented = plainJson(input, "  ".repeat(depth));
        if (indented !== undefined) expect(indented).toBe(generic(() => indentedJson(sortedData(input), depth)));
      }),
      { numRuns: 3000, seed: 16 },
    );
    // Plain data is written by it, whatever its keys.
    fc.assert(
      fc.property(fc.jsonValue(), fc.nat(3), (input, depth) => {
        expect(plainJson(input)).toBe(JSON.stringify(sortedData(input)));
        expect(plainJson(input, "  ".repeat(depth))).toBe(indentedJson(sortedData(input), depth));
      }),
      { numRuns: 2000, seed: 17 },
    );
  });

  it("asciiOnly and escapePastAscii escape each character past ASCII as \\u and four hex digits (DEL too, in text past ASCII), and nothing else", () => {
    const unit = fc.oneof(fc.constantFrom("a", '"', "\\", "\u007e", "\u007f", "\u00ff", "\u0100", "\u0fff", "\u1000", "\ud83d", "\ude00", "\uffff"), fc.integer({ min: 0, max: 0xffff }).map((code) => String.fromCharCode(code)));
    fc.assert(
      fc.property(fc.string({ unit }), (value) => {
        const json = JSON.stringify(value);
        const escaped = asciiOnly(json);
        const oneByOne = json.replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
        expect(escaped).toBe(/^[\x00-\x7f]*$/.test(json) ? json : oneByOne);
        expect(escapePastAscii(json)).toBe(oneByOne);
        expect(/^[\x00-\x7f]*$/.test(escaped)).toBe(true);
        expect(JSON.parse(escaped)).toBe(value);
      }),
      { numRuns: 3000, seed: 15 },
    );
  });

  it("filesJson writes a skill's files as indentedJson writes them, at any depth", () => {
    const file = fc.record({ path: fc.string({ unit: fc.constantFrom("a", "/", '"', "\\", "é", "😀", "\u0000", "\n", " ") }), sha256: fc.stringMatching(/^[0-9a-f]{0,64}$/), size: fc.oneof(fc.nat(), fc.constant(0), fc.constant(2 ** 40)) });
    fc.assert(
      fc.property(fc.array(file, { maxLength: 4 }), fc.nat(4), (files, depth) => {
        expect(filesJson(files, depth)).toBe(indentedJson(sortedData(files), depth));
      }),
      { numRuns: 2000, seed: 16 },
    );
  });

  it("inputLine writes a skill's line of the inputs hash as JSON.stringify writes its file, hash and files' paths and hashes", () => {
    const text = fc.string({ unit: fc.constantFrom("a", "/", '"', "\\", "é", "😀", "\u0000", "\n", "\ud800", " ") });
    const file = fc.record({ path: text, sha256: fc.stringMatching(/^[0-9a-f]{0,64}$/), size: fc.nat() });
    fc.assert(
      fc.property(text, fc.stringMatching(/^[0-9a-f]{64}$/), fc.array(file, { maxLength: 4 }), (path, hash, files) => {
        expect(inputLine({ file: path, hash, files })).toBe(`\n${JSON.stringify([path, hash, files.map((entry) => [entry.path, entry.sha256])])}`);
      }),
    );
  });

  it("agentRowJson writes an agent's row as indentedJson writes the object of its defined fields, at any depth", () => {
    const text = fc.string({ unit: fc.constantFrom("a", "/", '"', "\\", "é", "😀", "\u0000", "\n") });
    const row = fc.record({
      baseDir: fc.option(text, { nil: undefined }),
      file: text,
      listed: fc.boolean(),
      location: fc.option(text, { nil: undefined }),
      mode: fc.constantFrom("available", "inline"),
      name: text,
      source: fc.nat(20),
      staged: fc.option(text, { nil: undefined }),
    });
    fc.assert(
      fc.property(row, fc.nat(4), (value, depth) => {
        const defined = Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined));
        expect(agentRowJson(value, depth)).toBe(indentedJson(sortedData(defined), depth));
      }),
      { numRuns: 2000, seed: 17 },
    );
  });

  it("cannot be fooled by a value that looks like a slot's marker", () => {
    const forged = { a: "\u0000", b: new Slot({ body: 0, ascii: false }), c: "\u0000x:0" };
    expect([...jsonParts(forged, MANIFEST_STYLE)]).toEqual(['{\n  "a": "\\u0000",\n  "b": ', { body: 0, ascii: false }, ',\n  "c": "\\u0000x:0"\n}']);
  });

  it("leaves each slot as a part of its own, between the text around it", () => {
    const parts = [...jsonParts({ b: new Slot({ body: 0, ascii: false }), a: 1, c: [new Slot({ sha256Of: "x.js" })] }, MODULE_STYLE)];
    expect(parts).toEqual(['{"a":1,"b":', { body: 0, ascii: false }, ',"c":[', { sha256Of: "x.js" }, "]}"]);
  });
});

/** Bundle bodies of these texts, from SKILL.md files hashed `h0`, `h1`, …; `read` counts the bodies read. */
function bodies(texts: string[], read: string[] = []): Bundle["bodies"] {
  return texts.map((text, index) => ({ hash: `h${index}`, text: () => (read.push(text), text) }));
}

/** Sinks that keep each file's bytes in memory. */
function memorySinks(): { files: Map<string, Buffer>; open: (path: string) => Sink } {
  const files = new Map<string, Buffer>();
  return {
    files,
    open: (path) => {
      let bytes = Buffer.alloc(0);
      return {
        write: (chunk) => void (bytes = Buffer.concat([bytes, chunk])),
        reserve: (chunk) => void (bytes = Buffer.concat([bytes, chunk])),
        patch: (offset, chunk) => void bytes.set(chunk, offset),
        end: () => void files.set(path, bytes),
      };
    },
  };
}

/** An earlier file read from `bytes`, holding its skills at `places`. */
const earlierFile = (bytes: Buffer, places: FilePlaces): EarlierFile => ({
  places,
  read: (into, at, length, position) => position + length <= bytes.byteLength && (into.set(bytes.subarray(position, position + length), at), true),
  readAt: (into, position) => (position < bytes.byteLength ? bytes.copy(into, 0, position, Math.min(bytes.byteLength, position + into.byteLength)) : 0),
});

describe("renderBundle", () => {
  const bundle: Bundle = {
    bodies: bodies(["first\n\"body\"", "sécond"]),
    keyed: true,
    files: [
      { path: "one.js", parts: ["[", { body: 0, ascii: true }, ",", { body: 1, ascii: true }, "]"] },
      { path: "two.js", sameAs: "one.js" },
      { path: "only-second.json", parts: [{ body: 1, ascii: false }] },
      { path: "manifest.json", parts: ["{", { sha256Of: "one.js" }, ":", { sha256Of: "two.js" }, ",", { body: 0, ascii: false }, "}"] },
    ],
  };

  it("escapes bodies into every file that holds them, patches hashes in, and links twins", () => {
    const texts = bundleTexts(bundle);
    const one = '["first\\n\\"body\\"","s\\u00e9cond"]';
    expect(texts.get("one.js")).toBe(one);
    expect(texts.get("two.js")).toBe(one);
    expect(texts.get("only-second.json")).toBe('"sécond"');
    const hash = (text: string) => createHash("sha256").update(text).digest("hex");
    expect(texts.get("manifest.json")).toBe(`{"${hash(one)}":"${hash(one)}","first\\n\\"body\\""}`);
  });

  it("writes text longer than its chunks (a prompt of megabytes) as UTF-8 whole, pairs of surrogates across every cut included", () => {
    // Runs of 1-, 2-, 3- and 4-byte characters and lone surrogates, long enough to cross the 256 KiB chunks at every offset.
    const unit = fc.constantFrom("a", "é", "€", "😀", "\ud800", "\udc00", "\n");
    fc.assert(
      fc.property(fc.string({ unit, minLength: 1, maxLength: 9 }), fc.integer({ min: 0, max: 7 }), (pattern, lead) => {
        const text = "x".repeat(lead) + pattern.repeat(Math.ceil((1 << 19) / pattern.length));
        const texts = bundleTexts({ bodies: [], keyed: false, files: [{ path: "prompt.txt", parts: ["<", text, ">"] }, { path: "manifest.json", parts: [{ sha256Of: "prompt.txt" }] }] });
        const expected = Buffer.from(`<${text}>`, "utf8");
        expect(Buffer.from(texts.get("prompt.txt")!, "utf8").equals(expected)).toBe(true);
        expect(texts.get("manifest.json")).toBe(`"${createHash("sha256").update(expected).digest("hex")}"`);
      }),
      { numRuns: 30, seed: 3 },
    );
  });

  it("refuses a file whose bodies are out of order, a hash of a file that holds hashes, and one of a later file", () => {
    const recording = (): Sink => ({ write() {}, reserve() {}, patch() {}, end() {} });
    expect(() => renderBundle({ bodies: bodies(["a", "b"]), keyed: false, files: [{ path: "x", parts: [{ body: 1, ascii: false }, { body: 0, ascii: false }] }] }, recording, () => {})).toThrow(/out of order/);
    expect(() =>
      renderBundle(
        {
          bodies: [],
          keyed: false,
          files: [
            { path: "a", parts: [{ sha256Of: "b" }] },
            { path: "b", parts: [{ sha256Of: "a" }] },
          ],
        },
        recording,
        () => {},
      ),
    ).toThrow(/cannot be hashed/);
    // A file comes after any file it takes a hash of: the last one is not hashed (the manifest, in a bundle).
    expect(() => renderBundle({ bodies: [], keyed: false, files: [{ path: "a", parts: [{ sha256Of: "b" }] }, { path: "b", parts: ["text"] }] }, recording, () => {})).toThrow(/cannot be hashed/);
  });

  it("says where each file holds each body, and copies a body an earlier file holds instead of reading it again", () => {
    const first = memorySinks();
    const places = renderBundle(bundle, first.open, () => {});
    const one = first.files.get("one.js")!;
    const [offset, length] = places.get("one.js")!.bodies.h1!;
    expect(one.subarray(offset, offset + length).toString()).toBe('"s\\u00e9cond"');
    expect(places.get("only-second.json")).toEqual({ entries: {}, bodies: { h1: [0, Buffer.byteLength('"sécond"')] } });
    expect(places.has("two.js")).toBe(false); // a twin is linked, not written

    // The second body changed (a SKILL.md of another hash); the first is copied from the earlier one.js.
    const read: string[] = [];
    const next: Bundle = { ...bundle, bodies: [{ hash: "h0", text: () => (read.push("first"), "first\n\"body\"") }, { hash: "h9", text: () => (read.push("new"), "new") }] };
    const second = memorySinks();
    renderBundle(next, second.open, () => {}, (path) => (path === "one.js" ? earlierFile(one, places.get("one.js")!) : undefined));
    expect(second.files.get("one.js")!.toString()).toBe('["first\\n\\"body\\"","new"]');
    // Read once, for the manifest (which has no earlier file here), not for one.js; the new body once.
    expect(read).toEqual(["first", "new"]);
    expect(second.files.get("manifest.json")!.toString()).toBe(bundleTexts(next).get("manifest.json"));
  });

  it("gives the same bytes with or without an earlier bundle to copy from, whatever the skills and whichever changed", () => {
    // A manifest-like file (bodies as they are) and a module-like one (ASCII only), each skill an entry whose text
    // shows its metadata (`meta`, part of its key) and its body; and a file of bare bodies.
    type Skill = { meta: string; hash: string; text: string };
    const bundleOf = (skills: Skill[]): Bundle => {
      const entry = (index: number, ascii: boolean, open: string, close: string) => ({
        entry: `${ascii}:${index}:${skills[index]!.meta}:${skills[index]!.hash}`,
        body: index,
        parts: [`${open}${JSON.stringify(skills[index]!.meta)},`, { body: index, ascii }, close],
      });
      return {
        bodies: skills.map(({ hash, text }) => ({ hash, text: () => text })),
        keyed: true,
        files: [
          { path: "m.json", parts: skills.flatMap((_, index) => [entry(index, false, `{"n":${index},"m":`, "}"), "\n"]) },
          { path: "m.js", parts: skills.flatMap((_, index) => [entry(index, true, `f(${index},`, ");")]) },
          { path: "b.json", parts: skills.map((_, body) => ({ body, ascii: false })) },
          // Hashes of the others, taken while copying as when writing afresh (see prefix-hash.ts).
          { path: "h.json", parts: [{ sha256Of: "m.json" }, { sha256Of: "m.js" }, { sha256Of: "b.json" }] },
        ],
      };
    };
    const text = fc.string({ unit: fc.constantFrom("a", "é", "𝄞", '"', "\\", "\n", "\u0001", "\ud800", "*/", " ") });
    const change = fc.record({ text, edited: text, bodyChanged: fc.boolean(), meta: fc.constantFrom("a", "b"), metaChanged: fc.boolean() });
    fc.assert(
      fc.property(fc.array(change, { minLength: 1, maxLength: 12 }), (changes) => {
        const before = changes.map(({ text, meta }, index): Skill => ({ meta, hash: `h${index}`, text }));
        const after = changes.map(({ text, edited, bodyChanged, meta, metaChanged }, index): Skill => ({
          meta: metaChanged ? `${meta}!` : meta,
          hash: bodyChanged ? `e${index}` : `h${index}`,
          text: bodyChanged ? edited : text,
        }));
        const first = memorySinks();
        const places = renderBundle(bundleOf(before), first.open, () => {});
        const read: string[] = [];
        const counted = bundleOf(after);
        counted.bodies = counted.bodies.map((body) => ({ hash: body.hash, text: () => (read.push(body.hash), body.text()) }));
        const copied = memorySinks();
        const copiedPlaces = renderBundle(counted, copied.open, () => {}, (path) => earlierFile(first.files.get(path)!, places.get(path)!));
        const fresh = memorySinks();
        const freshPlaces = renderBundle(bundleOf(after), fresh.open, () => {});
        for (const path of ["m.json", "m.js", "b.json", "h.json"]) expect(copied.files.get(path)!.equals(fresh.files.get(path)!)).toBe(true);
        // Where the copies say each skill is, is where a fresh bundle has it.
        expect(copiedPlaces).toEqual(freshPlaces);
        // Only the changed bodies were read (once, for all three files).
        expect(read).toEqual(changes.flatMap(({ bodyChanged }, index) => (bodyChanged ? [`e${index}`] : [])));
      }),
    );
  });

  it("writes a body from its text when the earlier file cannot give all of its bytes", () => {
    const first = memorySinks();
    const places = renderBundle(bundle, first.open, () => {});
    const truncated = first.files.get("one.js")!.subarray(0, 5);
    const second = memorySinks();
    renderBundle(bundle, second.open, () => {}, (path) => (path === "one.js" ? earlierFile(truncated, places.get("one.js")!) : undefined));
    expect(second.files.get("one.js")!.equals(first.files.get("one.js")!)).toBe(true);
  });
});

describe("the bundle on disk", () => {
  it("names each skill's entries only for a build cache: the same bytes either way, and only then are the entries' and bodies' places recorded", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] }, review: { skills: [{ root: "skills" }], files: "embed" } } }),
      "skills/alpha/SKILL.md": skillMd("alpha", "Alpha things. Use for alpha.", "# Alpha\n\nSee [the guide](references/guide.md)."),
      "skills/alpha/references/guide.md": "# Guide\n",
      "skills/beta/SKILL.md": skillMd("beta"),
    });
    const result = await check({ cwd: dir });
    const keyed = memorySinks();
    const keyedPlaces = renderBundle(bundleOf(result, { keyed: true }), keyed.open, () => {});
    const plain = memorySinks();
    const plainPlaces = renderBundle(bundleOf(result), plain.open, () => {});
    expect([...plain.files.keys()].sort()).toEqual([...keyed.files.keys()].sort());
    for (const [path, bytes] of keyed.files) expect(plain.files.get(path)!.equals(bytes)).toBe(true);
    const entries = (places: Map<string, FilePlaces>) => Object.fromEntries([...places].map(([path, held]) => [path, Object.keys(held.entries).length]));
    expect(entries(keyedPlaces)).toEqual({ "manifest.json": 2, "index.js": 2, "agents/main.js": 2, "agents/review.js": 2 });
    // Nor, without a build cache to keep them, where the bodies are.
    expect(plainPlaces.size).toBe(0);

    // A build that keeps a build cache records them, for the next build to copy them from this bundle.
    const recorded = async () => {
      const cache = readCacheFile(join(dir, "node_modules/.cache/skillbake/skills.config.json.json"), 2, BuildCache.keyOf(await loadConfig(undefined, dir))) as { bundle?: { places: Record<string, FilePlaces> } } | undefined;
      return cache?.bundle && entries(new Map(Object.entries(cache.bundle.places)));
    };
    await build({ cwd: dir });
    expect(await recorded()).toEqual({ "manifest.json": 2, "index.js": 2, "agents/main.js": 2, "agents/review.js": 2 });
  });

  it("makes a served skill's embedded files one at a time, as the module is written, not all of the skill's at once", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }], files: "embed" } } }),
      "skills/alpha/SKILL.md": skillMd("alpha"),
      "skills/alpha/references/a.md": "FIRST FILE\n",
      "skills/alpha/references/b.md": "SECOND FILE\n",
    });
    const result = await check({ cwd: dir });
    const module = bundleOf(result).files.find((file) => file.path === "index.js")!;
    const written: string[] = [];
    const write = () => {
      for (const part of "parts" in module ? module.parts : []) {
        if (typeof part !== "string") continue;
        written.push(part);
        // The second file is read when its turn comes: gone by then, the build stops there.
        if (part.includes("FIRST FILE")) rmSync(join(dir, "skills/alpha/references/b.md"));
      }
    };
    expect(write).toThrow(/references\/b\.md/);
    expect(written.join("")).toContain("FIRST FILE");
  });

  it("records the module's sha256 in a watching session, where its hash resumes past the part of the module that is as it was", async () => {
    // Twelve skills of ~200 KB: a module of ~2.4 MB, hashed past several of the states a session keeps (one a MiB).
    const names = Array.from({ length: 12 }, (_, index) => `skill-${String(index).padStart(2, "0")}`);
    const bodyOf = (name: string, edit = "") => `# ${name}\n\n${`Step of ${name}: do the thing.\n`.repeat(6000)}${edit}`;
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] }, review: { skills: [{ root: "skills" }] } } }),
      ...Object.fromEntries(names.map((name) => [`skills/${name}/SKILL.md`, skillMd(name, undefined, bodyOf(name))])),
    });
    const session = new BuildSession({ watched: true });
    const out = join(dir, "dist", "skills");
    const expectHashes = async () => {
      const manifest = JSON.parse(await readFile(join(out, "manifest.json"), "utf8"));
      for (const path of ["index.js", "agents/main.js", "agents/review.js"]) expect(manifest.hashes.outputs[path]).toBe(createHash("sha256").update(await readFile(join(out, path))).digest("hex"));
    };
    await buildInSession({ cwd: dir }, session);
    await expectHashes();
    // Every byte the build feeds any hash (each skill's files, cache keys, the outputs).
    const update = vi.spyOn(Object.getPrototypeOf(createHash("sha256")) as { update(data: string | Uint8Array): unknown }, "update");
    const bytesHashed = () => update.mock.calls.reduce((total, [data]) => total + (typeof data === "string" ? Buffer.byteLength(data) : data.byteLength), 0);
    // Edits early, in the middle and last in the module; one that leaves it as long as it was; and none.
    for (const [name, edit] of [["skill-01", "More.\n"], ["skill-06", "More, in the middle.\n"], ["skill-11", "Last.\n"], ["skill-06", "More, in the MIDDLE.\n"], ["", ""]] as const) {
      if (name) {
        const file = join(dir, "skills", name, "SKILL.md");
        await writeFile(file, skillMd(name, undefined, bodyOf(name, edit)));
        session.noteChanges([file]);
      }
      await session.afterReport();
      update.mockClear();
      await buildInSession({ cwd: dir }, session);
      const hashed = bytesHashed();
      await expectHashes();
      // The last skill edited: each module's hash resumes from its last state before the edit, not from its start.
      if (name === "skill-11") {
        const sizes = await Promise.all(["index.js", "agents/main.js", "agents/review.js"].map(async (path) => (await stat(join(out, path))).size));
        expect(hashed).toBeLessThan(sizes.reduce((total, size) => total + size) / 2);
      }
    }
    update.mockRestore();
    expect((await stat(join(out, "index.js"))).size).toBeGreaterThan(2 * 2 ** 20);
  });

  it("is written by streaming: a single agent's module is index.js linked, and --check compares hashes and bodies in place", async () => {
    const dir = await tempDir();
    await writeTree(dir, {
      "skills.config.json": JSON.stringify({ agents: { main: { skills: [{ root: "skills" }] } } }),
      "skills/alpha/SKILL.md": skillMd("alpha", "Alpha things. Use for alpha.", "# Alpha\n\nNon-ASCII: é ✓ 𝄞, quotes \" and \\ backslash."),
      "skills/beta/SKILL.md": skillMd("beta"),
    });
    const result = await build({ cwd: dir });
    expect(result.written).toBe(true);
    const out = join(dir, "dist", "skills");
    expect((await stat(join(out, "agents", "main.js"))).ino).toBe((await stat(join(out, "index.js"))).ino);
    const manifest = JSON.parse(await readFile(join(out, "manifest.json"), "utf8"));
    expect(manifest.skills.map((skill: { body: string }) => skill.body)[0]).toBe("# Alpha\n\nNon-ASCII: é ✓ 𝄞, quotes \" and \\ backslash.");
    const index = await readFile(join(out, "index.js"));
    expect(index.every((byte) => byte < 0x80)).toBe(true);
    expect(manifest.hashes.outputs["index.js"]).toBe(createHash("sha256").update(index).digest("hex"));

    const fresh = bundleOf(result);
    expect([...compareBundle(out, fresh).values()].every((state) => state === "same")).toBe(true);
    // A hash in the manifest changed by hand: only the manifest differs.
    const text = await readFile(join(out, "manifest.json"), "utf8");
    const hash = manifest.hashes.outputs["prompts/main.txt"] as string;
    await writeFile(join(out, "manifest.json"), text.replace(hash, hash.replace(/^./, (c) => (c === "0" ? "1" : "0"))));
    expect(Object.fromEntries([...compareBundle(out, fresh)].filter(([, state]) => state !== "same"))).toEqual({ "manifest.json": "changed" });
    // A body changed by hand in the module: the module and its linked twin differ, the manifest does not.
    await writeFile(join(out, "manifest.json"), text);
    await writeFile(join(out, "index.js"), (await readFile(join(out, "index.js"), "utf8")).replace("backslash.", "backslash!"));
    expect(Object.fromEntries([...compareBundle(out, fresh)].filter(([, state]) => state !== "same"))).toEqual({ "agents/main.js": "changed", "index.js": "changed" });
  });
});
