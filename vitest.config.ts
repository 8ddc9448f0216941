import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Most test time is spent waiting (child processes, the database, timers), not computing: three
    // files at once use a 2-core machine well. Each file starts its own service on its own database.
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
