import { resolve, sep } from "node:path";
import type { Plugin, ViteDevServer } from "vite";
import { failureMessage } from "../cli/commands/command.js";
import { affects, isVirtualId, unknownModuleMessage, VirtualSkills, type SkillsFailure, type SkillsPluginOptions, type SkillsUpdate } from "./virtual-modules.js";

export type { SkillsPluginOptions } from "./virtual-modules.js";

/** Rollup's convention for a module that is no file: the `\0` keeps other plugins from treating it as a path. */
const PREFIX = "\0";

/** Changes closer together than this are one: an editor's save, a `git checkout`. */
const QUIET_MS = 50;

/**
 * `skillbake/vite`: serves `virtual:skills` and `virtual:skills/<agent>`, compiled from the config in memory.
 * `vite build` fails on an error in a skill; the dev server recompiles on every change of a skill, a context file
 * or the config, reports an error in the terminal and the overlay, and goes on serving the last good modules.
 */
export default function skills(options: SkillsPluginOptions = {}): Plugin {
  let virtual: VirtualSkills | undefined;
  let building = false;
  /** The latest compilation: `load` waits for it, so a module is never older than the last change seen. */
  let latest: Promise<SkillsUpdate> | undefined;
  let server: ViteDevServer | undefined;
  /** The project root, which the dev server's watcher watches already. */
  let root = "";
  /** Paths given to the dev server's watcher: each is given once (chokidar walks and stats every path it is given). */
  const watched = new Set<string>();
  let timer: NodeJS.Timeout | undefined;

  return {
    name: "skillbake",
    enforce: "pre",
    configResolved(config) {
      building = config.command === "build";
      root = resolve(config.root);
      virtual = new VirtualSkills(options, config.root, !building);
    },
    configureServer(devServer) {
      server = devServer;
      devServer.watcher.on("all", (_event, path) => {
        if (!latest) return;
        void latest.then((update) => {
          if (affects(update.watch, path)) changedSince(devServer, [resolve(path)]);
        });
      });
    },
    async buildStart() {
      latest ??= compile();
      const update = await latest;
      if (update.failure && building) this.error(viteError(update.failure));
      if (update.warnings) this.warn(update.warnings);
      if (building) {
        // Written before Vite copies the public folder into the build, so a `publish` folder there ships with it.
        await virtual!.publish().catch((error: unknown) => {
          const message = failureMessage(error);
          if (message === undefined) throw error;
          this.error(`skillbake: ${message}`);
        });
      }
    },
    buildEnd() {
      virtual?.save(); // after a build, and when the dev server closes
    },
    resolveId(id) {
      return isVirtualId(id) ? PREFIX + id : undefined;
    },
    async load(id) {
      if (!id.startsWith(PREFIX) || !isVirtualId(id.slice(PREFIX.length))) return undefined;
      const update = await (latest ??= compile());
      const code = virtual!.module(id.slice(PREFIX.length));
      // Generated code has no source to map back to: an empty map spares Vite making one the size of the module.
      if (code !== undefined) return { code, map: { mappings: "" } };
      // Nothing good to serve yet (the first compilation failed), or an agent the config does not have.
      if (update.failure) this.error(viteError(update.failure));
      this.error(`skillbake: ${unknownModuleMessage(id.slice(PREFIX.length), virtual!.ids())}`);
    },
  };

  /** Compiles, and in dev tells the terminal and the overlay what failed. */
  async function compile(): Promise<SkillsUpdate> {
    const update = await virtual!.update();
    if (server) {
      // The server watches its root already: only what lies outside it is added.
      const unwatched = [...update.watch.files, ...update.watch.folders].filter((path) => !watched.has(path) && !isInside(path, root));
      for (const path of unwatched) watched.add(path);
      if (unwatched.length > 0) server.watcher.add(unwatched);
      if (update.failure) {
        server.config.logger.error(`[skillbake] ${update.failure.report}\nThe last good skills stay served.`, { timestamp: true });
        server.environments.client.hot.send({ type: "error", err: { ...viteError(update.failure), stack: "", plugin: "skillbake" } });
      }
    }
    return update;
  }

  /** Paths changed, compiled once the changes pause. */
  function changedSince(devServer: ViteDevServer, paths: readonly string[]): void {
    virtual!.noteChanges(paths);
    clearTimeout(timer);
    timer = setTimeout(() => void recompile(devServer), QUIET_MS);
  }

  /** After a change: a new compilation, and the modules it changed (and their importers) invalidated. */
  async function recompile(devServer: ViteDevServer): Promise<void> {
    // After the running compilation, even a failed one: the next change must still be compiled.
    latest = (latest ?? Promise.resolve()).catch(() => undefined).then(compile);
    const update = await latest;
    if (update.changed.length > 0) {
      for (const environment of Object.values(devServer.environments)) {
        for (const id of update.changed) {
          const module = environment.moduleGraph.getModuleById(PREFIX + id);
          if (module) environment.moduleGraph.invalidateModule(module);
        }
      }
      devServer.environments.client.hot.send({ type: "full-reload" });
    }
    // A change the server's watcher did not report (a path it ignores, say) is compiled next: looked for once the
    // server has had a moment to serve the new modules.
    setTimeout(() => {
      const missed = virtual!.missedChanges();
      if (missed.length > 0) changedSince(devServer, missed);
    }, QUIET_MS);
  }
}

function isInside(path: string, folder: string): boolean {
  return path.startsWith(folder.endsWith(sep) ? folder : folder + sep);
}

/** A Rollup error: the whole report as its message, located at the first error. */
function viteError(failure: SkillsFailure): { message: string; id?: string; loc?: { file: string; line: number; column: number } } {
  const first = failure.errors.find((error) => error.file);
  return {
    message: `skills check failed:\n\n${failure.report}`,
    ...(first?.file ? { id: first.file } : {}),
    ...(first?.file && first.line ? { loc: { file: first.file, line: first.line, column: first.column! } } : {}),
  };
}
