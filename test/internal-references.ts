/**
 * The words that mark a reference to the team's own history rather than to the product: its design notes
 * ("seed 001", "the seed designs"), issues ("issue 16"), sections of its internal contract ("SPEC §6"), rounds
 * of work ("this round") and stops. "Seed" is allowed only as a random seed (the fuzz tests'), "§" only apart
 * from the contract's name.
 */
const FORBIDDEN: readonly RegExp[] = [
  /(?<!\brandom )\bseeds?\b/gi,
  /\bissues? #?\d/gi,
  /\bspec(?:\.md)?\b *§|\bSPEC\.md\b/gi,
  /\b(?:this|last|next|previous|earlier|later) rounds?\b/gi,
  /\bstops? \d/gi,
];

export const forbiddenWords = FORBIDDEN.map(String).join(", ");

/** Each forbidden word in `text`, as `LINE: the line`. */
export function internalReferences(text: string): string[] {
  const hits: string[] = [];
  const lines = text.split("\n");
  for (const [index, line] of lines.entries()) {
    if (FORBIDDEN.some((word) => line.search(word) >= 0)) hits.push(`${index + 1}: ${line.trim().slice(0, 160)}`);
  }
  return hits;
}
