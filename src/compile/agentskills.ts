/**
 * `preset: "agentskills"`: the Agent Skills specification's rules, checked as its reference validator (skills-ref,
 * agentskills/agentskills) checks them, so a catalogue gets the same verdicts there and here. Its reading differs
 * from skillbake's own: the frontmatter is the text between the first two `---` anywhere in the file, read as
 * strictyaml does (every value is text; flow collections `[a, b]` `{a: b}`, anchors, aliases and tags are
 * refused), and only `name`, `description`, `license`, `allowed-tools`, `metadata` and `compatibility` are
 * allowed. Each finding is `agentskills-invalid`, in the reference validator's words.
 */
import { isAlias, isCollection, isMap, isScalar, LineCounter, parseDocument, visit, type Node } from "yaml";
import type { Finding } from "./diagnostics.js";
import type { Position } from "./parse.js";

const ALLOWED_FIELDS = ["allowed-tools", "compatibility", "description", "license", "metadata", "name"];
const MAX_NAME_LENGTH = 64;
const MAX_DESCRIPTION_LENGTH = 1024;
const MAX_COMPATIBILITY_LENGTH = 500;

/** The reference validator's errors for one SKILL.md (`text` as read, CRLF and all) in the folder `folderName`. */
export function agentSkillsFindings(file: string, folderName: string, text: string): Finding[] {
  const finding = (message: string, at: Position = { line: 1, column: 1 }): Finding => ({
    code: "agentskills-invalid",
    file,
    ...at,
    message: `Agent Skills specification: ${message}`,
    hint: "The Agent Skills reference validator (skills-ref) refuses this; see the specification at agentskills.io.",
  });
  // Python reads text with universal newlines.
  const content = text.replace(/\r\n?/g, "\n");
  if (!content.startsWith("---")) return [finding("SKILL.md must start with YAML frontmatter (---)")];
  const close = content.indexOf("---", 3);
  if (close < 0) return [finding("SKILL.md frontmatter not properly closed with ---")];
  const source = content.slice(3, close);
  const lineCounter = new LineCounter();
  const doc = parseDocument(source, { schema: "failsafe", uniqueKeys: true, lineCounter, logLevel: "silent" });
  const at = (node: unknown): Position | undefined => {
    const offset = (node as { range?: [number] } | null | undefined)?.range?.[0];
    if (offset === undefined) return undefined;
    const { line, col } = lineCounter.linePos(offset);
    return { line: line + 1 + (content.slice(0, 3).includes("\n") ? 1 : 0), column: col };
  };
  const strictError = doc.errors[0] ? { node: undefined, message: doc.errors[0].message.split("\n")[0]! } : notStrict(doc.contents);
  if (strictError) return [finding(`invalid YAML in frontmatter: ${strictError.message}`, at(strictError.node))];
  if (!isMap(doc.contents)) return [finding("SKILL.md frontmatter must be a YAML mapping")];

  const fields = new Map<string, { value: unknown; key: Node }>();
  for (const pair of doc.contents.items) if (isScalar(pair.key)) fields.set(String(pair.key.value), { value: (pair.value as Node | null)?.toJSON() ?? "", key: pair.key });
  const findings: Finding[] = [];
  const extra = [...fields.keys()].filter((key) => !ALLOWED_FIELDS.includes(key)).sort();
  if (extra.length > 0) findings.push(finding(`unexpected fields in frontmatter: ${extra.join(", ")}; only ${ALLOWED_FIELDS.join(", ")} are allowed`, at(fields.get(extra[0]!)!.key)));

  const name = fields.get("name");
  if (!name) findings.push(finding("missing required field in frontmatter: name"));
  else for (const message of nameErrors(name.value, folderName)) findings.push(finding(message, at(name.key)));

  const description = fields.get("description");
  if (!description) findings.push(finding("missing required field in frontmatter: description"));
  else if (typeof description.value !== "string" || description.value.trim() === "") findings.push(finding("field 'description' must be a non-empty string", at(description.key)));
  else if ([...description.value].length > MAX_DESCRIPTION_LENGTH) findings.push(finding(`description exceeds ${MAX_DESCRIPTION_LENGTH} character limit (${[...description.value].length} chars)`, at(description.key)));

  const compatibility = fields.get("compatibility");
  if (compatibility && typeof compatibility.value !== "string") findings.push(finding("field 'compatibility' must be a string", at(compatibility.key)));
  else if (compatibility && [...(compatibility.value as string)].length > MAX_COMPATIBILITY_LENGTH) {
    findings.push(finding(`compatibility exceeds ${MAX_COMPATIBILITY_LENGTH} character limit (${[...(compatibility.value as string)].length} chars)`, at(compatibility.key)));
  }
  return findings;
}

/** What strictyaml refuses in a document YAML reads: a flow collection, an anchor, an alias or a tag. */
function notStrict(contents: unknown): { node: unknown; message: string } | undefined {
  let found: { node: unknown; message: string } | undefined;
  visit(contents as Node, (_key, node) => {
    if (isAlias(node)) found = { node, message: "aliases (*name) are not allowed" };
    else if (isCollection(node) && node.flow) found = { node, message: "flow style ([…] or {…}) is not allowed" };
    else if ((isScalar(node) || isCollection(node)) && node.anchor) found = { node, message: "anchors (&name) are not allowed" };
    else if ((isScalar(node) || isCollection(node)) && node.tag) found = { node, message: "tags (!name) are not allowed" };
    return found ? visit.BREAK : undefined;
  });
  return found;
}

/** The reference validator's checks of a name, in its order. */
function nameErrors(value: unknown, folderName: string): string[] {
  if (typeof value !== "string" || value.trim() === "") return ["field 'name' must be a non-empty string"];
  const name = value.trim().normalize("NFKC");
  const errors: string[] = [];
  if ([...name].length > MAX_NAME_LENGTH) errors.push(`skill name '${name}' exceeds ${MAX_NAME_LENGTH} character limit (${[...name].length} chars)`);
  if (name !== name.toLowerCase()) errors.push(`skill name '${name}' must be lowercase`);
  if (name.startsWith("-") || name.endsWith("-")) errors.push("skill name cannot start or end with a hyphen");
  if (name.includes("--")) errors.push("skill name cannot contain consecutive hyphens");
  if (!/^[\p{L}\p{N}-]*$/u.test(name)) errors.push(`skill name '${name}' contains invalid characters; only letters, digits and hyphens are allowed`);
  if (folderName.normalize("NFKC") !== name) errors.push(`directory name '${folderName}' must match skill name '${name}'`);
  return errors;
}
