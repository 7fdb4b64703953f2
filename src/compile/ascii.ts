/**
 * `text` with each run of characters that `runs` (a global expression) matches \u-escaped, a character at a time:
 * runs of characters past ASCII in JSON text, which then reads as the same value (a surrogate pair escaped as its two
 * halves still makes the pair). One call a run, not a character (text past ASCII comes in words and sentences): ~4
 * times faster. The text between runs is joined on as it is, not through `replace`: ~1.5 times faster on bodies.
 */
export function escapeRuns(text: string, runs: RegExp): string {
  let escaped = "";
  forEachEscapedPiece(text, runs, (piece) => {
    escaped += piece;
  });
  return escaped;
}

/**
 * Hands `escapeRuns(text, runs)` to `put` a piece at a time, without joining them: each stretch between runs as it
 * is, each run escaped. `text` alone when nothing matches.
 */
export function forEachEscapedPiece(text: string, runs: RegExp, put: (piece: string) => void): void {
  let from = 0;
  runs.lastIndex = 0;
  for (let run = runs.exec(text); run !== null; run = runs.exec(text)) {
    if (run.index > from) put(text.slice(from, run.index));
    put(escapeRun(run[0]));
    from = runs.lastIndex;
  }
  if (from < text.length || from === 0) put(from === 0 ? text : text.slice(from));
}

function escapeRun(run: string): string {
  let escaped = "";
  for (let index = 0; index < run.length; index++) {
    const code = run.charCodeAt(index);
    escaped += (code < 0x100 ? "\\u00" : code < 0x1000 ? "\\u0" : "\\u") + code.toString(16);
  }
  return escaped;
}
