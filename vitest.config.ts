import { defineConfig } from "vitest/config";
import { embeddedTexts } from "./scripts/embedded-text.mjs";

export default defineConfig({
  // The bundle modules' runtime and the hashing worker's script, compiled as the CLI build compiles them.
  define: embeddedTexts(),
  test: {
    include: ["test/**/*.test.ts"],
    // End-to-end tests run dist/cli.js as a subprocess: build it from the current source first.
    globalSetup: ["test/global-setup.ts"],
    // The tests run as on a developer's machine wherever they run: in CI a build writes no cache where it found
    // none, which tests that set CI themselves check.
    env: { CI: "" },
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
