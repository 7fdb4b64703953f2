import { defineConfig } from "vitest/config";
import { runtimeText } from "./scripts/runtime-text.mjs";

export default defineConfig({
  // The bundle modules' runtime, compiled from src/runtime/helpers.ts as the CLI build compiles it.
  define: { __SKILLBAKE_RUNTIME__: JSON.stringify(runtimeText()) },
  test: {
    include: ["test/**/*.test.ts"],
    // End-to-end tests run dist/cli.js as a subprocess: build it from the current source first.
    globalSetup: ["test/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
