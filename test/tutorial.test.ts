/**
 * Runs the README's five-minute tutorial in a temporary project, step by step, as a new user would. The steps
 * come from the README itself, so the two cannot drift: a fenced block preceded by a marker comment is a step
 * (the vocabulary is in test/doc-steps.ts and docs/developing.md; test/docs-examples.test.ts runs the docs pages).
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commands, docSteps, INSTALL, Project, runStep, type Run } from "./doc-steps.js";
import { REPO } from "./helpers.js";

const readme = await readFile(join(REPO, "README.md"), "utf8");
const steps = docSteps(readme);

describe("the README tutorial", () => {
  it("has its steps marked: install, scaffold, a mistake and its fix, build, list, a server, CI and a diff", () => {
    const runs = steps.filter((step) => step.kind === "run").flatMap((step) => commands(step.text));
    expect(runs).toEqual(expect.arrayContaining(["npm init -y", INSTALL, "npx skills init", "npx skills check", "npx skills check --fix", "npx skills build", "npx skills list", "node server.mjs"]));
    expect(runs.some((command) => command.startsWith("npx skills diff"))).toBe(true);
    expect(steps.filter((step) => step.kind === "workflow")).toHaveLength(1);
  });

  let project: Project | undefined;
  let last: Run | undefined;
  for (const step of steps) {
    const what = step.kind === "file" ? step.argument : step.kind === "run" ? commands(step.text).join(" && ") : "";
    it(`README line ${step.line}: ${step.kind} ${what ?? ""}`.trimEnd(), async () => {
      if (step.kind === "project") project = undefined;
      // The tutorial starts in an empty folder: its own steps make package.json and install skillbake.
      project ??= await Project.create();
      last = await runStep(step, project, last);
    });
  }
});
