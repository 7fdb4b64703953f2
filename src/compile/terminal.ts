// What text shown to a person needs, in a terminal, a CI log or a pull-request comment: untrusted text escaped,
// colour where the stream takes it. The CLI's reports and review's diff formats both use it.

/**
 * Control characters (tab and line feed aside), bidi controls (U+061C, U+200E–U+200F, U+202A–U+202E,
 * U+2066–U+2069: "Trojan Source") and Unicode tag characters (U+E0000–U+E007F: invisible text a model reads).
 * escapeInvisible shows these (and tab and line feed) escaped wherever output quotes a path, a name or a description.
 */
export const HIDDEN_CHARACTER = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u{e0000}-\u{e007f}]/u;

/** What a terminal would act on or hide rather than show: the hidden characters, plus tab and line feed. */
const INVISIBLE = new RegExp(`[\\t\\n]|${HIDDEN_CHARACTER.source}`, "gu");
const INVISIBLE_BUT_TAB = new RegExp(`\\n|${HIDDEN_CHARACTER.source}`, "gu");

/**
 * Escapes such characters JSON-style (`\n`, `\x1b`, `\u202e`) in text shown to a person that may quote a file
 * or folder name, a skill name or a description: a name on Linux may hold any of them, and printed raw it could
 * forge output lines or hide text in a terminal, a CI log or a pull-request comment. Other Unicode (é, 日本) is
 * kept as it is. `keepTabs` leaves tabs as they are in one line of quoted text (a code frame, whose caret line
 * copies them; a line of a diff): they only move text along.
 */
export function escapeInvisible(text: string, { keepTabs = false } = {}): string {
  return text.replace(keepTabs ? INVISIBLE_BUT_TAB : INVISIBLE, (char) => {
    const code = char.codePointAt(0)!;
    if (char === "\n") return "\\n";
    if (char === "\r") return "\\r";
    if (char === "\t") return "\\t";
    const hex = code.toString(16);
    return code <= 0xff ? `\\x${hex.padStart(2, "0")}` : code <= 0xffff ? `\\u${hex.padStart(4, "0")}` : `\\u{${hex}}`;
  });
}

/**
 * What a GitHub Actions runner reads as a workflow command: `::name …` at a line's start after any whitespace
 * (it trims Unicode whitespace, NEL included), and the older `##[name]` anywhere in a line. Printed from a skill,
 * `::error file=src/auth.ts::…` would be a forged annotation and `::add-mask::` or `::stop-commands::` would
 * tamper with the log.
 */
const LEGACY_COMMAND = /##\[/g;
const WHITESPACE = /[\s\x85]/;
const LINE_BREAK = /[\n\r\u2028\u2029]/;

/**
 * Escapes, visibly and JSON-style, what would make a line of text a workflow command: the first colon of a
 * leading `::` (`\x3a:error`) and the bracket of every `##[` (`##\x5b`). The CLI passes every line it prints
 * through this, so skill text cannot forge one wherever it lands in a line.
 */
export function escapeWorkflowCommands(text: string): string {
  let escaped = "";
  let kept = 0;
  for (let at = text.indexOf("::"); at !== -1; at = text.indexOf("::", at + 1)) {
    if (!atLineStart(text, at)) continue;
    escaped += `${text.slice(kept, at)}\\x3a`;
    kept = at + 1;
  }
  return (escaped + text.slice(kept)).replace(LEGACY_COMMAND, "##\\x5b");
}

/**
 * Whether only whitespace stands between `at` and the start of its line. Looked for backwards from each `::`, so
 * each run of whitespace is read once: a pattern anchored at every line start (`/^\s*:/m`) read a run of
 * blank lines again from each of them.
 */
function atLineStart(text: string, at: number): boolean {
  for (let index = at - 1; index >= 0; index--) {
    const char = text[index]!;
    if (LINE_BREAK.test(char)) return true;
    if (!WHITESPACE.test(char)) return false;
  }
  return true;
}

/**
 * The same for JSON text, losslessly: `##[` can only stand inside a string there, where `\u005b` is the same
 * bracket to a JSON parser; and no line of `JSON.stringify` output can begin with `::` (keys and strings are quoted).
 */
export function escapeWorkflowCommandsInJson(json: string): string {
  return json.replace(LEGACY_COMMAND, "##\\u005b");
}

export interface Style {
  red(text: string): string;
  yellow(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

/** Colour only on a TTY; NO_COLOR turns it off, FORCE_COLOR (other than 0) on. */
export function styleFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): Style {
  const force = env.FORCE_COLOR;
  const enabled = force !== undefined && force !== "" ? force !== "0" && force !== "false" : !env.NO_COLOR && stream.isTTY === true;
  const wrap = (open: number, close: number) => (text: string) => (enabled ? `\u001b[${open}m${text}\u001b[${close}m` : text);
  return { red: wrap(31, 39), yellow: wrap(33, 39), dim: wrap(2, 22), bold: wrap(1, 22) };
}

/**
 * What Markdown or GitHub would turn into something other than the text: every ASCII punctuation character (any
 * may be backslashed in CommonMark, and each of `* _ [ ] ( ) < > ! # | ~ & : .` and more starts some markup: a link,
 * an image, HTML such as `<details>` or an open `<!--`, an entity, a table cell, an autolinked URL), and what GitHub
 * links after rendering, in the text itself: an `@mention`, an issue reference (`#12`, `owner/repo#12`, `GH-12`).
 */
const MARKDOWN_SPECIAL = /(@)|(#)(?=\d)|(GH-)(?=\d)|[!-/:-@[-`{-~]/giu;

/**
 * Escapes untrusted text (a skill's name or description, a manifest's string, a diagnostic's message) for one line
 * of a Markdown page that GitHub renders, a pull-request comment or a job summary, where it reads as the same text
 * and nothing else: hidden characters and line breaks shown escaped as `escapeInvisible` does, punctuation
 * backslashed, and a zero-width space (`&#8203;`) after an `@` or before the number of an issue reference, so GitHub
 * neither notifies anyone nor links an issue. Not for code spans or fenced blocks, where nothing is markup.
 */
export function escapeMarkdown(text: string): string {
  return escapeInvisible(text).replace(MARKDOWN_SPECIAL, (char, at?: string, hash?: string, gh?: string) => {
    if (at) return "\\@&#8203;";
    if (hash) return "\\#&#8203;";
    if (gh) return `${gh.slice(0, 2)}\\-&#8203;`;
    return `\\${char}`;
  });
}
