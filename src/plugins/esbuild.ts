import { relative } from "node:path";
import type { PartialMessage, Plugin } from "esbuild";
import { escapeInvisible, escapeWorkflowCommands } from "../compile/terminal.js";
import { isVirtualId, unknownModuleMessage, VirtualSkills, type SkillsError, type SkillsPluginOptions, type SkillsUpdate } from "./virtual-modules.js";

export type { SkillsPluginOptions } from "./virtual-modules.js";

const NAMESPACE = "skillbake";

/**
 * `skillbake/esbuild`: resolves `virtual:skills` and `virtual:skills/<agent>` to modules compiled from the config in
 * memory, once per build (and rebuild, in watch mode: the files it read are watched, and the folders it listed for
 * files added or removed). An error in a skill fails the build with esbuild's own messages, each at its file, line
 * and column.
 */
export default function skills(options: SkillsPluginOptions = {}): Plugin {
  return {
    name: "skillbake",
    setup(build) {
      const root = build.initialOptions.absWorkingDir ?? process.cwd();
      const virtual = new VirtualSkills(options, root);
      let update: Promise<SkillsUpdate> | undefined;
      let reported = false;
      build.onDispose(() => virtual.save());
      build.onStart(() => {
        update = undefined; // compiled when a build first loads a virtual module
        reported = false;
      });
      build.onResolve({ filter: /^virtual:skills(\/|$)/ }, (args) => (isVirtualId(args.path) ? { path: args.path, namespace: NAMESPACE } : undefined));
      build.onLoad({ filter: /.*/, namespace: NAMESPACE }, async (args) => {
        const { failure, warnings, watch } = await (update ??= virtual.update());
        const watched = { watchFiles: watch.files, watchDirs: watch.folders };
        if (failure) {
          // Once per build, not once per virtual module: esbuild stops before linking the empty stand-ins.
          if (reported) return { contents: "", loader: "js", ...watched };
          reported = true;
          return { errors: failure.errors.map((error) => message(error, root)), ...watched };
        }
        const contents = virtual.module(args.path);
        if (contents === undefined) {
          return { errors: [{ text: unknownModuleMessage(args.path, virtual.ids()) }], ...watched };
        }
        return { contents, loader: "js", resolveDir: root, ...(warnings ? { warnings: [{ text: warnings }] } : {}), ...watched };
      });
    },
  };
}

/** An error as esbuild reports it: a path relative to the working folder, a 0-based byte column, the line quoted. */
function message(error: SkillsError, root: string): PartialMessage {
  // Escaped as a code frame is (esbuild prints the line raw); the column counts the escaped text.
  const quoted = (text: string) => escapeWorkflowCommands(escapeInvisible(text, { keepTabs: true }));
  const lineText = error.lineText === undefined ? undefined : quoted(error.lineText);
  const prefix = error.lineText?.slice(0, (error.column ?? 1) - 1) ?? "";
  return {
    text: error.text,
    ...(error.hint ? { notes: [{ text: error.hint }] } : {}),
    ...(error.file
      ? {
          location: {
            file: relative(root, error.file),
            ...(error.line ? { line: error.line, column: Buffer.byteLength(quoted(prefix)) } : {}),
            ...(lineText === undefined ? {} : { lineText }),
          },
        }
      : {}),
  };
}
