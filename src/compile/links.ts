import packageJson from "../../package.json" with { type: "json" };
import { PACKAGE_VERSION } from "./version.js";

/** package.json's `repository`, as npm accepts it: `"owner/repo"`, `"github:owner/repo"` or `{ url }`. */
type Repository = string | { url?: string } | undefined;

/**
 * The web address of the repository named in package.json (`https://github.com/owner/repo`), or undefined when
 * it names none or one skillbake cannot turn into a web address.
 */
export function repositoryUrl(repository: Repository): string | undefined {
  const spec = typeof repository === "string" ? repository : repository?.url;
  if (!spec) return undefined;
  const shorthand = /^(?:github:)?([\w.-]+\/[\w.-]+)$/.exec(spec);
  if (shorthand) return `https://github.com/${shorthand[1]!.replace(/\.git$/, "")}`;
  const url = /^(?:git\+)?(https:\/\/[^\s#]+?)(?:\.git)?(?:#.*)?$/.exec(spec);
  return url?.[1];
}

/**
 * The base of every link skillbake writes (SARIF's `helpUri` and `informationUri`, a rule's docs): the
 * repository named in package.json, and its `docs/` folder at this version's tag. Until package.json names a
 * repository no address resolves (the package is not on a registry), so outputs carry no link rather than a
 * dead one.
 */
export const REPOSITORY_URL: string | undefined = repositoryUrl((packageJson as { repository?: Repository }).repository);
export const DOCS_URL: string | undefined = docsUrl(REPOSITORY_URL, PACKAGE_VERSION);

export function docsUrl(repository: string | undefined, version: string): string | undefined {
  return repository && `${repository}/blob/v${version}/docs/`;
}

/** The address of one docs page (`diagnostics.md`, `diagnostics.md#yaml-invalid`), if there is a docs address. */
export function docsLink(page: string): string | undefined {
  return DOCS_URL && `${DOCS_URL}${page}`;
}

/**
 * The address of one docs page for a reader to follow: on the web once there is a docs address, else the page's
 * path in the repository, which the installed package ships too (`docs/diagnostics.md#yaml-invalid`).
 */
export function docsAddress(page: string): string {
  return docsLink(page) ?? `docs/${page}`;
}
