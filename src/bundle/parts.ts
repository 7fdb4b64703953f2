import { randomBytes } from "node:crypto";

/**
 * Text in parts (see `Part`) and the JSON writer that makes them: the manifest and the modules are JSON (or
 * JavaScript literals of it) with holes where the skill bodies and the output hashes go.
 */

/**
 * A piece of a bundle file's text: literal text, a skill body as a JSON string, or the sha256 of another file of
 * the bundle. Bodies are most of a bundle's bytes and appear in the manifest and in every module that holds the
 * skill: as parts, each is escaped once and never held inside a whole file's text (see `renderBundle`).
 */
export type Part = string | BodyPart | HashPart;

/** `Bundle.bodies[index]` as a JSON string literal; `ascii`: with non-ASCII characters \u-escaped (the modules). */
export interface BodyPart {
  body: number;
  ascii: boolean;
}

/** The sha256 of the bundle file at `sha256Of`, as a JSON string of 64 hex digits. */
export interface HashPart {
  sha256Of: string;
}

export type BundleFile =
  /** Bodies appear in increasing index order, each at most once. */
  | { path: string; parts: Part[] }
  /** The same text as the file at `sameAs` (a single agent's module is index.js): linked, not written twice. */
  | { path: string; sameAs: string };

/** Where a value's JSON text leaves room for a part of its own: a body or a hash. */
export class Slot {
  constructor(readonly part: BodyPart | HashPart) {}
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
 * as JavaScript orders them (keys that are array indexes first, in numeric order, as in any object), and each
 * `Slot` left as a part of its own. The text is JSON.stringify's: each slot goes in as a marker string that no
 * value can hold (it carries a random nonce), and the text is split at the markers.
 */
export function jsonParts(value: unknown, style: JsonStyle): Part[] {
  const slots: Slot["part"][] = [];
  let text = JSON.stringify(sortedCopy(value, slots), null, style.indent ? 2 : undefined) ?? "null";
  // In compact JSON a key is the only string that follows `{` or `,` and precedes `:` (a quote inside a string is escaped).
  if (style.literal) text = text.replace(/([{,])"__proto__":/g, '$1["__proto__"]:');
  const parts: Part[] = [];
  let start = 0;
  for (const match of text.matchAll(SLOT_MARKER)) {
    if (match.index > start) parts.push(text.slice(start, match.index));
    parts.push(slots[Number(match[1])]!);
    start = match.index + match[0].length;
  }
  if (start < text.length) parts.push(text.slice(start));
  return style.ascii ? parts.map((part) => (typeof part === "string" ? asciiOnly(part) : part)) : parts;
}

const NONCE = randomBytes(16).toString("hex");
/** What a slot is while JSON.stringify writes: a string holding U+0000 and the nonce, as JSON writes it. */
const slotMarker = (index: number) => `\u0000${NONCE}:${index}`;
const SLOT_MARKER = new RegExp(`"\\\\u0000${NONCE}:(\\d+)"`, "g");

/**
 * `value` with object keys in sorted order and slots turned into markers; an object or array whose keys are
 * already sorted and whose members need no change is kept as it is, so the bundle's own objects (built in order)
 * are not copied. An own `__proto__` key stays an own key.
 */
function sortedCopy(value: unknown, slots: Slot["part"][]): unknown {
  if (value instanceof Slot) return slotMarker(slots.push(value.part) - 1);
  if (typeof value !== "object" || value === null || value instanceof Date) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let index = 0; index < value.length; index++) {
      const item: unknown = value[index];
      const sorted = sortedCopy(item, slots);
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
    const member = sortedCopy(item, slots);
    if (member !== item && !copy) {
      copy = {};
      for (let earlier = 0; earlier < index; earlier++) setOwn(copy, keys[earlier]!, record[keys[earlier]!]);
    }
    if (copy) setOwn(copy, key, member);
  }
  return copy ?? value;
}

function setOwn(record: Record<string, unknown>, key: string, value: unknown): void {
  if (key === "__proto__") Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  else record[key] = value;
}

/** Characters JSON.stringify escapes in a string, besides `"`, `\` and line feed; and surrogates, lone ones of which it escapes. */
const RARE_IN_TEXT = /[\u0000-\u0009\u000b-\u001f\ud800-\udfff]/;

/**
 * `JSON.stringify(text)`, about twice as fast for what most text holds (Node 20's stringify escapes character by
 * character): a body of Markdown needs only quotes, backslashes and line feeds escaped.
 */
export function jsonString(text: string): string {
  if (RARE_IN_TEXT.test(text)) return JSON.stringify(text);
  return `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`;
}

/** JSON text with every character past ASCII \u-escaped; the byte-length test skips the scan for ASCII text. */
export function asciiOnly(jsonText: string): string {
  if (Buffer.byteLength(jsonText) === jsonText.length) return jsonText;
  return jsonText.replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/** JSON with object keys sorted at every depth, two-space indented, LF and a final newline. */
export function stableJson(value: unknown): string {
  return `${jsonParts(value, MANIFEST_STYLE).join("")}\n`;
}

