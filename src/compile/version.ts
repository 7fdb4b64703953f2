import packageJson from "../../package.json" with { type: "json" };

/** What `skills --version` prints. */
export const PACKAGE_VERSION: string = packageJson.version;

/** Set by scripts/build-cli.mjs: a digest of the sources the bundle was built from. */
declare const __SKILLBAKE_BUILD__: string | undefined;

/**
 * The tool's identity for caches: the package version and, for a bundle, a digest of its sources, so a cache
 * written by other code (another release, or a local change rebuilt under the same version) is never reused.
 */
export const TOOL_VERSION = `${PACKAGE_VERSION}+${typeof __SKILLBAKE_BUILD__ === "string" ? __SKILLBAKE_BUILD__ : "source"}`;
