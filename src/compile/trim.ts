/**
 * `text` less the run of `chars` it ends in. A loop, not `/[…]+$/`: that pattern is tried from each character of a
 * long run that does not reach the end, which costs the square of the run.
 */
export function trimEnd(text: string, chars: string): string {
  let end = text.length;
  while (end > 0 && chars.includes(text[end - 1]!)) end--;
  return text.slice(0, end);
}
