import { describe, expect, it } from "vitest";
import { optionalFields } from "../src/compile/model.js";

describe("allowed-tools", () => {
  const parse = (value: unknown) => optionalFields["allowed-tools"].parse(value);

  it("splits a string on spaces and commas, but not inside a tool's parentheses", () => {
    expect(parse("Read Grep, Bash(git log:*)  Bash(npm run test:*),Write")).toEqual(["Read", "Grep", "Bash(git log:*)", "Bash(npm run test:*)", "Write"]);
  });

  it("keeps a list as written", () => {
    expect(parse(["Bash(git status:*)", "Read"])).toEqual(["Bash(git status:*)", "Read"]);
  });

  it("rejects other types", () => {
    expect(optionalFields["allowed-tools"].safeParse(3).success).toBe(false);
  });
});
