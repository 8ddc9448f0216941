import { randomBytes } from "node:crypto";
import { defineConfig } from "vitest/config";

// The test suite in three lanes (docs/testing.md):
// - unit     `*.unit.test.ts`: no service, no database; each file in its own module graph.
// - service  `*.test.ts`: the service in-process. A worker runs its files in one module graph and
//            lends one service per settings to the files that need no fakes (test/support/service.ts).
// - e2e      `*.e2e.test.ts`: processes, clusters, tmux, browsers, crash and resilience.
// `npm test` runs unit and service; `npm run test:e2e` the third; CI runs all three on both
// database kinds. Which lane a file may be in is a lint rule (eslint.config.js).

// Names this run's PostgreSQL databases, so its teardown drops what the lent services leave.
process.env.PERSONA_TEST_RUN ??= randomBytes(4).toString("hex");

export default defineConfig({
  test: {
    // Walkthroughs chain dozens of calls and CLI tests spawn processes: on a busy 2-core runner 30 s
    // was missed by tests that were only slow. A real hang still fails, a minute later.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Most of a test's time is spent waiting on the database, timers and child processes, not
    // computing: three workers use a 2-core machine well.
    maxWorkers: 3,
    globalSetup: ["test/support/global-setup.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/**/*.unit.test.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "service",
          include: ["test/**/*.test.ts"],
          // An own exclude replaces vitest's default, which keeps out node_modules (test/clients has its own).
          exclude: ["**/node_modules/**", "test/**/*.unit.test.ts", "test/**/*.e2e.test.ts"],
          isolate: false,
          // A spy on a lent service's provider must not outlive its test.
          restoreMocks: true,
          env: { PERSONA_TEST_LANE: "service" },
        },
      },
      {
        extends: true,
        test: {
          name: "e2e",
          include: ["test/**/*.e2e.test.ts"],
        },
      },
    ],
  },
});
