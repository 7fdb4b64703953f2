import { defineConfig } from "skillbake";

// The repo's own catalogue, built by `npx skills build` into dist/skills/.
export default defineConfig({
  agents: {
    // A coding agent: every skill listed in the catalogue, the commit skill inlined whole.
    coding: {
      skills: [{ root: "skills", available: ["*", "!git-commit"], inline: ["git-commit"] }],
    },
    // A review bot: only review and security skills, the review checklist always in the prompt.
    review: {
      skills: [{ root: "skills", available: ["security-audit", "debug-failing-test"], inline: ["code-review"] }],
    },
  },
});
