import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Separate from the root config (which includes only test/**): this suite needs a running target
// chosen by BASE_URL, so `npm test` must never pick it up.
export default defineConfig({
  test: {
    root: fileURLToPath(new URL("..", import.meta.url)),
    include: ["conformance/**/*.test.ts"],
    globalSetup: ["conformance/support/global-setup.ts"],
    // Vite sets BASE_URL ("/") in the workers for its own use, so the target travels under another name.
    env: { CONFORMANCE_BASE_URL: process.env.CONFORMANCE_BASE_URL ?? process.env.BASE_URL ?? "" },
    // The files mostly wait on the target, so more of them run at once than there are cores, and
    // workers are reused (no isolation) so that the contract is parsed and compiled once per worker.
    maxWorkers: 4,
    isolate: false,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
});
