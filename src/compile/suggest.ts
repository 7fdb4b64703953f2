/**
 * "Did you mean …?" for mistyped commands, flags and agent ids: the candidate at the smallest edit distance,
 * if it is close enough to be a typo rather than a different word.
 */
export function closest(input: string, candidates: readonly string[]): string | undefined {
  // One edit per three characters: "bild" → "build", "stirct" → "strict", but "deploy" suggests nothing.
  const limit = Math.max(1, Math.floor(input.length / 3));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    // The distance is at least the difference in length: a key of megabytes in a JSON config is no typo of a
    // setting's name, and comparing it with each (time and memory of the two lengths multiplied) took 16 s and 1.3 GB.
    if (Math.abs(candidate.length - input.length) > limit) continue;
    const distance = editDistance(input.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= limit ? best : undefined;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours each cost 1. */
export function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) distance = Math.min(distance, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = distance;
    }
  }
  return rows[a.length]![b.length]!;
}

/** ` Did you mean "x"?` or nothing, ready to append to a message. */
export function didYouMean(input: string, candidates: readonly string[], quote = (text: string) => `"${text}"`): string {
  const match = closest(input, candidates);
  return match === undefined ? "" : ` Did you mean ${quote(match)}?`;
}
