import { randomBytes } from "node:crypto";
import { escapeRuns } from "../compile/ascii.js";
import { defineOwn } from "../compile/validate.js";

/**
 * Text in parts (see `Part`) and the JSON writer that makes them: the manifest and the modules are JSON (or
 * JavaScript literals of it) with holes where the skill bodies and the output hashes go.
 */

/**
 * A piece of a bundle file's text: literal text, a skill body as a JSON string, or the sha256 of another file of
 * the bundle. Bodies are most of a bundle's bytes and appear in the manifest and in every module that holds the
 * skill: as parts, each is escaped once and never held inside a whole file's text (see `renderBundle`).
 */
export type Part = string | BodyPart | HashPart | EntryPart;

/** `Bundle.bodies[index]` as a JSON string literal; `ascii`: with non-ASCII characters \u-escaped (the modules). */
export interface BodyPart {
  body: number;
  ascii: boolean;
}

/** The sha256 of the bundle file at `sha256Of`, as a JSON string of 64 hex digits. */
export interface HashPart {
  sha256Of: string;
}

/**
 * One skill's whole entry in a file (its record in the manifest, its function in a module): made from `parts`,
 * which hold the body `body`, unless the file's earlier version holds an entry of the same `entry` key (a digest of
 * all an entry shows), which is then copied whole.
 */
export interface EntryPart {
  entry: string;
  body: number;
  parts: Iterable<Part>;
}

/**
 * An `Each` element that is a skill's entry: written as an `EntryPart` whose parts are the element's JSON, made by
 * `write` (a writer for its shape, given the depth of the elements: what `jsonParts` of the same value gives).
 * Without a key (no build cache will keep where the entry is, so no later bundle copies it), written as those parts.
 */
export class Entry {
  constructor(
    readonly key: string | undefined,
    readonly body: number,
    readonly write: (depth: number) => Iterable<Part>,
  ) {}
}

/**
 * An `Each` element written by a writer for its shape: its text at the depth of the elements, as `jsonParts` would
 * write it in the style of the file it is in. For many small values (an agent's rows of skills), which `jsonParts`
 * would walk and stringify one by one.
 */
export class Written {
  constructor(readonly write: (depth: number) => string) {}
}

export type BundleFile =
  /** Bodies appear in increasing index order, each at most once. */
  | { path: string; parts: Iterable<Part> }
  /** The same text as the file at `sameAs` (a single agent's module is index.js): linked, not written twice. */
  | { path: string; sameAs: string };

/**
 * Parts made afresh each time they are iterated: a file's text is made as it is written, a skill at a time,
 * never whole (a 10,000-skill manifest is ~13 MB without its bodies); and it can be written twice (a twin
 * compared on its own, see `compareBundle`).
 */
export function lazyParts(parts: () => Iterable<Part>): Iterable<Part> {
  return { [Symbol.iterator]: () => parts()[Symbol.iterator]() };
}

/** Where a value's JSON text leaves room for a part of its own: a body or a hash. */
export class Slot {
  constructor(readonly part: BodyPart | HashPart) {}
}

/** An array whose elements are made one at a time as its JSON is written (`map` of each item), not held at once. */
export class Each<T> {
  constructor(
    readonly items: readonly T[],
    readonly map: (item: T, index: number) => unknown,
  ) {}
}

/** How `jsonParts` writes: the manifest's layout, or the modules' compact JavaScript literals. */
interface JsonStyle {
  /** JSON.stringify's two-space layout, else no whitespace. */
  indent: boolean;
  /** Non-ASCII characters \u-escaped: a one-byte source is faster for the engine to load and charset-proof. */
  ascii: boolean;
  /** An own `__proto__` key written `["__proto__"]`: in an object literal, `"__proto__":` sets the prototype. */
  literal: boolean;
}

export const MANIFEST_STYLE: JsonStyle = { indent: true, ascii: false, literal: false };
export const MODULE_STYLE: JsonStyle = { indent: false, ascii: true, literal: true };

/**
 * `value` as JSON (or, in the module style, a JavaScript literal of it) with object keys sorted at every depth,
 * as JavaScript orders them (keys that are array indexes first, in numeric order, as in any object), each
 * `Slot` left as a part of its own and each `Each` written an element at a time. The text is JSON.stringify's:
 * each slot or `Each` goes in as a marker string that no value can hold (it carries a random nonce), and the
 * text is cut at the markers. `depth`: how deep in a document of this style the value sits (its indentation).
 */
export function* jsonParts(value: unknown, style: JsonStyle, depth = 0): Generator<Part, void, undefined> {
  const holes: Hole[] = [];
  // Nested `depth` arrays deep, JSON.stringify indents the value as the document around it would.
  let wrapped: unknown = sortedCopy(value, holes);
  for (let level = 0; level < depth; level++) wrapped = [wrapped];
  let text = JSON.stringify(wrapped, null, style.indent ? 2 : undefined) ?? "null";
  const { prefix, suffix } = wrapping(style.indent, depth);
  text = text.slice(prefix, text.length - suffix);
  // In compact JSON a key is the only string that follows `{` or `,` and precedes `:` (a quote inside a string is escaped).
  if (style.literal) text = text.replace(/([{,])"__proto__":/g, '$1["__proto__"]:');
  const textPart = style.ascii ? asciiOnly : (part: string) => part;
  let start = 0;
  for (let at = text.indexOf(MARKER_START); at >= 0; at = text.indexOf(MARKER_START, start)) {
    const end = text.indexOf('"', at + MARKER_START.length);
    const hole = holes[Number(text.slice(at + MARKER_START.length, end))]!;
    if (at > start) yield textPart(text.slice(start, at));
    start = end + 1;
    if (hole instanceof Each) yield* eachParts(hole, style, style.indent ? elementDepth(text, at, depth) : 0);
    else if (hole instanceof LongText) yield* longTextParts(hole.text, style);
    else yield hole;
  }
  if (start < text.length) yield textPart(start === 0 ? text : text.slice(start));
}

type Hole = Slot["part"] | Each<unknown> | LongText;

/**
 * A string of at least `LONG_TEXT` characters (an agent's prompt in a module): escaped by `jsonString`, faster than
 * JSON.stringify, and left out of the text that the `__proto__` and ASCII passes scan.
 */
class LongText {
  constructor(readonly text: string) {}
}

const LONG_TEXT = 1 << 16;

/**
 * A long string's JSON, a `LONG_TEXT` slice at a time: escaped whole, a prompt of megabytes made three copies of
 * itself as large, each in memory the collector frees only in a full collection. A slice never ends between the
 * two halves of a surrogate pair, so each is escaped as the whole text escapes it.
 */
function* longTextParts(text: string, style: JsonStyle): Generator<string, void, undefined> {
  yield '"';
  for (let start = 0; start < text.length; ) {
    const end = sliceEnd(text, start, LONG_TEXT);
    const { json, ascii } = jsonString(text.slice(start, end));
    yield (style.ascii ? (ascii ?? escapePastAscii(json)) : json).slice(1, -1);
    start = end;
  }
  yield '"';
}

/** Where a slice of `text` from `start`, at most `length` code units long, ends: never between the two halves of a surrogate pair. */
export function sliceEnd(text: string, start: number, length: number): number {
  const end = start + length;
  if (end >= text.length) return text.length;
  const last = text.charCodeAt(end - 1);
  return last >= 0xd800 && last <= 0xdbff && length > 1 ? end - 1 : end;
}

/** An `Each` as a JSON array whose elements are at `depth`, an element at a time. */
function* eachParts(each: Each<unknown>, style: JsonStyle, depth: number): Generator<Part, void, undefined> {
  if (each.items.length === 0) {
    yield "[]";
    return;
  }
  const newline = style.indent ? `\n${"  ".repeat(depth)}` : "";
  // Written elements (thousands of small rows) go out together, up to `WRITTEN_BATCH` characters a part.
  let written = "";
  for (let index = 0; index < each.items.length; index++) {
    const separator = `${index === 0 ? "[" : ","}${newline}`;
    const element = each.map(each.items[index]!, index);
    if (element instanceof Written) {
      written += separator + element.write(depth);
      if (written.length >= WRITTEN_BATCH) {
        yield written;
        written = "";
      }
      continue;
    }
    if (written !== "") {
      yield written;
      written = "";
    }
    yield separator;
    if (element instanceof Entry) {
      if (element.key === undefined) yield* element.write(depth);
      else yield { entry: element.key, body: element.body, parts: lazyParts(() => element.write(depth)) };
    } else yield* jsonParts(element, style, depth);
  }
  yield `${written}${style.indent ? `\n${"  ".repeat(depth - 1)}` : ""}]`;
}

const WRITTEN_BATCH = 1 << 16;

/**
 * The depth of the elements of an `Each` whose marker is at `at` in the indented text of a value at `depth`: one
 * deeper than the line holding the marker (later lines are indented absolutely; the first is the value's own).
 */
function elementDepth(text: string, at: number, depth: number): number {
  const lineStart = text.lastIndexOf("\n", at) + 1;
  if (lineStart === 0) return depth + 1;
  let spaces = 0;
  while (text.charCodeAt(lineStart + spaces) === 32) spaces++;
  return spaces / 2 + 1;
}

const wrappings = new Map<string, { prefix: number; suffix: number }>();
/** The lengths of the text before and after a value nested `depth` arrays deep. */
function wrapping(indent: boolean, depth: number): { prefix: number; suffix: number } {
  const key = `${indent}:${depth}`;
  let lengths = wrappings.get(key);
  if (!lengths) {
    let nested: unknown = 0;
    for (let level = 0; level < depth; level++) nested = [nested];
    const text = JSON.stringify(nested, null, indent ? 2 : undefined);
    lengths = { prefix: text.indexOf("0"), suffix: text.length - text.indexOf("0") - 1 };
    wrappings.set(key, lengths);
  }
  return lengths;
}

const NONCE = randomBytes(16).toString("hex");
/** What a hole is while JSON.stringify writes: a string holding U+0000 and the nonce, as JSON writes it. */
const holeMarker = (index: number) => `\u0000${NONCE}:${index}`;
const MARKER_START = `"\\u0000${NONCE}:`;

/** `value` (plain data, no slots) with object keys in sorted order at every depth, as `jsonParts` writes it. */
export function sortedData(value: unknown): unknown {
  return sortedCopy(value, undefined);
}

/**
 * JSON.stringify's two-space layout of `value` (plain data, keys sorted) for a place `depth` levels deep in a
 * document: its lines after the first indented as the document around it would indent them.
 */
export function indentedJson(value: unknown, depth: number): string {
  const text = JSON.stringify(value, null, 2);
  return depth === 0 || !text.includes("\n") ? text : text.replaceAll("\n", `\n${"  ".repeat(depth)}`);
}

/**
 * `value` with object keys in sorted order and, given `holes`, each slot, `Each` and long string turned into a
 * marker of the hole it is pushed as; an object or array whose keys are already sorted and whose members need no
 * change is kept as it is, so the bundle's own objects (built in order) are not copied. An own `__proto__` key
 * stays an own key.
 */
function sortedCopy(value: unknown, holes: Hole[] | undefined): unknown {
  if (holes && value instanceof Slot) return holeMarker(holes.push(value.part) - 1);
  if (holes && value instanceof Each) return holeMarker(holes.push(value) - 1);
  if (holes && typeof value === "string" && value.length >= LONG_TEXT) return holeMarker(holes.push(new LongText(value)) - 1);
  if (typeof value !== "object" || value === null || value instanceof Date) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      const sorted = sortedCopy(item, holes);
      if (sorted !== item && !copy) copy = value.slice(0, index);
      copy?.push(sorted);
    }
    return copy ?? value;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  let sorted = true;
  for (let index = 1; index < keys.length && sorted; index++) sorted = keys[index - 1]! < keys[index]!;
  let copy: Record<string, unknown> | undefined;
  if (!sorted) {
    keys.sort();
    copy = {};
  }
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    const item = record[key];
    const member = sortedCopy(item, holes);
    if (member !== item && !copy) {
      copy = {};
      for (let earlier = 0; earlier < index; earlier++) defineOwn(copy, keys[earlier]!, record[keys[earlier]!]);
    }
    if (copy) defineOwn(copy, key, member);
  }
  return copy ?? value;
}

/** Characters JSON.stringify escapes in a string, besides `"`, `\` and line feed; and surrogates, lone ones of which it escapes. */
const RARE_IN_TEXT = /[\u0000-\u0009\u000b-\u001f\ud800-\udfff]/;
/** The same in ASCII text (no surrogates there): each found by a string search, which is faster than that expression's scan. */
const ASCII_CONTROLS = Array.from({ length: 0x20 }, (_, code) => String.fromCharCode(code)).filter((char) => char !== "\n");

/**
 * `JSON.stringify(text)`, about twice as fast for what most text holds (Node 20's stringify escapes character by
 * character): a body of Markdown needs only quotes, backslashes and line feeds escaped. `ascii`: the same JSON, when
 * the text is ASCII (as `asciiOnly` would give it, without a scan of its own); else undefined.
 */
export function jsonString(text: string): { json: string; ascii: string | undefined } {
  const isAscii = Buffer.byteLength(text) === text.length;
  const rare = isAscii ? ASCII_CONTROLS.some((char) => text.includes(char)) : RARE_IN_TEXT.test(text);
  const json = rare ? JSON.stringify(text) : `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`;
  return { json, ascii: isAscii ? json : undefined };
}

/** A character JSON.stringify writes otherwise than as itself: a quote, a backslash, a control character; or a surrogate. */
const ESCAPED_IN_JSON = /["\\\u0000-\u001f\ud800-\udfff]/;

/**
 * `JSON.stringify(text)` of a short string (a path, a name, a hash, a description): twice as fast for one that holds
 * nothing to escape, as most do, since Node 20's stringify costs more to start than such a string takes to copy.
 */
export function quoted(text: string): string {
  return ESCAPED_IN_JSON.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/** Past this many nested arrays and objects, `plainJson` leaves a value to `JSON.stringify` (which also catches cycles). */
const MAX_PLAIN_NESTING = 64;

/**
 * `JSON.stringify(sortedData(value))`, or with `pad` the text `indentedJson(sortedData(value), depth)` gives (`pad` is
 * two spaces a level of `depth`), written in one walk for plain data: strings, finite numbers, booleans, null, arrays
 * with every index held, and objects of `Object.prototype` or none, neither with `toJSON`. Undefined for anything else,
 * which the generic path writes as it always has. Frontmatter's fields and extra keys and a skill's folder summary are
 * plain: this spares them a sorted copy, and the indent, which Node 20's stringify writes slowly.
 */
export function plainJson(value: unknown, pad?: string): string | undefined {
  return plainJsonAt(value, pad, 0);
}

/** `plainJson` of a value `nesting` arrays and objects deep. */
function plainJsonAt(value: unknown, pad: string | undefined, nesting: number): string | undefined {
  switch (typeof value) {
    case "string":
      return quoted(value);
    case "number":
      return Number.isFinite(value) ? JSON.stringify(value) : undefined;
    case "boolean":
      return value ? "true" : "false";
    case "object":
      break;
    default:
      return undefined;
  }
  if (value === null) return "null";
  if (nesting >= MAX_PLAIN_NESTING) return undefined;
  const inner = pad === undefined ? undefined : `${pad}  `;
  const open = inner === undefined ? "" : `\n${inner}`;
  const close = pad === undefined ? "" : `\n${pad}`;
  let text = "";
  // `toJSON`, which JSON.stringify calls, on an array too (its own, or its class's).
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") return undefined;
  if (Array.isArray(value)) {
    for (let index = 0; index < value.length; index++) {
      const item = index in value ? plainJsonAt(value[index], inner, nesting + 1) : undefined;
      if (item === undefined) return undefined;
      text += `${index === 0 ? "" : ","}${open}${item}`;
    }
    return text === "" ? "[]" : `[${text}${close}]`;
  }
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return undefined;
  const record = value as Record<string, unknown>;
  const keys = sortedKeys(record);
  for (let index = 0; index < keys.length; index++) {
    const key = keys[index]!;
    const item = plainJsonAt(record[key], inner, nesting + 1);
    if (item === undefined) return undefined;
    text += `${index === 0 ? "" : ","}${open}${quoted(key)}:${pad === undefined ? "" : " "}${item}`;
  }
  return text === "" ? "{}" : `{${text}${close}}`;
}

/** An object's keys in the order `sortedData` leaves them: array indices first, in numeric order (as every object keeps them), then the rest sorted. */
function sortedKeys(record: object): string[] {
  const keys = Object.keys(record);
  let indices = 0;
  while (indices < keys.length && isArrayIndex(keys[indices]!)) indices++;
  if (indices >= keys.length - 1) return keys;
  const rest = keys.slice(indices);
  let sorted = true;
  for (let index = 1; index < rest.length && sorted; index++) sorted = rest[index - 1]! < rest[index]!;
  return sorted ? keys : [...keys.slice(0, indices), ...rest.sort()];
}

/** An array index as a property key: the canonical decimal form of an integer below 2^32 - 1. */
function isArrayIndex(key: string): boolean {
  return /^(?:0|[1-9]\d{0,9})$/.test(key) && Number(key) < 4294967295;
}

/** JSON text with every character past ASCII \u-escaped; the byte-length test skips the scan for ASCII text. */
export function asciiOnly(jsonText: string): string {
  return Buffer.byteLength(jsonText) === jsonText.length ? jsonText : escapePastAscii(jsonText);
}

/** `asciiOnly` of JSON text known to hold characters past ASCII (`jsonString` gave it no ASCII form): DEL escaped too, as there. */
export function escapePastAscii(jsonText: string): string {
  return escapeRuns(jsonText, /[\u007f-\uffff]+/g);
}

/** JSON with object keys sorted at every depth, two-space indented, LF and a final newline. */
export function stableJson(value: unknown): string {
  return `${jsonText(value, MANIFEST_STYLE)}\n`;
}

/** `jsonParts` of a value without slots, as one string. */
export function jsonText(value: unknown, style: JsonStyle): string {
  let text = "";
  for (const part of jsonParts(value, style)) text += part as string;
  return text;
}

