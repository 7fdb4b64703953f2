import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseSkillFile, skillBody } from "../src/compile/parse.js";

const encode = (text: string) => new TextEncoder().encode(text);

/**
 * Frontmatter of plain `key: value` entries, flow lists and one level of nesting is read without the `yaml` package. A
 * leading comment line makes the fast path decline (and, being first, cannot change what follows it), so the same
 * frontmatter with it is read by `yaml`: both must agree on every field, value and position (one line lower),
 * and on every finding.
 */
function bothWays(frontmatter: string) {
  const fast = parseSkillFile("SKILL.md", encode(`---\n${frontmatter}\n---\nBody\n`), false);
  const slow = parseSkillFile("SKILL.md", encode(`---\n# read by the yaml package\n${frontmatter}\n---\nBody\n`), false);
  const up = ({ line, column }: { line: number; column: number }) => ({ line: line - 1, column });
  const slowFields = slow.fields?.map((field) => ({ ...field, keyAt: up(field.keyAt), valueAt: up(field.valueAt) }));
  return { fast, slow: { ...slow, fields: slowFields } };
}

// Characters that change how YAML reads a line, mixed with ordinary text.
const tricky = ["a", "b", "z", "A", " ", "  ", ":", ": ", "#", " #", "-", "_", "<", "<<", "(", ")", "/", '"', "'", "[", "]", "{", "}", ",", "&", "*", "!", "|", ">", "%", "@", "`", "?", "~", "\t", "0", "1", ".", "\\", "é", "\u00a0", "\u0085", "\u2028", "\ufeff", "😀", "true", "null", "False", "NULL", "yes", "no", "http://x"];
const text = fc.array(fc.constantFrom(...tricky), { maxLength: 8 }).map((parts) => parts.join(""));
const key = fc.oneof(fc.constantFrom("name", "description", "license", "allowed-tools", "version", "x_y", "true", "Null"), fc.constantFrom("name", "description"), text);
const words = fc.constantFrom("plain", "words here", "Use when", "a");
const value = fc.oneof(
  text,
  // Quoted: with nothing to unescape, or with a quote, backslash or escape inside.
  fc.tuple(fc.constantFrom('"', "'"), text, fc.constantFrom('"', "'", "", '" x', "' # c")).map(([open, inner, close]) => `${open}${inner}${close}`),
  fc.constantFrom('"a\\nb"', "'it''s'", '"say \\"hi\\""', '"tab\there"', '"a: b # c"', "'#x: y'", '""', "''"),
  // Quoted with escapes: the few the fast path reads, and others it leaves to the yaml package.
  fc
    .tuple(fc.constantFrom('"', "'"), fc.array(fc.oneof(text, fc.constantFrom('\\"', "\\\\", "\\/", "\\n", "\\t", "\\x41", "\\u00e9", "\\ ", "\\", "''", "'")), { maxLength: 5 }))
    .map(([quote, parts]) => `${quote}${parts.join("")}${quote}`),
  fc.tuple(words, fc.constantFrom(...tricky), fc.oneof(words, fc.constant(""))).map((parts) => parts.join("")),
  fc.constantFrom("true", "True", "FALSE", "null", "Null", "~", "yes", "off", "1.5", "0x1f", ".inf", "plain words"),
  // Numbers and what only looks like one: versions, dates, times, other bases.
  fc.constantFrom("1", "007", "2.0", "1.", "1.5e3", "1e3", "1E-2", "12e", "1.0.0", "v1.2", "2024-01-01", "1:20", "1_000", "1,000", "0x1F", "0o17", "0b101", "-1", "+1", ".5", "-0", "12345678901234567890", "1 2", "9".repeat(400), `${"9".repeat(400)}.5`, "1e999"),
);
const line = fc.oneof(
  fc.tuple(key, fc.constantFrom(": ", ":  ", ":", ":\t"), value).map(([k, sep, v]) => `${k}${sep}${v}`),
  fc.tuple(fc.constantFrom("name", "description"), value).map(([k, v]) => `${k}: ${v}`),
  fc.constant(""),
  fc.constant("  nested: value"),
  // Flow lists: `key: [a, b]`.
  fc
    .tuple(key, fc.array(fc.oneof(words, text, fc.constantFrom("Read", "Bash(git:*)", "a b", " a ", "null", "x/y", "", "[]", "a:b", "a: b", "a #c", "a#b")), { maxLength: 4 }), fc.constantFrom(", ", ",", " , "))
    .map(([k, items, sep]) => `${k}: [${items.join(sep)}]`),
  // Block scalars: a header, then lines at the block's indentation, or more or less indented, or blank.
  fc
    .tuple(
      key,
      fc.constantFrom(">", ">-", "|", "|-", ">", ">-", "|", "|-", ">+", "|2", "> # c", ">-\t", "|-  "),
      fc.constantFrom("  ", "  ", " ", "    ", "\t"),
      fc.array(fc.tuple(fc.constantFrom(null, null, null, null, "", " ", "\t"), fc.oneof(words, words, text, fc.constantFrom("- item", "# not a comment", "key: value", "a  b", "end ", "x\t"))), { minLength: 0, maxLength: 4 }),
    )
    // A line's deviation: none (the block's indentation), "" (column 0), or more indented; empty text makes a blank line.
    .map(([k, header, indent, lines]) => [`${k}: ${header}`, ...lines.map(([deviation, content]) => `${deviation === null ? indent : deviation === "" ? "" : indent + deviation}${content}`)].join("\n")),
  // A plain value going on over more indented lines, or starting on the line below its key.
  fc
    .tuple(
      key,
      fc.constantFrom(": ", ": ", ":"),
      fc.oneof(words, value),
      fc.array(fc.tuple(fc.constantFrom("  ", "  ", " ", "    ", "\t", " \t", ""), fc.oneof(words, words, value, fc.constantFrom("- item", "# c", "a: b", "b:", "[x]", "x #y", '"q", r'))), { minLength: 1, maxLength: 3 }),
    )
    .map(([k, sep, first, lines]) => [`${k}${sep}${sep === ":" ? "" : first}`, ...lines.map(([indent, content]) => `${indent}${content}`)].join("\n")),
  // Block lists: `key:` then `- value` lines at one indentation or another, sometimes with more below an item.
  fc
    .tuple(
      key,
      fc.constantFrom("", "  ", "  ", "    "),
      fc.array(fc.tuple(fc.constantFrom(null, null, null, "", " ", "  "), fc.constantFrom("- ", "- ", "-  ", "-", "-\t"), fc.oneof(words, value)), { minLength: 1, maxLength: 4 }),
      fc.constantFrom(null, null, "    more", "  - nested", "  key: v"),
    )
    .map(([k, indent, items, after]) => [`${k}:`, ...items.map(([deviation, dash, item]) => `${deviation ?? indent}${dash}${item}`), ...(after === null ? [] : [indent + after])].join("\n")),
  // One level of nesting: `key:` then indented `key: value` lines.
  fc
    .tuple(key, fc.array(fc.tuple(fc.constantFrom("  ", "  ", "    ", " ", "\t", "   "), fc.oneof(key, fc.constantFrom("author", "null", "True")), fc.constantFrom(": ", ":", ":  "), value), { maxLength: 3 }))
    .map(([k, entries]) => [`${k}:`, ...entries.map(([indent, innerKey, sep, innerValue]) => `${indent}${innerKey}${sep}${innerValue}`)].join("\n")),
);

describe("frontmatter fast path", () => {
  it("reads exactly what the yaml package reads, positions included", () => {
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 5 }), (lines) => {
        const { fast, slow } = bothWays(lines.join("\n"));
        expect(fast.fields).toEqual(slow.fields);
        expect(fast.findings.map((finding) => finding.code)).toEqual(slow.findings.map((finding) => finding.code));
        expect(fast.unportable?.reason).toEqual(slow.unportable?.reason);
      }),
      { numRuns: 5000 },
    );
  });

  it("agrees on the frontmatter real skills use", () => {
    for (const frontmatter of [
      "name: git-commit\ndescription: Write a commit message. Use when committing.",
      "name: a\ndescription: Uses C# and http://example.com/x?y=1 (see [docs]), 100% \"quoted\" words' too",
      "name: a\n\ndescription: Ünïcödé — with an em dash and emoji 😀",
      "name: a\ndescription: version 2\nlicense: MIT\nversion: v1.2",
      "name: a\ndescription: yes",
      "name: a\ndescription: d\nmetadata:\n  author: team-data\n  version: v1.2\ntags: [data, core]\nallowed-tools: [Read, Bash]",
      "name: a\ndescription: d\nmetadata:\n    owner: qa\nempty: []",
      'name: a\ndescription: "Reviews code: style, tests # and docs"\nversion: \'1.0\'\nmetadata:\n  version: "2"',
      'name: a\ndescription: "Say \\"hi\\" to C:\\\\temp"\nnote: \'it\'\'s\'',
      "name: a\ndescription: >-\n  Folded across\n  two lines.\nlicense: MIT",
      "name: a\ndescription: |\n    Literal: kept # as is\n    - on its lines\n\nlicense: MIT",
      "name: a\ndescription: Expert in databases and\n  PostgreSQL, MySQL, SQL Server\nversion: 1.0.0",
      "name: a\ndescription:\n  Summarizes \"quoted\", words\n  over lines.\nversion: 2.0\ndisable-model-invocation: true",
      "name: a\ndescription: d\nallowed-tools:\n  - Read\n  - Bash(git:*)\nuser-invocable: false",
      "name: a\ndescription: d\nallowed-tools:\n- Read\n- 'Write'\nmetadata:\n  version: 1.0.2\n  stars: 12",
      "name: a\ndescription: Ends in spaces  \n  before it goes on\nlicense: MIT",
      "name: a\ndescription:\n  Ends in spaces  \n  before it goes on",
    ]) {
      const { fast, slow } = bothWays(frontmatter);
      expect(fast.fields).toEqual(slow.fields);
      expect(fast.fields!.length).toBeGreaterThan(1);
    }
  });

  it("leaves values YAML reads as something else to the yaml package", () => {
    for (const [text, value] of [["true", true], ["False", false], ["null", null], ["12", 12], ["~", null]] as const) {
      const fields = parseSkillFile("SKILL.md", encode(`---\nname: a\ndescription: d\nflag: ${text}\n---\n`), false).fields!;
      expect(fields.find((field) => field.key === "flag")!.value).toBe(value);
    }
  });
});

// A build hands parsing the text of most files ready-made (cut from one string per group of files read ahead):
// an ASCII file without a carriage return, whose bytes are its text. It must parse as decoding the bytes does.
describe("long runs of blanks before a character `.` does not match (U+2028)", () => {
  // Each pattern tried its value after every shorter run of the blanks before it: 40,000 took 2 s, 300,000 minutes.
  const blanks = " ".repeat(300_000);
  it.each([
    ["a top-level value", `extra:${blanks}\u2028y`],
    ["a nested value", `metadata:\n  k:${blanks}\u2028y`],
    ["a list item", `tags:\n  -${blanks}\u2028y`],
    ["a value YAML misreads, before an error", `k:${blanks}x\u2028y: z\nbad: [`],
  ])("%s is read in linear time", (_, frontmatter) => {
    const started = performance.now();
    const parsed = parseSkillFile("SKILL.md", encode(`---\nname: x\ndescription: y\n${frontmatter}\n---\nBody\n`), false);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(parsed.fields !== undefined || parsed.findings.length > 0).toBe(true);
  });
});

describe("a text decoded ahead", () => {
  it("parses as the bytes do, fields, findings, positions and body", () => {
    const ascii = (text: string) => !/[^\x00-\x7f]|\r/.test(text);
    const bodyText = fc.array(fc.constantFrom("Body", " ", "\n", "\t", "---", "# Title", "[link](x.md)", "$ARGUMENTS", "\u0000"), { maxLength: 8 }).map((parts) => parts.join(""));
    fc.assert(
      fc.property(fc.array(line, { maxLength: 5 }), bodyText, fc.boolean(), fc.constantFrom("---\n", "", "---\n\n"), (lines, body, recover, opening) => {
        const text = `${opening}${lines.join("\n")}\n---\n${body}`;
        fc.pre(ascii(text));
        const bytes = encode(text);
        expect(parseSkillFile("SKILL.md", bytes, recover, bytes.byteLength, Buffer.from(bytes).toString("latin1"))).toEqual(parseSkillFile("SKILL.md", bytes, recover));
        expect(skillBody(bytes, text)).toBe(skillBody(bytes));
      }),
      { numRuns: 2000 },
    );
  });
});
