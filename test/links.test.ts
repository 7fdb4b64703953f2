/**
 * Links in what skillbake writes resolve, or are not written: they come from package.json's `repository`, the one
 * place to set (src/compile/links.ts), and a manifest names the schema its installed package ships by a path.
 */
import { describe, expect, it } from "vitest";
import { docsUrl, repositoryUrl } from "../src/compile/links.js";
import { manifestSchemaPath } from "../src/bundle/manifest.js";

describe("the links skillbake writes", () => {
  it("take the repository's web address from package.json in each form npm accepts, and nothing else", () => {
    for (const repository of ["acme/skillbake", "github:acme/skillbake", "git+https://github.com/acme/skillbake.git", { url: "https://github.com/acme/skillbake" }, { url: "git+https://github.com/acme/skillbake.git#main" }]) {
      expect(repositoryUrl(repository), JSON.stringify(repository)).toBe("https://github.com/acme/skillbake");
    }
    for (const repository of [undefined, "", {}, "git@github.com:acme/skillbake.git", "ssh://git@github.com/acme/skillbake"]) {
      expect(repositoryUrl(repository), JSON.stringify(repository)).toBeUndefined();
    }
  });

  it("point at the repository's docs at this version's tag, or nowhere", () => {
    expect(docsUrl("https://github.com/acme/skillbake", "1.2.3")).toBe("https://github.com/acme/skillbake/blob/v1.2.3/docs/");
    expect(docsUrl(undefined, "1.2.3")).toBeUndefined();
  });

  it("name the manifest's schema in the package installed beside the config, relative to the manifest", () => {
    expect(manifestSchemaPath("/repo/dist/skills", "/repo")).toBe("../../node_modules/skillbake/dist/manifest.schema.json");
    expect(manifestSchemaPath("/repo/app/out", "/repo/app")).toBe("../node_modules/skillbake/dist/manifest.schema.json");
    expect(manifestSchemaPath("/elsewhere/bundle", "/repo")).toBe("../../repo/node_modules/skillbake/dist/manifest.schema.json");
  });
});
