// The import rules of docs/architecture.md, checked by `npm run check` (scripts/check.mjs).
// Layers, top to bottom: main -> runtime -> app -> areas.ts (the one list of areas) -> areas
// (server/areas/<area>/, each reached only through its index.ts) -> quota (server/quota/: plans,
// usage counters, leases) -> toolkit (server/toolkit/: config, logger, services, http/, db/,
// events/, jobs/, providers/). test/foundation/import-rules.test.ts shows each rule failing on a
// violation.

const AREA = "^server/areas/[^/]+/";
const TOOLKIT = "^server/toolkit/";
const QUOTA = "^server/quota/";
// Above the areas: the entry, the runtimes (the server's, and the operator commands' without
// listener or worker), the app and the list of areas.
const TOP = "^server/(main|runtime|admin-runtime|app|areas|process)\\.ts$";

/** @type {import("dependency-cruiser").IConfiguration} */
export default {
  forbidden: [
    {
      name: "no-circular",
      comment: "No import cycles, not even through type-only imports.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "no-circular-areas",
      comment: "Areas form no cycle at folder level either: one area uses another, never both ways.",
      severity: "error",
      scope: "folder",
      from: { path: "^server/areas/[^/]+$" },
      to: { circular: true },
    },
    {
      name: "generated-types-only",
      comment: "generated/ is the contract's types: import it with `import type` only (the compiled request validators are for server/toolkit/http/validator.ts, the response validators for response-validator.ts).",
      severity: "error",
      from: { pathNot: "^server/toolkit/http/(response-)?validator\\.ts$" },
      to: { path: "^generated/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "server-not-tooling",
      comment: "The service never imports the tests, the CLI, the benchmarks, the conformance suite or scripts.",
      severity: "error",
      from: { path: "^server/" },
      to: { path: "^(test|cli|bench|conformance|scripts)/" },
    },
    {
      name: "sdk-self-contained",
      comment: "The published SDK holds only its own sources and the contract's types.",
      severity: "error",
      from: { path: "^sdk/src/" },
      to: { path: "^(?!sdk/src/|generated/|node_modules/)" },
    },
    {
      name: "main-is-the-entry",
      comment: "Nothing in the service imports its entry point.",
      severity: "error",
      from: { path: "^server/" },
      to: { path: "^server/main\\.ts$" },
    },
    {
      name: "runtime-only-from-main",
      comment: "Within the service only main.ts starts the runtime (the CLI and the tests may too); the operator commands' runtime takes its process registries.",
      severity: "error",
      from: { path: "^server/", pathNot: "^server/(main|admin-runtime)\\.ts$" },
      to: { path: "^server/runtime\\.ts$" },
    },
    {
      name: "app-only-from-runtime",
      severity: "error",
      from: { path: "^server/", pathNot: "^server/(main|runtime)\\.ts$" },
      to: { path: "^server/app\\.ts$" },
    },
    {
      name: "area-list-only-from-the-top",
      comment: "server/areas.ts sits above the areas: only the app and the runtime read it.",
      severity: "error",
      from: { path: "^server/", pathNot: "^server/(main|runtime|app)\\.ts$" },
      to: { path: "^server/areas\\.ts$" },
    },
    {
      name: "area-public-surface",
      comment: "Another area is reached through its index.ts only; its other files are its own.",
      severity: "error",
      from: { path: "^server/areas/([^/]+)/" },
      to: { path: "^server/areas/", pathNot: ["^server/areas/$1/", "^server/areas/[^/]+/index\\.ts$"] },
    },
    {
      name: "area-index-not-from-inside",
      comment: "An area's own files import each other directly, never their index.ts (it would tie the area in a loop).",
      severity: "error",
      from: { path: "^server/areas/([^/]+)/" },
      to: { path: "^server/areas/$1/index\\.ts$" },
    },
    {
      name: "areas-not-up",
      comment: "Areas do not reach above themselves.",
      severity: "error",
      from: { path: AREA },
      to: { path: TOP },
    },
    {
      name: "quota-below-the-areas",
      comment: "quota/ (plans, usage counters, leases) imports only the toolkit: every area may count against a plan.",
      severity: "error",
      from: { path: QUOTA },
      to: { path: "^server/", pathNot: [QUOTA, TOOLKIT] },
    },
    {
      name: "toolkit-not-up",
      comment: "The toolkit knows no area, no quota and nothing above.",
      severity: "error",
      from: { path: TOOLKIT },
      to: { path: "^server/", pathNot: TOOLKIT },
    },
    {
      name: "db-providers-not-http-pipeline",
      comment: "db/ and providers/ may use the http toolkit's plain helpers (errors, paging), never its middleware or router.",
      severity: "error",
      from: { path: "^server/toolkit/(db|providers)/" },
      to: { path: "^server/toolkit/http/", pathNot: "^server/toolkit/http/(errors|paging)\\.ts$" },
    },
    {
      name: "unit-lane-no-service",
      comment: "A unit test (*.unit.test.ts) starts no service and opens no database, not even through a helper (docs/testing.md).",
      severity: "error",
      from: { path: "\\.unit\\.test\\.ts$" },
      to: { path: "^(test/support/(service|database|processes|browser)\\.ts|server/(main|runtime|admin-runtime)\\.ts|server/toolkit/db/(database|embedded)\\.ts)$", reachable: true },
    },
    {
      name: "service-lane-no-processes",
      comment: "A service-lane test runs the service in-process: child processes, terminals and browsers belong to *.e2e.test.ts (docs/testing.md).",
      severity: "error",
      from: { path: "^test/.*\\.test\\.ts$", pathNot: "\\.(unit|e2e)\\.test\\.ts$" },
      to: { path: "^test/(support/(processes|browser)\\.ts|cli/(run-cli|tmux)\\.ts|resilience/support\\.ts)$", reachable: true },
    },
    {
      name: "config-at-the-bottom",
      comment: "Settings are read once in config.ts, which depends on nothing of the service.",
      severity: "error",
      from: { path: "^server/toolkit/config\\.ts$" },
      to: { path: "^server/" },
    },
  ],
  options: {
    // Folder-level rules (no-circular-areas) are checked on the folders' metrics.
    metrics: true,
    includeOnly: "^(server|sdk/src|cli|test|conformance|bench|scripts|generated)/",
    // test/clients is an npm package of its own (the real client libraries): its node_modules are not ours.
    exclude: { path: "/node_modules/" },
    // Type-only imports count: a cycle through `import type` is still a cycle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".mjs", ".js", ".d.ts"] },
  },
};
