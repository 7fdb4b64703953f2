import { isAlias, isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type YAMLError, type YAMLMap } from "yaml";
import { MAX_MESSAGE_CHARACTERS, withThousands, type Finding } from "./diagnostics.js";
import { doubleQuoted, unquotedValue, type UnquotedValue } from "./quote.js";

/** A SKILL.md over 1 MiB is `file-too-large`. */
export const MAX_SKILL_FILE_BYTES = 1024 * 1024;
/**
 * Hostile YAML is bounded before it is turned into values: at most this many aliases (each costs a scan of the
 * document, and the `yaml` package's own limit is per anchor), ...
 */
const MAX_ALIAS_COUNT = 100;
/** ... values nested at most this deep (the `yaml` package, and everything that walks values later, recurses) ... */
const MAX_NESTING = 64;
/** ... and aliases may not make the values larger than the file could hold ("billion laughs"), in characters. */
const MAX_EXPANDED_SIZE = MAX_SKILL_FILE_BYTES;

export interface Position {
  line: number;
  column: number;
}

/** Frontmatter that the MCP SDK's reader (what hosts verify a served SKILL.md with) would not read as skillbake does. */
export interface Unportable extends Position {
  /** What it uses, as a noun phrase: "an alias (`*name`)". */
  reason: string;
}

/** One top-level frontmatter entry, with where its key and value stand in SKILL.md. */
export interface FrontmatterField {
  key: string;
  value: unknown;
  keyAt: Position;
  valueAt: Position;
}

export interface ParsedSkillFile {
  findings: Finding[];
  /** Absent when the file could not yield frontmatter; the skill is then skipped. */
  fields?: FrontmatterField[];
  /** With `fields`: where and why a reader of the Agent Skills subset of YAML (see `unportableYaml`) might read them otherwise. */
  unportable?: Unportable;
  /** Markdown after the closing fence, trimmed. */
  body: string;
  /** Line in SKILL.md where the trimmed body starts. */
  bodyLine: number;
}

/**
 * SKILL.md bytes → frontmatter fields and body. Pure: `file` is only used to label findings.
 * `recover` reads each top-level field on its own where the YAML fails. `size`: the file's size,
 * when `bytes` holds only as much of a large file as it takes to tell that it is over the limit. `decoded`: the
 * bytes as text already, as decoding them (see `decodeUtf8`) gives.
 */
export function parseSkillFile(file: string, bytes: Uint8Array, recover: boolean, size = bytes.byteLength, decoded?: string): ParsedSkillFile {
  const failed = (finding: Omit<Finding, "file">): ParsedSkillFile => ({ findings: [{ file, ...finding }], body: "", bodyLine: 1 });

  if (size > MAX_SKILL_FILE_BYTES) {
    return failed({
      code: "file-too-large",
      line: 1,
      column: 1,
      message: `SKILL.md is ${formatBytes(size)}, over the 1 MiB limit`,
      hint: "Move long material into references/ files that the skill links to.",
    });
  }
  const text = decoded ?? decodeUtf8(bytes);
  if (typeof text !== "string") {
    return failed({
      code: "encoding-invalid",
      ...text,
      message: "SKILL.md is not valid UTF-8",
      hint: "Save the file as UTF-8 (it may be binary, or in a legacy encoding such as Latin-1).",
    });
  }

  const frontmatter = splitFrontmatter(text);
  if (frontmatter === "no-fence") {
    const fenceLine = text.split("\n", 40).slice(1).findIndex(isFence);
    return failed({
      code: "frontmatter-missing",
      line: 1,
      column: 1,
      message: "SKILL.md has no frontmatter: line 1 is not `---`",
      hint:
        fenceLine >= 0
          ? `A \`---\` stands on line ${fenceLine + 2}; frontmatter must start on line 1, so remove what is above it.`
          : "Start the file with a frontmatter block: `---`, `name: my-skill`, `description: What it does and when to use it`, `---`.",
    });
  }
  if (frontmatter === "unclosed") {
    return failed({
      code: "frontmatter-unclosed",
      line: 1,
      column: 1,
      message: "the frontmatter opened on line 1 is never closed",
      hint: "Add a line `---` after the last frontmatter field.",
    });
  }

  const { yamlLines, rest } = frontmatter;
  const body = rest.trim();
  const bodyLine = yamlLines.length + 3 + (rest.slice(0, rest.length - rest.trimStart().length).match(/\n/g)?.length ?? 0);
  const parsed = parseFrontmatterYaml(file, yamlLines);
  if (parsed.error) {
    const recovered = recover ? recoverFields(file, yamlLines, parsed.error) : {};
    if (recovered.fields) {
      const { line = 1, column = 1 } = parsed.error;
      return {
        findings: [{ ...parsed.error, code: "yaml-recovered", message: `${parsed.error.message} (read leniently)` }],
        fields: recovered.fields,
        unportable: { line, column, reason: "YAML that does not parse (read leniently)" },
        body,
        bodyLine,
      };
    }
    return { findings: [recovered.error ?? parsed.error], body, bodyLine };
  }
  const unportable = unportableText(bytes, text, yamlLines) ?? parsed.unportable;
  return { findings: parsed.findings, fields: parsed.fields, ...(unportable ? { unportable } : {}), body, bodyLine };
}

/**
 * Where the text around the YAML is one the MCP SDK's reader splits otherwise: it takes the frontmatter from
 * `---` alone on line 1 to a line of `---` and spaces or tabs, after turning CRLF (not a lone CR) into LF.
 */
function unportableText(bytes: Uint8Array, text: string, yamlLines: readonly string[]): Unportable | undefined {
  if (!text.startsWith("---\n")) return { line: 1, column: 4, reason: "an opening `---` followed by more than a line break" };
  const closing = text.split("\n", yamlLines.length + 2)[yamlLines.length + 1] ?? "";
  if (!/^---[\t ]*$/.test(closing)) return { line: yamlLines.length + 2, column: 4, reason: "a closing `---` followed by characters other than spaces and tabs" };
  for (let at = bytes.indexOf(0x0d); at >= 0; at = bytes.indexOf(0x0d, at + 1)) {
    if (bytes[at + 1] !== 0x0a) return { line: 1, column: 1, reason: "a line ending that is a lone carriage return (CR)" };
  }
  const tab = yamlLines.findIndex((line) => /^ *\t/.test(line));
  if (tab >= 0) return { line: tab + 2, column: 1, reason: "a tab in the indentation" };
  const mark = yamlLines.findIndex((line) => line.includes("\ufeff"));
  if (mark >= 0) return { line: mark + 2, column: yamlLines[mark]!.indexOf("\ufeff") + 1, reason: "a byte order mark inside the YAML" };
  return undefined;
}

/** The frontmatter as its author wrote it: what the MCP skills extension and the discovery index serve, unlike the normalised `fields`. */
export interface WrittenFrontmatter {
  /** Every top-level field and its value as YAML reads it: no defaults added, nothing normalised or left out. */
  values: Record<string, unknown>;
  /** Where each field's value stands in SKILL.md. */
  at: Record<string, Position>;
  unportable?: Unportable;
}

/** `parsed`'s frontmatter as written; undefined when it yielded none. */
export function writtenFrontmatter(parsed: ParsedSkillFile): WrittenFrontmatter | undefined {
  if (!parsed.fields) return undefined;
  const values: Record<string, unknown> = {};
  const at: Record<string, Position> = {};
  for (const field of parsed.fields) {
    // An own property even for `__proto__`, which assignment would make the prototype.
    Object.defineProperty(values, field.key, { value: field.value, enumerable: true, writable: true, configurable: true });
    Object.defineProperty(at, field.key, { value: field.valueAt, enumerable: true, writable: true, configurable: true });
  }
  return { values, at, ...(parsed.unportable ? { unportable: parsed.unportable } : {}) };
}

/**
 * The body `parseSkillFile` gives for the same bytes, without reading the frontmatter: for a SKILL.md whose
 * fields the cache already holds.
 */
export function skillBody(bytes: Uint8Array, decoded?: string): string {
  const text = decoded ?? decodeUtf8(bytes);
  const frontmatter = typeof text === "string" ? splitFrontmatter(text) : "no-fence";
  return typeof frontmatter === "object" ? frontmatter.rest.trim() : "";
}

/**
 * The frontmatter's lines (between the fence on line 1 and the next fence line) and the text after the
 * closing fence. Only the frontmatter is split into lines: the body, most of the file, stays one slice.
 * The lines are cut from a copy of the frontmatter alone: V8 keeps a substring as a view of the string it was
 * cut from, so a name or description kept after the parse (by the build, its cache, a watch session) would keep
 * the whole SKILL.md in memory — 70 MB of text where a 10,000-skill catalogue's fields take a few.
 */
function splitFrontmatter(text: string): { yamlLines: string[]; rest: string } | "no-fence" | "unclosed" {
  const opening = text.indexOf("\n");
  if (!isFence(opening < 0 ? text : text.slice(0, opening))) return "no-fence";
  for (let end = opening; end >= 0; ) {
    const start = end + 1;
    end = text.indexOf("\n", start);
    if (isFence(end < 0 ? text.slice(start) : text.slice(start, end))) {
      const yamlLines = start === opening + 1 ? [] : copyOf(text.slice(opening + 1, start - 1)).split("\n");
      return { yamlLines, rest: end < 0 ? "" : text.slice(end + 1) };
    }
  }
  return "unclosed";
}

/**
 * `text` in memory of its own: slicing a concatenation makes V8 flatten it into a new string first. Also what to
 * keep of a string built by concatenation: its parts as V8 holds them, dozens of small strings, take several times
 * the memory of its characters.
 */
export function copyOf(text: string): string {
  return (" " + text).slice(1);
}

/** A frontmatter fence: `---`, then nothing but spaces or tabs. */
export function isFence(line: string): boolean {
  return line.startsWith("---") && line.slice(3).trim() === "" && !line.slice(3).includes("\u00a0");
}

/** Strips a BOM and throws on invalid bytes; a call without `stream` leaves no state behind, so one serves every file. */
const UTF8 = new TextDecoder("utf-8", { fatal: true });

/** UTF-8 decode with the BOM stripped and CRLF / CR turned into LF; the position of the first bad byte otherwise. */
function decodeUtf8(bytes: Uint8Array): string | Position {
  let text: string;
  try {
    text = UTF8.decode(bytes);
  } catch {
    return positionOfInvalidByte(bytes);
  }
  return text.includes("\r") ? text.replace(/\r\n?/g, "\n") : text;
}

function positionOfInvalidByte(bytes: Uint8Array): Position {
  const decoder = new TextDecoder("utf-8", { fatal: true });
  // Find the longest valid prefix by bisection, then count lines within it.
  let low = 0;
  let high = bytes.byteLength;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    try {
      decoder.decode(bytes.subarray(0, middle), { stream: true });
      decoder.decode(); // reset
      low = middle;
    } catch {
      high = middle - 1;
    }
  }
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < low; i++) {
    if (bytes[i] === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: low - lineStart + 1 };
}

interface YamlOutcome {
  error?: Finding;
  findings: Finding[];
  fields?: FrontmatterField[];
  unportable?: Unportable;
}

function parseFrontmatterYaml(file: string, yamlLines: string[]): YamlOutcome {
  const plain = readPlainFields(yamlLines);
  if (plain) return { findings: [], fields: plain };
  const source = yamlLines.join("\n");
  const lineCounter = new LineCounter();
  let doc: Document.Parsed;
  try {
    // Repeated keys are found by `inspectYaml` below: the package's own check compares every key with every other.
    // logLevel "error": the package would print its warnings (a list used as a key) to stderr itself.
    doc = parseDocument(source, { lineCounter, prettyErrors: false, uniqueKeys: false, logLevel: "error" });
  } catch (error) {
    return { findings: [], error: yamlError(file, yamlLines, { line: 2, column: 1 }, String(error)) };
  }
  // Positions in the YAML text are shifted by the opening fence to give SKILL.md coordinates.
  const at = (offset: number): Position => {
    const { line, col } = lineCounter.linePos(offset);
    return { line: line + 1, column: col };
  };
  const firstError = doc.errors[0];
  if (firstError) {
    // The package composes nodes recursively and reports a stack overflow as RESOURCE_EXHAUSTION.
    if (firstError.code === "RESOURCE_EXHAUSTION") return { findings: [], error: limitError(file, at(firstError.pos[0]), `it nests more than ${MAX_NESTING} levels deep`) };
    return { findings: [], error: yamlError(file, yamlLines, at(firstError.pos[0]), describeYamlError(firstError)) };
  }

  const contents = doc.contents;
  if (contents === null || (isScalar(contents) && contents.value === null)) return { findings: [], fields: [] };
  if (!isMap(contents)) {
    return {
      findings: [],
      error: {
        code: "frontmatter-not-mapping",
        file,
        ...at(contents.range[0]),
        message: `the frontmatter is a YAML ${isScalar(contents) ? "scalar" : "list"}, not a mapping of fields`,
        hint: "Write one `field: value` per line, e.g. `name: my-skill` and `description: …`.",
      },
    };
  }

  const shape = inspectYaml(contents);
  if (shape.duplicateKey !== undefined) return { findings: [], error: yamlError(file, yamlLines, at(shape.duplicateKey), "Map keys must be unique") };
  if (shape.overLimit) return { findings: [], error: limitError(file, at(shape.overLimit.offset), shape.overLimit.detail) };
  // One conversion for the whole document, so the alias limits count every alias once.
  let values: Map<string, unknown>;
  try {
    values = new Map(Object.entries(doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) as object));
  } catch (error) {
    // Only aliases make the conversion fail: an unknown anchor, or the package's own expansion limit.
    return { findings: [], error: limitError(file, at(shape.firstAlias ?? 0), error instanceof Error ? error.message : String(error)) };
  }
  if (shape.firstAlias !== undefined && expandedSizeExceeds([...values.values()], MAX_EXPANDED_SIZE)) {
    return { findings: [], error: limitError(file, at(shape.firstAlias), `its aliases expand it past ${formatBytes(MAX_EXPANDED_SIZE)}, or make a value contain itself`) };
  }

  const findings: Finding[] = [];
  const fields: FrontmatterField[] = [];
  for (const pair of contents.items) {
    const key = pair.key;
    const keyAt = key && typeof key === "object" && "range" in key && key.range ? at(key.range[0]) : { line: 2, column: 1 };
    if (!isScalar(key) || (typeof key.value !== "string" && typeof key.value !== "number" && typeof key.value !== "boolean")) {
      findings.push({
        code: "field-invalid",
        file,
        ...keyAt,
        message: "a frontmatter key is not a plain name (a YAML list or mapping was used as a key); the entry is ignored",
        hint: "Keys are plain words such as `name` or `allowed-tools`; quote the whole line's value if it contains `[`, `{` or `?`.",
      });
      continue;
    }
    const valueNode = pair.value;
    const valueAt = valueNode && typeof valueNode === "object" && "range" in valueNode && valueNode.range ? at(valueNode.range[0]) : keyAt;
    const name = String(key.value);
    fields.push({ key: name, value: valueNode === null ? null : values.get(name), keyAt, valueAt });
  }
  const unportable = unportableYaml(contents, source);
  return { findings, fields, ...(unportable ? { unportable: { ...at(unportable.offset), reason: unportable.reason } } : {}) };
}

/** How deep the MCP SDK's reader nests values, at most. */
const PORTABLE_NESTING = 32;
/** What a plain value may not start with, or hold, for the MCP SDK's reader: it takes those for syntax. */
const PLAIN_START = /^[%@`,\]}&*!|>'"[{#]|^[-?:](?:[\t ]|$)/;
const PLAIN_COLON = /:(?:[\t \n]|$)/;

/**
 * The first place where the frontmatter uses YAML beyond the subset the MCP SDK reads (block mappings and
 * sequences, plain, one-line quoted and block scalars, one-line flow collections, comments, with YAML 1.2's core
 * types), or where that reader would give another value: it throws on the rest rather than read it differently,
 * and a host verifying a served SKILL.md with it would refuse the skill. Conservative: YAML it reads alike may be
 * reported too; never the plain fields of almost every SKILL.md (`readPlainFields` takes those first).
 */
function unportableYaml(root: YAMLMap, source: string): { offset: number; reason: string } | undefined {
  const pending: { node: unknown; depth: number; key?: boolean }[] = [{ node: root, depth: 1 }];
  while (pending.length > 0) {
    const { node, depth, key } = pending.pop()!;
    const offset = (node as { range?: [number] }).range?.[0] ?? 0;
    const found = (reason: string) => ({ offset, reason });
    if (isAlias(node)) return found("an alias (`*name`)");
    const { anchor, tag } = node as { anchor?: string; tag?: string };
    if (anchor !== undefined) return found("an anchor (`&name`)");
    if (tag !== undefined) return found("a tag (`!name`)");
    if (depth > PORTABLE_NESTING) return found(`values nested more than ${PORTABLE_NESTING} levels deep`);
    if (isScalar(node)) {
      const text = source.slice(node.range![0], node.range![1]);
      if (key && typeof node.value !== "string") return found("a key that is not a string (quote it)");
      if (key && node.value === "__proto__") return found("the key `__proto__`");
      if (typeof node.value === "number" && !Number.isFinite(node.value)) return found("a number JSON cannot hold (`.inf`, `.nan`)");
      if ((node.type === "QUOTE_DOUBLE" || node.type === "QUOTE_SINGLE") && text.includes("\n")) return found("a quoted value over several lines");
      if ((node.type === "BLOCK_LITERAL" || node.type === "BLOCK_FOLDED") && /^[|>][+-]?\d/.test(text)) return found("a block scalar with an indentation indicator");
      if (node.type === "PLAIN" && (PLAIN_START.test(text) || PLAIN_COLON.test(text))) return found("a plain value holding YAML syntax (quote it)");
      continue;
    }
    if (!isMap(node) && !isSeq(node)) continue;
    if (node.flow && source.slice(node.range![0], node.range![1]).includes("\n")) return found("a flow collection (`[…]`, `{…}`) over several lines");
    const children: { node: unknown; depth: number; key?: boolean }[] = [];
    for (const item of node.items) {
      if (isPair(item)) {
        if (isSeq(node) && node.flow) return found("a mapping inside a flow sequence");
        if (!isScalar(item.key)) return found("a key that is not a string (quote it)");
        children.push({ node: item.key, depth: depth + 1, key: true });
        if (item.value) children.push({ node: item.value, depth: depth + 1 });
      } else if (item) {
        // `[a: b]` is a mapping of one pair without braces inside the sequence: the SDK reads only `[{a: b}]`.
        if (isSeq(node) && node.flow && isMap(item) && source[item.range![0]] !== "{") return found("a mapping inside a flow sequence");
        children.push({ node: item, depth: depth + 1 });
      }
    }
    for (let index = children.length - 1; index >= 0; index--) pending.push(children[index]!);
  }
  return undefined;
}

interface YamlShape {
  /** Offset of the first alias, if the document has any. */
  firstAlias?: number;
  /** Offset of the first key repeated within its mapping. */
  duplicateKey?: number;
  /** The first bound the document breaks. */
  overLimit?: { offset: number; detail: string };
}

/**
 * One pass over the nodes, with a stack of its own (so it cannot overflow): repeated keys, the number of aliases
 * and the nesting depth, in document order.
 */
function inspectYaml(root: YAMLMap): YamlShape {
  const shape: YamlShape = {};
  let aliases = 0;
  const pending: { node: unknown; depth: number }[] = [{ node: root, depth: 1 }];
  while (pending.length > 0 && shape.duplicateKey === undefined && !shape.overLimit) {
    const { node, depth } = pending.pop()!;
    const offset = (node as { range?: [number] }).range?.[0] ?? 0;
    if (isAlias(node)) {
      shape.firstAlias ??= offset;
      if (++aliases > MAX_ALIAS_COUNT) shape.overLimit = { offset, detail: `it uses more than ${MAX_ALIAS_COUNT} aliases (\`*name\`)` };
      continue;
    }
    if (!isMap(node) && !isSeq(node)) continue;
    if (depth > MAX_NESTING) {
      shape.overLimit = { offset, detail: `it nests more than ${MAX_NESTING} levels deep` };
      continue;
    }
    const keys = new Set<unknown>();
    const children: unknown[] = [];
    for (const item of node.items) {
      if (!isPair(item)) {
        children.push(item);
        continue;
      }
      if (isMap(node) && isScalar(item.key)) {
        if (keys.has(item.key.value)) {
          shape.duplicateKey = item.key.range?.[0] ?? offset;
          break;
        }
        keys.add(item.key.value);
      }
      children.push(item.key, item.value);
    }
    for (let i = children.length - 1; i >= 0; i--) if (children[i]) pending.push({ node: children[i], depth: depth + 1 });
  }
  return shape;
}

/** Whether values, counting every string's length and every other value as 1, add up to more than `limit`. */
function expandedSizeExceeds(roots: readonly unknown[], limit: number): boolean {
  let size = 0;
  const pending = [...roots];
  while (pending.length > 0) {
    const value = pending.pop();
    size += typeof value === "string" ? value.length : 1;
    if (size > limit) return true;
    if (Array.isArray(value)) for (const item of value) pending.push(item);
    else if (value && typeof value === "object" && !(value instanceof Date)) for (const [key, item] of Object.entries(value)) pending.push(key, item);
  }
  return false;
}

/**
 * `key:`, then optionally spaces and a value, at the start of a line. The spaces are taken whole (`(?! )`): a value
 * that `.` cannot match to the end (a U+2028 in it) would otherwise be tried after every shorter run of them, which
 * made a line of 40,000 spaces cost 2 s.
 */
const KEY_LINE = /^([A-Za-z][A-Za-z0-9_-]*):(?:( +)(?! )(.*))?$/;
/** A value YAML can only read as that very string or number, less the few sequences checked by `scalarValue`. */
const PLAIN_TEXT = /^[A-Za-z0-9(</](?:[\x20-\x7e\u00a1-\ud7ff\ue000-\ufefe\uff00-\ufffd]|[\ud800-\udbff][\udc00-\udfff])*$/;
/** An item of a flow list (`[a, b]`) that YAML can only read as that string: no indicator characters at all. */
const FLOW_ITEM = /^ *([A-Za-z](?:[A-Za-z0-9 ._/+-]*[A-Za-z0-9._/+-])?) *$/;
/** Plain scalars YAML 1.2's core schema reads as booleans or null, spelled as the `yaml` package reads them. */
const CORE_CONSTANTS = new Map<string, boolean | null>([
  ["true", true],
  ["True", true],
  ["TRUE", true],
  ["false", false],
  ["False", false],
  ["FALSE", false],
  ["null", null],
  ["Null", null],
  ["NULL", null],
  ["~", null],
]);
/** Other spellings of those words: strings to the `yaml` package, but not to every YAML reader; left to the package. */
const NOT_A_STRING = /^(?:true|false|null)$/i;
/** The core schema's decimal integers and floats without a sign (`1`, `2.0`, `1.5e3`); `0x…` and `0o…` are left to the package. */
const CORE_INTEGER = /^[0-9]+$/;
const CORE_FLOAT = /^[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?$/;

/** A quoted scalar whose escapes are the common few: `"…"` with `\"`, `\\`, `\/`, `\n` or `\t`, or `'…'` with `''`. */
const QUOTED = /^(?:"((?:[\x20\x21\x23-\x5b\x5d-\x7e\u00a1-\ud7ff\ue000-\ufefe\uff00-\ufffd]|[\ud800-\udbff][\udc00-\udfff]|\\["\\/nt])*)"|'((?:[\x20-\x26\x28-\x7e\u00a1-\ud7ff\ue000-\ufefe\uff00-\ufffd]|[\ud800-\udbff][\udc00-\udfff]|'')*)')$/;
const UNESCAPED: Record<string, string> = { '"': '"', "\\": "\\", "/": "/", n: "\n", t: "\t" };

/** The header of a block scalar without an indentation indicator or a comment: literal or folded, clipped or stripped. */
const BLOCK_HEADER = /^([|>])(-?)$/;
/** A line of a block scalar read here: text at the block's indentation, ending in neither a space nor a tab. */
const BLOCK_LINE = /^(?:[\x21-\x7e\u00a1-\ud7ff\ue000-\ufefe\uff00-\ufffd]|[\ud800-\udbff][\udc00-\udfff])(?:(?:[\x20-\x7e\u00a1-\ud7ff\ue000-\ufefe\uff00-\ufffd]|[\ud800-\udbff][\udc00-\udfff])*(?:[\x21-\x7e\u00a1-\ud7ff\ue000-\ufefe\uff00-\ufffd]|[\ud800-\udbff][\udc00-\udfff]))?$/;
/** An item of a block list: `- ` and a value, at the list's indentation; the spaces after `-` taken whole, as in `KEY_LINE`. */
const LIST_ITEM = /^( *)- +(?! )(.*)$/;

/** A scalar value of the core schema: undefined is not one of them, but "not read here". */
type CoreScalar = string | number | boolean | null;

/** The value a one-line scalar stands for, when YAML can read it only as that value. */
function scalarValue(value: string): CoreScalar | undefined {
  const quoted = QUOTED.exec(value);
  if (quoted) return quoted[1] !== undefined ? quoted[1].replace(/\\(.)/g, (_, escaped: string) => UNESCAPED[escaped]!) : quoted[2]!.replaceAll("''", "'");
  const constant = CORE_CONSTANTS.get(value);
  if (constant !== undefined) return constant;
  if (!isPlainText(value) || NOT_A_STRING.test(value)) return undefined;
  const first = value.charCodeAt(0);
  if (first >= 0x30 && first <= 0x39) {
    const number = CORE_INTEGER.test(value) ? parseInt(value, 10) : CORE_FLOAT.test(value) ? parseFloat(value) : undefined;
    // One too large for a double (Infinity) is left to the package, whose reader reports it as unportable.
    if (number !== undefined) return Number.isFinite(number) ? number : undefined;
    if (value.startsWith("0x") || value.startsWith("0o")) return undefined;
  }
  return value;
}

/** Plain text YAML reads as one plain scalar: no `: ` or ` #` inside, no `:` or space at the end. */
function isPlainText(value: string): boolean {
  return PLAIN_TEXT.test(value) && !value.includes(": ") && !value.includes(" #") && !value.endsWith(":") && !value.endsWith(" ");
}

/** A line that goes on with a plain value: plain text, or text beginning with a quote (which only opens a quoted value at the start of one). */
function isPlainContinuation(line: string): boolean {
  return isPlainText(line.startsWith('"') || line.startsWith("'") ? `x${line}` : line);
}

/**
 * A plain value over several lines: `first`, then the more indented lines below `yamlLines[index]`, folded into
 * one line as YAML folds them (each line trimmed, joined by a space). Undefined when a line is blank, holds
 * anything but plain text, or the whole reads as other than a string.
 */
function foldedPlain(first: string, yamlLines: readonly string[], index: number): { value: string; last: number } | undefined {
  // Each line as its own: YAML trims the spaces that end one before it folds (a test of the whole cannot see them).
  if (!isPlainText(first)) return undefined;
  let value = first;
  while (yamlLines[index + 1]?.startsWith(" ")) {
    // Spaces only: a tab there is left to the package.
    const line = yamlLines[++index]!.replace(/^ +/, "");
    if (!isPlainContinuation(line)) return undefined;
    value += ` ${line}`;
  }
  return scalarValue(value) === value ? { value, last: index } : undefined;
}

/**
 * The block scalar (`key: >-` and the lines below) whose `header` is at `yamlLines[index]`: its text lines, all at
 * one indentation with no blank line among them, joined as YAML joins them (folded with spaces, literal with line
 * breaks; a final line break unless stripped); and the index of its last line. Undefined for anything else.
 */
function blockValue(header: RegExpExecArray, yamlLines: readonly string[], index: number): { value: string; last: number } | undefined {
  const indent = /^ +/.exec(yamlLines[index + 1] ?? "")?.[0];
  if (!indent) return undefined;
  const lines: string[] = [];
  while (yamlLines[index + 1]?.startsWith(" ")) {
    const line = yamlLines[++index]!;
    if (!line.startsWith(indent) || !BLOCK_LINE.test(line.slice(indent.length))) return undefined;
    lines.push(line.slice(indent.length));
  }
  const [, style, chomping] = header;
  return { value: lines.join(style === ">" ? " " : "\n") + (chomping === "-" ? "" : "\n"), last: index };
}

/**
 * The value of a `key:` line with nothing after it, at `yamlLines[index]`, from the lines below: a list of one-line
 * values (`- Read`), a mapping of one-line values indented alike (`metadata:`), or a plain value over several lines.
 */
function valueBelow(yamlLines: readonly string[], index: number): { value: unknown; valueAt: Position; last: number } | undefined {
  const next = yamlLines[index + 1] ?? "";
  const item = LIST_ITEM.exec(next);
  if (item) {
    const [, indent] = item as unknown as [string, string];
    const value: CoreScalar[] = [];
    let match;
    while ((match = LIST_ITEM.exec(yamlLines[index + 1] ?? "")) && match[1] === indent) {
      const itemValue = scalarValue(match[2]!);
      if (itemValue === undefined) return undefined;
      value.push(itemValue);
      index++;
    }
    // A line below the list that is not a key at column 0 (a list item's continuation, say) is not read here.
    return yamlLines[index + 1]?.startsWith(" ") ? undefined : { value, valueAt: { line: index - value.length + 3, column: indent.length + 1 }, last: index };
  }
  const indent = /^ +/.exec(next)?.[0];
  if (!indent) return undefined;
  const valueAt = { line: index + 3, column: indent.length + 1 };
  if (!KEY_LINE.test(next.slice(indent.length))) {
    const folded = foldedPlain(next.slice(indent.length), yamlLines, index + 1);
    return folded && { value: folded.value, valueAt, last: folded.last };
  }
  const value: Record<string, CoreScalar> = {};
  while (yamlLines[index + 1]?.startsWith(" ")) {
    const nested = yamlLines[++index]!;
    const inner = nested.startsWith(indent) ? KEY_LINE.exec(nested.slice(indent.length)) : null;
    const [, innerKey, innerSpaces, innerText] = (inner ?? []) as unknown as [string, string, string | undefined, string | undefined];
    const innerValue = innerText === undefined ? undefined : scalarValue(innerText);
    if (!inner || innerSpaces === undefined || innerValue === undefined || NOT_A_STRING.test(innerKey) || Object.hasOwn(value, innerKey)) return undefined;
    value[innerKey] = innerValue;
  }
  return { value, valueAt, last: index };
}

/**
 * The fast path for the frontmatter almost every SKILL.md has: top-level `key: value` lines (plain text, quoted
 * with the common escapes, numbers, booleans and null; plain text may go on over more indented lines), block
 * scalars of plain lines (`description: >-`), flow lists of plain words (`tags: [a, b]`), block lists of one-line
 * values (`allowed-tools:` then `- Read` lines), one level of `key: value` under a `key:` line (`metadata:`), and
 * blank lines. Parsing that with the `yaml` package costs tens of microseconds a file (far more while its code is
 * still cold), most of the parse time of a large catalogue; reading it here gives the same fields, values and
 * positions. Anything else (other escapes, deeper nesting, comments, anchors, `: ` or ` #` inside a plain value, a
 * repeated key) returns undefined, and the `yaml` package decides.
 */
function readPlainFields(yamlLines: readonly string[]): FrontmatterField[] | undefined {
  const fields: FrontmatterField[] = [];
  const keys = new Set<string>();
  for (let index = 0; index < yamlLines.length; index++) {
    const line = yamlLines[index]!;
    if (line === "") continue;
    const match = KEY_LINE.exec(line);
    if (!match) return undefined;
    const [, key, spaces, text] = match as unknown as [string, string, string | undefined, string | undefined];
    if (NOT_A_STRING.test(key) || keys.has(key)) return undefined;
    keys.add(key);
    const lineNumber = index + 2; // after the opening fence, 1-based
    const keyAt = { line: lineNumber, column: 1 };
    if (text === undefined) {
      const below = valueBelow(yamlLines, index);
      if (!below) return undefined;
      index = below.last;
      fields.push({ key, value: below.value, keyAt, valueAt: below.valueAt });
      continue;
    }
    const valueAt = { line: lineNumber, column: key.length + spaces!.length + 2 };
    if (text.startsWith("[") && text.endsWith("]")) {
      const items = text === "[]" ? [] : text.slice(1, -1).split(",").map((item) => FLOW_ITEM.exec(item)?.[1]);
      if (items.some((item) => item === undefined || NOT_A_STRING.test(item))) return undefined;
      fields.push({ key, value: items, keyAt, valueAt });
      continue;
    }
    const header = BLOCK_HEADER.exec(text);
    const block = header ? blockValue(header, yamlLines, index) : yamlLines[index + 1]?.startsWith(" ") ? foldedPlain(text, yamlLines, index) : undefined;
    if (block) {
      index = block.last;
      fields.push({ key, value: block.value, keyAt, valueAt });
      continue;
    }
    const value = header ? undefined : scalarValue(text);
    if (value === undefined || yamlLines[index + 1]?.startsWith(" ")) return undefined;
    fields.push({ key, value, keyAt, valueAt });
  }
  return fields.length > 0 ? fields : undefined;
}

/** YAML that breaks a bound set against hostile input; no real frontmatter comes near one. */
function limitError(file: string, at: Position, detail: string): Finding {
  return {
    code: "yaml-invalid",
    file,
    ...at,
    message: `the frontmatter is not valid YAML: ${detail}`,
    hint: `Frontmatter holds a few plain fields: write values out instead of using anchors and aliases (\`&name\`, \`*name\`), and keep nesting shallow.`,
  };
}

function describeYamlError(error: YAMLError): string {
  // The yaml package's messages end with a position and a code frame when prettified; we report those ourselves.
  return error.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
}

function yamlError(file: string, yamlLines: string[], at: Position, detail: string): Finding {
  const conflict = yamlLines.findIndex((line) => /^(<{7}|={7}|>{7})( |$)/.test(line));
  if (conflict >= 0) {
    return {
      code: "yaml-invalid",
      file,
      line: conflict + 2,
      column: 1,
      message: "the frontmatter contains git merge conflict markers",
      hint: "Resolve the conflict: keep one side and delete the `<<<<<<<`, `=======` and `>>>>>>>` lines.",
    };
  }
  const message = `the frontmatter is not valid YAML: ${detail}`;
  // The most common failure, an unquoted ": " or a leading `[` in a value, is reported where it stands: on the line
  // YAML failed on, or on the line of an entry before it (YAML notices an unclosed `[` only at the next key).
  const unquoted = misreadValue(yamlLines, at.line - 2);
  if (unquoted) {
    const { index, value } = unquoted;
    return { code: "yaml-invalid", file, line: index + 2, column: "colon" in value.problem ? value.problem.colon : value.column, message, hint: quoteHint(value) };
  }
  return { code: "yaml-invalid", file, ...at, message, hint: yamlHint(yamlLines[at.line - 2] ?? "", at, yamlLines) };
}

/**
 * The value YAML misreads that made it fail at `errorIndex` (an index into the frontmatter's lines): the failing
 * line's own, else that of the first top-level entry up to that line that fails to parse on its own.
 */
function misreadValue(yamlLines: readonly string[], errorIndex: number): { index: number; value: UnquotedValue } | undefined {
  // A value with ": " never parses; one that starts with `[` or `*` may be a list or an alias that does.
  const fails = (lines: readonly string[]) => parseDocument(lines.join("\n"), { uniqueKeys: false, logLevel: "silent" }).errors.length > 0;
  const own = unquotedValue(yamlLines[errorIndex] ?? "");
  if (own && ("colon" in own.problem || fails([yamlLines[errorIndex]!]))) return { index: errorIndex, value: own };
  const starts: number[] = [];
  for (let index = 0; index < errorIndex && index < yamlLines.length; index++) if (TOP_LEVEL_KEY.test(yamlLines[index]!)) starts.push(index);
  for (const [position, start] of starts.entries()) {
    const value = unquotedValue(yamlLines[start]!);
    if (value && fails(yamlLines.slice(start, starts[position + 1] ?? errorIndex + 1))) return { index: start, value };
  }
  return undefined;
}

/** "Quote the value", with the quoted line to copy, unless that line is too long to show whole. */
function quoteHint({ key, value, column, problem }: UnquotedValue): string {
  const why =
    "colon" in problem
      ? `The value of \`${key}\` ${problem.colon - column === value.length - 1 ? 'ends in ":"' : 'contains ": "'}, which YAML reads as a new mapping.`
      : `The value of \`${key}\` starts with \`${problem.indicator}\`, which YAML treats as syntax.`;
  const hint = `${why} Quote the value: ${key}: ${doubleQuoted(value)}`;
  // A hint past the length diagnostics keep would lose its middle: the line to copy would be cut.
  return hint.length <= MAX_MESSAGE_CHARACTERS ? hint : `${why} Quote the value: put it in double quotes, with \\" for each " and \\\\ for each \\ inside it (\`skills check --fix\` does this).`;
}

/** The fixes that cover most other YAML failures in SKILL.md files. */
function yamlHint(sourceLine: string, at: Position, yamlLines: readonly string[]): string {
  if (/^\t/.test(sourceLine)) return "YAML does not allow tabs for indentation; indent with spaces.";
  const firstBlank = yamlLines.findIndex((line) => line.trim() === "");
  if (firstBlank >= 0 && at.line - 2 > firstBlank && yamlLines.some((line, index) => index > firstBlank && /^#{1,6} /.test(line))) {
    return `The frontmatter is never closed where it should be: the \`---\` on line ${yamlLines.length + 2} (a Markdown rule?) closes it, so Markdown is read as YAML. Add a line \`---\` after the last field.`;
  }
  return 'Check the YAML syntax on this line; quoting the value with "…" fixes most errors.';
}

/** The fields that decide who may invoke a skill: recovery never guesses them (see `recoverFields`). */
const INVOCATION_FIELDS = ["disable-model-invocation", "user-invocable"] as const;
/** A line that starts a top-level entry: a key at column 0, optionally quoted, then `:`. */
const TOP_LEVEL_KEY = /^(["']?)([A-Za-z][A-Za-z0-9_-]*)\1[ \t]*:(?:[ \t]|$)/;
/** Each pass takes the entry YAML fails on out and parses the rest again; a frontmatter broken in more places is not recovered. */
const MAX_RECOVERY_PASSES = 8;
/**
 * Nor is one longer than this, in characters: each pass parses it whole, and hand-written frontmatter is a few
 * hundred characters (a hostile 1 MiB one would cost seconds a pass).
 */
const MAX_RECOVERABLE_LENGTH = 16 * 1024;

interface Entry {
  key: string;
  /** Index in the frontmatter's lines of the key line, and of the line after the entry. */
  start: number;
  end: number;
}

/**
 * `yaml: "recover"`: the frontmatter is cut into top-level entries (a key line at column 0 and the lines below it
 * up to the next one). YAML reads them all but the entries it fails on (found one pass at a time), so values keep
 * their types (`true`, a list, a mapping); a failed entry is read as text, the common failure being an unquoted
 * `: ` in a description. `disable-model-invocation` and `user-invocable` are never guessed: when either is written
 * but cannot be read as a boolean, the skill fails (a manual-only skill recovered without its flag would be shown
 * to the model).
 */
function recoverFields(file: string, yamlLines: string[], error: Finding): { fields?: FrontmatterField[]; error?: Finding } {
  if (yamlLines.reduce((length, line) => length + line.length + 1, 0) > MAX_RECOVERABLE_LENGTH) return {};
  const entries: Entry[] = [];
  yamlLines.forEach((line, index) => {
    const key = TOP_LEVEL_KEY.exec(line)?.[2];
    if (key === undefined) return;
    const previous = entries.at(-1);
    if (previous) previous.end = index;
    entries.push({ key, start: index, end: yamlLines.length });
  });
  const unsure = (index: number, key: string): { error: Finding } => ({
    error: {
      ...error,
      message: `${error.message}; \`yaml: "recover"\` cannot read \`${key}\` on line ${index + 2}, so the skill is left out rather than shown to the model without it`,
      hint: `Fix the YAML, or at least write \`${key}: true\` or \`${key}: false\` alone on its line.`,
    },
  });
  const isGuarded = (key: string) => (INVOCATION_FIELDS as readonly string[]).includes(key);

  const failed = new Set<Entry>();
  let parsed: FrontmatterField[] | undefined;
  for (let pass = 0; pass < MAX_RECOVERY_PASSES && !parsed; pass++) {
    const lines: string[] = [];
    const origin: number[] = []; // index in yamlLines of each line passed to YAML
    for (const entry of entries) {
      if (failed.has(entry)) continue;
      for (let index = entry.start; index < entry.end; index++) {
        lines.push(yamlLines[index]!);
        origin.push(index);
      }
    }
    const outcome = parseFrontmatterYaml(file, lines);
    if (!outcome.error) {
      const shift = (at: Position): Position => ({ line: origin[at.line - 2]! + 2, column: at.column });
      parsed = (outcome.fields ?? []).map((field) => ({ ...field, keyAt: shift(field.keyAt), valueAt: shift(field.valueAt) }));
      break;
    }
    const at = origin[(outcome.error.line ?? 2) - 2];
    const culprit = entries.find((entry) => !failed.has(entry) && at !== undefined && entry.start <= at && at < entry.end);
    if (!culprit) return {};
    if (isGuarded(culprit.key)) return unsure(culprit.start, culprit.key);
    failed.add(culprit);
  }
  if (!parsed) return {};

  for (const field of parsed) {
    if (isGuarded(field.key) && field.value !== null && typeof field.value !== "boolean") return unsure(field.keyAt.line - 2, field.key);
  }
  const fields = [...parsed];
  const keys = new Set(parsed.map((field) => field.key));
  for (const entry of failed) {
    if (keys.has(entry.key)) continue; // a repeated key, perhaps what broke the YAML: the one YAML read stands
    keys.add(entry.key);
    const lines = yamlLines.slice(entry.start, entry.end);
    fields.push({ key: entry.key, value: lenientText(lines), keyAt: { line: entry.start + 2, column: 1 }, valueAt: { line: entry.start + 2, column: entry.key.length + 3 } });
  }
  // An invocation field on a line that is not its own entry (inside another value, or in a form the key line
  // above does not read) may be one YAML would have set: not sure, so not recovered.
  const starts = new Set(entries.map((entry) => entry.start));
  const stray = yamlLines.findIndex((line, index) => !starts.has(index) && INVOCATION_FIELDS.some((key) => line.includes(key)) && STRAY_INVOCATION_FIELD.test(line));
  if (stray >= 0) return unsure(stray, INVOCATION_FIELDS.find((key) => yamlLines[stray]!.includes(key))!);
  fields.sort((a, b) => a.keyAt.line - b.keyAt.line);
  return fields.length > 0 ? { fields } : {};
}

const STRAY_INVOCATION_FIELD = new RegExp(`(?:${INVOCATION_FIELDS.join("|")})["']?\\s*:`);

/** An entry YAML cannot read, as text: a block scalar's lines, or the value and its continuation lines joined, unquoted. */
function lenientText(lines: readonly string[]): string {
  const first = lines[0]!.slice(lines[0]!.indexOf(":") + 1).trim();
  const continuation = lines
    .slice(1)
    .filter((line) => /^[ \t]+\S/.test(line))
    .map((line) => line.trim());
  if (/^[|>][-+]?$/.test(first)) return continuation.join(first.startsWith("|") ? "\n" : " ");
  const value = [first, ...continuation].join(" ");
  const quote = value[0];
  return (quote === '"' || quote === "'") && value.endsWith(quote) && value.length >= 2 ? value.slice(1, -1) : value;
}

/** In MiB, or in bytes where rounding would hide that a size is over 1 MiB. */
export function formatBytes(bytes: number): string {
  const mib = (bytes / (1024 * 1024)).toFixed(1);
  return mib === "1.0" && bytes > 1024 * 1024 ? `${withThousands(bytes)} bytes` : `${mib} MiB`;
}

/**
 * Where the entry at `path` (keys and list indexes from the top of the frontmatter) stands in SKILL.md: its key
 * and its value, or, for an entry that is absent, the value of the deepest entry on the way that is present
 * (line 1 for the top). Parses the YAML again: it is for reporting the few entries that fail a check.
 */
export function locateInFrontmatter(bytes: Uint8Array, path: readonly PropertyKey[]): { valueAt: Position; keyAt?: Position; found: boolean } {
  let valueAt: Position = { line: 1, column: 1 };
  const text = decodeUtf8(bytes);
  const frontmatter = typeof text === "string" ? splitFrontmatter(text) : "no-fence";
  if (typeof frontmatter !== "object") return { valueAt, found: false };
  const lineCounter = new LineCounter();
  const doc = parseDocument(frontmatter.yamlLines.join("\n"), { lineCounter, uniqueKeys: false, logLevel: "silent" });
  const at = (node: unknown): Position | undefined => {
    const offset = (node as { range?: [number] } | null | undefined)?.range?.[0];
    if (offset === undefined) return undefined;
    const { line, col } = lineCounter.linePos(offset);
    return { line: line + 1, column: col };
  };
  let node: unknown = doc.contents;
  let keyAt: Position | undefined;
  for (const segment of path) {
    let key: unknown;
    let value: unknown;
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === String(segment));
      [key, value] = [pair?.key, pair?.value];
    } else if (isSeq(node) && typeof segment === "number") {
      value = node.items[segment];
    }
    keyAt = at(key);
    const position = at(value) ?? keyAt;
    if (!position) return { valueAt, found: false };
    valueAt = position;
    node = value;
  }
  return { valueAt, ...(keyAt ? { keyAt } : {}), found: true };
}
