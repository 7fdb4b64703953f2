import { describe, expect, it } from "vitest";
import { REPO, runCli } from "./helpers.js";

// Issue 2's first "Done when": the repo's own catalogue (skills/, skills.config.ts) is what `npx skills build` compiles on a fresh clone.
describe("the repo's example catalogue", () => {
  it("checks clean with --strict, with two agents that use available and inline", async () => {
    const run = await runCli(["list", "--format", "json"], { cwd: REPO });
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as { errors: number; warnings: number; agents: { id: string; skills: { mode: string; file: string }[] }[] };
    expect(report).toMatchObject({ errors: 0, warnings: 0 });
    expect(report.agents).toHaveLength(2);
    for (const agent of report.agents) expect(new Set(agent.skills.map((skill) => skill.mode))).toEqual(new Set(["available", "inline"]));
    expect(new Set(report.agents.flatMap((agent) => agent.skills.map((skill) => skill.file))).size).toBeGreaterThanOrEqual(4);
    expect((await runCli(["check", "--strict"], { cwd: REPO })).code).toBe(0);
  });
});
