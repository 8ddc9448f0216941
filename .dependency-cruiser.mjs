// The import rules of docs/architecture.md, checked by `npm run check` (scripts/check.mjs).
// Layers, top to bottom: main -> runtime -> app -> registries (handlers.ts, tasks.ts) -> areas
// (server/<area>/, the reply engine server/replies/ among them) -> toolkit (http/, db/, events/,
// jobs/, providers/) -> config.

// An area: any folder of server/ that is not part of the toolkit.
const AREA = "^server/(?!(?:http|db|events|jobs|providers)/)[^/]+/";
const TOOLKIT = "^server/(http|db|events|jobs|providers)/";
// Above the areas: the entry, the runtime, the app and the registries of the areas (handlers,
// tasks, account-data sections).
const TOP = "^server/(main|runtime|app|handlers|tasks|account-sections)\\.ts$";


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
      name: "generated-types-only",
      comment: "generated/ is the contract's types: import it with `import type` only.",
      severity: "error",
      from: {},
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
      comment: "Within the service only main.ts starts the runtime (the CLI and the tests may too).",
      severity: "error",
      from: { path: "^server/", pathNot: "^server/main\\.ts$" },
      to: { path: "^server/runtime\\.ts$" },
    },
    {
      name: "app-only-from-runtime",
      severity: "error",
      from: { path: "^server/", pathNot: "^server/(main|runtime)\\.ts$" },
      to: { path: "^server/app\\.ts$" },
    },
    {
      name: "registries-only-from-app",
      comment: "The registries sit above the areas: only the app and the runtime read them (tasks.ts hands the account-data sections to the export and purge jobs).",
      severity: "error",
      from: { path: "^server/", pathNot: "^server/(main|runtime|app|tasks)\\.ts$" },
      to: { path: "^server/(handlers|tasks|account-sections)\\.ts$" },
    },
    {
      name: "areas-not-up",
      comment: "Areas do not reach above themselves.",
      severity: "error",
      from: { path: AREA },
      to: { path: TOP },
    },
    {
      name: "toolkit-not-up",
      comment: "The toolkit (http/, db/, events/, jobs/, providers/) knows no area and nothing above.",
      severity: "error",
      from: { path: TOOLKIT },
      to: { path: [AREA, TOP] },
    },
    {
      name: "db-providers-not-http-pipeline",
      comment: "db/ and providers/ may use the http toolkit's plain helpers (errors, paging), never its middleware or router.",
      severity: "error",
      from: { path: "^server/(db|providers)/" },
      to: { path: "^server/http/", pathNot: "^server/http/(errors|paging)\\.ts$" },
    },
    {
      name: "config-at-the-bottom",
      comment: "Settings are read once in config.ts, which depends on nothing of the service.",
      severity: "error",
      from: { path: "^server/config\\.ts$" },
      to: { path: "^server/" },
    },
    {
      name: "no-foreign-store",
      comment: "Areas talk through services: only an area's own modules import its stores.",
      severity: "error",
      from: { path: "^server/(?!(?:http|db|events|jobs|providers)/)([^/]+)/" },
      // store.ts, and the stores of a large area's parts (account-store.ts, usage-store.ts...).
      to: { path: "^server/.*store\\.ts$", pathNot: ["^server/$1/", TOOLKIT] },
    },
  ],
  options: {
    includeOnly: "^(server|sdk/src|cli|test|conformance|bench|scripts|generated)/",
    // Type-only imports count: a cycle through `import type` is still a cycle.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".mjs", ".js", ".d.ts"] },
  },
};
