import Ajv2020Module from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { configJsonSchema, configSchemas } from "../src/compile/config.js";

const Ajv2020 = Ajv2020Module.default ?? Ajv2020Module;
const validate = new Ajv2020({ strict: false }).compile(configJsonSchema());

const agent = { skills: [{ root: "skills" }] };

// `skills schema config` describes what a JSON config may hold; a function format, which JSON cannot hold, is
// left out. Everything else must be judged as the zod config schema judges it.
const CASES: [string, unknown, boolean][] = [
  ["the minimal config", { agents: { main: agent } }, true],
  [
    "every setting of the skill model",
    {
      stage: true,
      descriptionFallback: "first-paragraph",
      format: "markdown",
      agents: { main: { ...agent, format: "pi", budget: 16000, duplicates: "last", allow: ["api-*", "!api-lint"], context: ["agent-context/*.md"], description: "Main" } },
    },
    true,
  ],
  ["an unknown format", { format: "html", agents: { main: agent } }, false],
  ["a zero budget", { agents: { main: { ...agent, budget: 0 } } }, false],
  ["a fractional budget", { agents: { main: { ...agent, budget: 10.5 } } }, false],
  ["an unknown duplicates policy", { agents: { main: { ...agent, duplicates: "merge" } } }, false],
  ["allow as a string", { agents: { main: { ...agent, allow: "*" } } }, false],
  ["a descriptionFallback other than first-paragraph", { descriptionFallback: "body", agents: { main: agent } }, false],
  ["stage as a string", { stage: "yes", agents: { main: agent } }, false],
];

describe("skills schema config", () => {
  it.each(CASES)("judges %s as the compiler does", (_name, config, valid) => {
    expect(configSchemas().config.safeParse(config).success).toBe(valid);
    expect(validate(config)).toBe(valid);
  });

  it("offers the named formats, and documents that a TS or JS config may give a function", () => {
    const schema = configJsonSchema() as { properties: { format: { enum: string[]; description: string } } };
    expect(schema.properties.format.enum).toEqual(["pi", "markdown"]);
    expect(schema.properties.format.description).toContain("function");
  });

  it("while the config schema itself accepts a function format", () => {
    expect(configSchemas().config.safeParse({ format: () => "prompt", agents: { main: { ...agent, format: () => "prompt" } } }).success).toBe(true);
  });
});
