/**
 * `text` with each run of characters that `runs` (a global expression) matches \u-escaped, a character at a time:
 * runs of characters past ASCII in JSON text, which then reads as the same value (a surrogate pair escaped as its two
 * halves still makes the pair). One call a run, not a character (text past ASCII comes in words and sentences): ~4
 * times faster. The text between runs is joined on as it is, not through `replace`: ~1.5 times faster on bodies.
 */
export function escapeRuns(text: string, runs: RegExp): string {
  let escaped = "";
  let from = 0;
  runs.lastIndex = 0;
  for (let run = runs.exec(text); run !== null; run = runs.exec(text)) {
    escaped += text.slice(from, run.index) + escapeRun(run[0]);
    from = runs.lastIndex;
  }
  return from === 0 ? text : escaped + text.slice(from);
}

/**
 * `escapeRuns` of JSON text with `runs` (a global expression of characters past ASCII) as ASCII bytes, each
 * stretch between runs written straight into the buffer: a cache payload of megabytes holds a few hundred runs, and
 * a string made of them all would be copied twice more.
 */
export function escapedBytes(text: string, runs: RegExp): Buffer {
  const found: { index: number; end: number; escaped: string }[] = [];
  let length = text.length;
  runs.lastIndex = 0;
  for (let run = runs.exec(text); run !== null; run = runs.exec(text)) {
    const escaped = escapeRun(run[0]);
    found.push({ index: run.index, end: runs.lastIndex, escaped });
    length += escaped.length - run[0].length;
  }
  const bytes = Buffer.allocUnsafe(length);
  let at = 0;
  let from = 0;
  for (const { index, end, escaped } of found) {
    at += bytes.write(text.slice(from, index), at, "latin1");
    at += bytes.write(escaped, at, "latin1");
    from = end;
  }
  bytes.write(text.slice(from), at, "latin1");
  return bytes;
}

function escapeRun(run: string): string {
  let escaped = "";
  for (let index = 0; index < run.length; index++) {
    const code = run.charCodeAt(index);
    escaped += (code < 0x100 ? "\\u00" : code < 0x1000 ? "\\u0" : "\\u") + code.toString(16);
  }
  return escaped;
}
