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
 * `value` as JSON (or, in the module style, a JavaScript literal of it), object keys sorted at every depth, with
 * each `Slot` left as its part. In the manifest style the text is exactly `JSON.stringify` of the key-sorted value
 * with an indent of 2.
 */
export function jsonParts(value: unknown, style: JsonStyle): Part[] {
  const parts: Part[] = [];
  let text = "";
  const newline = (indent: string) => (style.indent ? `\n${indent}` : "");
  const visit = (value: unknown, indent: string): void => {
    if (value instanceof Slot) {
      if (text !== "") parts.push(text);
      parts.push(value.part);
      text = "";
    } else if (Array.isArray(value)) {
      if (value.length === 0) {
        text += "[]";
        return;
      }
      const inner = `${indent}  `;
      text += "[";
      value.forEach((item, index) => {
        text += `${index === 0 ? "" : ","}${newline(inner)}`;
        visit(isOmitted(item) ? null : item, inner);
      });
      text += `${newline(indent)}]`;
    } else if (typeof value === "object" && value !== null && !(value instanceof Date)) {
      const record = value as Record<string, unknown>;
      const keys = Object.keys(record)
        .filter((key) => !isOmitted(record[key]))
        .sort();
      if (keys.length === 0) {
        text += "{}";
        return;
      }
      const inner = `${indent}  `;
      text += "{";
      keys.forEach((key, index) => {
        const name = style.literal && key === "__proto__" ? `["__proto__"]` : json(key, style);
        text += `${index === 0 ? "" : ","}${newline(inner)}${name}:${style.indent ? " " : ""}`;
        visit(record[key], inner);
      });
      text += `${newline(indent)}}`;
    } else {
      text += json(value, style);
    }
  };
  visit(value, "");
  if (text !== "") parts.push(text);
  return parts;
}

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
function isOmitted(value: unknown): boolean {
  return value === undefined || typeof value === "function" || typeof value === "symbol";
}

function json(value: unknown, style: JsonStyle): string {
  const text = JSON.stringify(value) ?? "null";
  return style.ascii ? asciiOnly(text) : text;
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

