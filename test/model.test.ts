import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { OPTIONAL_FIELD_NAMES, optionalFields, plainFieldValue } from "../src/compile/model.js";

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

describe("optional fields told by their type", () => {
  it("accept only what zod accepts, with the data zod gives; and every string, boolean, list and map of strings that zod accepts", () => {
    const text = fc.string({ unit: fc.constantFrom("a", " ", "é", "\u0000", "\ud800"), maxLength: 600 });
    const value = fc.oneof(
      fc.anything({ withNullPrototype: true, withSparseArray: true, withBoxedValues: true }),
      text,
      fc.constantFrom("inline", "fork", "Inline", "", true, false, 0, null, "x".repeat(500), "x".repeat(501), ["a", 1], { a: "b", c: 2 }),
      fc.array(text, { maxLength: 3 }),
      fc.dictionary(fc.constantFrom("author", "__proto__", "constructor", "a"), fc.oneof(text, fc.integer()), { maxKeys: 3 }),
    );
    fc.assert(
      fc.property(fc.constantFrom(...OPTIONAL_FIELD_NAMES), value, (key, input) => {
        const byZod = optionalFields[key].safeParse(input);
        const byType = plainFieldValue(key, input);
        if (byType) expect(byZod).toEqual({ success: true, data: byType.data });
        const plain = typeof input === "string" || typeof input === "boolean" || (Array.isArray(input) && input.every((item) => typeof item === "string"));
        if (byZod.success && plain && key !== "allowed-tools") expect(byType).toBeDefined();
      }),
      { numRuns: 5000 },
    );
  });
});
