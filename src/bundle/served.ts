import { closeSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { clipLines } from "../compile/diagnostics.js";
import { escapeInvisible } from "../compile/terminal.js";
import { sha256Hex } from "../compile/resources.js";
import { openBundleFile } from "./emit.js";
import { manifestSchema } from "./manifest.js";

/**
 * A bundle `skills serve` cannot serve: none, one whose files are not those its manifest records (edited, or from
 * an interrupted copy), or one built without the agent's files. The CLI exits 2 with the message.
 */
export class BundleError extends Error {
  override name = "BundleError";

  /** Clipped (`clipLines`): it may name a field of a manifest a pull request committed. */
  constructor(message: string) {
    super(clipLines(message));
  }
}

/**
 * The module of `agent` (`agents/<id>.js`) in the bundle at `outDir`, as the bytes its manifest records, and the
 * skills it serves. Reads the bundle only, never a skill folder, and follows no link inside it; the manifest is
 * checked against its schema before any field of it is used.
 */
export function servedModule(outDir: string, agent: string): { source: Buffer; served: readonly string[] } {
  const manifest = manifestSchema().safeParse(parseJson(readBundleFile(outDir, "manifest.json")));
  if (!manifest.success) {
    const [issue] = manifest.error.issues;
    throw new BundleError(`${join(outDir, "manifest.json")} is not a manifest this version of skillbake reads${issue ? ` (${escapeInvisible(issue.path.join(".") || issue.message)})` : ""}; run \`skills build\` again`);
  }
  const { agents, hashes } = manifest.data;
  const entry = Object.hasOwn(agents, agent) ? agents[agent]! : undefined;
  if (!entry) {
    const ids = Object.keys(agents).map((id) => escapeInvisible(id)).join(", ");
    throw new BundleError(`the bundle in ${outDir} has no agent "${agent}"${ids ? ` (it has ${ids})` : ""}; check --agent, or run \`skills build\` after adding the agent`);
  }
  if (entry.files !== "embed") {
    throw new BundleError(`the bundle in ${outDir} does not hold the files of agent "${agent}"'s skills: set \`files: "embed"\` on the agent in the config, then run \`skills build\``);
  }
  const path = `agents/${agent}.js`;
  const source = readBundleFile(outDir, path);
  const recorded = Object.hasOwn(hashes.outputs, path) ? hashes.outputs[path] : undefined;
  if (recorded !== sha256Hex(source)) {
    throw new BundleError(`${join(outDir, path)} is not the module its manifest records (edited since, or left by another build); run \`skills build\` again`);
  }
  return { source, served: entry.served ?? [] };
}

/** A file of the bundle, read only when it is a regular file reached through folders alone. */
function readBundleFile(outDir: string, path: string): Buffer {
  const opened = openBundleFile(outDir, path);
  if ("missing" in opened) {
    throw new BundleError(path === "manifest.json" ? `there is no bundle in ${outDir} (no manifest.json); run \`skills build\` first` : `${join(outDir, path)} is missing; run \`skills build\` again`);
  }
  if ("notFollowed" in opened) throw new BundleError(`${join(outDir, path)} is ${opened.notFollowed}; run \`skills build\` again`);
  try {
    return readFileSync(opened.fd);
  } finally {
    closeSync(opened.fd);
  }
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch {
    return undefined;
  }
}
