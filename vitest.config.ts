import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Most test time is spent waiting (child processes, the database, timers), not computing: three
    // files at once use a 2-core machine well. Each file starts its own service on its own database.
    maxWorkers: 3,
    // Walkthroughs chain dozens of calls and CLI tests spawn processes: on a busy 2-core runner 30 s
    // was missed by tests that were only slow. A real hang still fails, a minute later.
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
