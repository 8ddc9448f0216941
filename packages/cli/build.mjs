#!/usr/bin/env node
// Builds the installable CLI package into packages/cli/dist: the repository's `persona` command
// (cli/persona.ts) bundled by esbuild into one file with everything it imports (commander, the SDK
// and its two dependencies), so the package has no dependencies and starts without resolving any
// module. Two modules differ from the repository's:
// - cli/edition.ts becomes src/edition.ts (the package's version, the contract next to the bundle,
//   and the client edition's help);
// - every module of the server (server/, and the CLI's own modules that open the data dir) becomes
//   src/needs-server.ts, which ends the command that loads it with a message saying so. The commands
//   that need them load them on use, so nothing else pays for them; the build fails if a module of
//   the server would be loaded otherwise, or bundled for real beyond the few pure ones listed here.
// Also writes dist/openapi.json (the contract, which `persona api` and the options' choices read at
// run time) and dist/THIRD_PARTY_LICENSES.txt (the licences of the bundled packages).
//   node packages/cli/build.mjs            (npm run cli:build; `npm pack` in packages/cli runs it first)
//   node packages/cli/build.mjs --analyze  also prints what the bundle is made of, largest first
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { builtinModules } from "node:module";
import process from "node:process";
import { parseArgs } from "node:util";
import { analyzeMetafile, build } from "esbuild";

const { values: args } = parseArgs({ options: { analyze: { type: "boolean", default: false } } });
const pkg = resolve(import.meta.dirname);
const root = resolve(pkg, "..", "..");
const dist = join(pkg, "dist");
const manifest = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8"));

/** Modules of server/ the client commands use at start-up: data only, importing nothing at run time. */
const PURE_SERVER_MODULES = new Set(["server/quota/plans.ts", "server/areas/auth/scopes.ts"]);
/**
 * The CLI's own modules that start the server or open its database or data dir: cli/cluster.ts and
 * cli/internals/, but for cli/internals/database.ts, which the server's commands import at start-up
 * and which loads the server only on use.
 */
const serverSideCli = (file) => file === "cli/cluster.ts" || (file.startsWith("cli/internals/") && file !== "cli/internals/database.ts");
/** Packages only the server's side of the CLI loads (cli/internals/database.ts: the migrate command's log). */
const SERVER_SIDE_PACKAGES = new Set(["pino"]);
const NEEDS_SERVER = join(pkg, "src", "needs-server.ts");

const fromRoot = (path) => relative(root, path).split(sep).join("/");
const needsServer = (path) => {
  const file = fromRoot(path);
  return (file.startsWith("server/") && !PURE_SERVER_MODULES.has(file)) || serverSideCli(file);
};

/** The package's two substitutions, by the resolved path of what is imported. */
const substitutions = {
  name: "persona-cli-substitutions",
  setup(on) {
    on.onResolve({ filter: /^[^./]/ }, (args) => (SERVER_SIDE_PACKAGES.has(args.path) ? { path: args.path, namespace: "needs-server" } : undefined));
    on.onResolve({ filter: /^\.\.?\// }, (args) => {
      if (!args.importer) return undefined;
      const path = resolve(args.resolveDir, args.path);
      if (path === join(root, "cli", "edition.ts")) return { path: join(pkg, "src", "edition.ts") };
      // One namespace per module replaced, so that the metafile tells which one each import was.
      if (needsServer(path)) return { path: fromRoot(path), namespace: "needs-server" };
      return undefined;
    });
    // Each one a module of its own (not one shared module): each then ends the command at its first load.
    on.onLoad({ filter: /.*/, namespace: "needs-server" }, () => ({
      contents: readFileSync(NEEDS_SERVER, "utf8"),
      loader: "ts",
      resolveDir: dirname(NEEDS_SERVER),
    }));
  },
};

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

const result = await build({
  entryPoints: [join(root, "cli", "persona.ts")],
  outfile: join(dist, "persona.js"),
  // The metafile's paths are then the repository's, whatever directory the build runs from.
  absWorkingDir: root,
  bundle: true,
  platform: "node",
  format: "esm",
  // The oldest Node the package declares (engines): esbuild lowers the syntax; the code uses no
  // newer runtime API (the package test runs it on the machine's Node 20).
  target: `node${manifest.engines.node.replace(/^>=/, "")}`,
  // Node's builtins stay imports; every package is bundled, so the tarball depends on nothing.
  packages: "bundle",
  plugins: [substitutions],
  // commander is CommonJS and requires Node's builtins: an ES module bundle gives it a `require`.
  banner: {
    js: ['import { createRequire as __personaCreateRequire } from "node:module";', "const require = __personaCreateRequire(import.meta.url);"].join("\n"),
  },
  minifySyntax: true,
  minifyWhitespace: true,
  keepNames: true,
  legalComments: "none",
  metafile: true,
  logLevel: "warning",
});

// Nothing of the server is loaded at start-up: each replaced module is reached by `await import()` only.
const problems = [];
for (const [input, { imports }] of Object.entries(result.metafile.inputs)) {
  if (input.startsWith("needs-server:")) continue;
  for (const { path, kind } of imports) {
    if (path.startsWith("needs-server:") && kind !== "dynamic-import") problems.push(`${input} imports ${path.slice("needs-server:".length)} at start-up (${kind})`);
  }
  if (input.startsWith("server/") && !PURE_SERVER_MODULES.has(input)) problems.push(`${input} is bundled: only ${[...PURE_SERVER_MODULES].join(", ")} may be`);
}
const builtin = (path) => path.startsWith("node:") || builtinModules.includes(path);
const external = Object.values(result.metafile.outputs).flatMap((output) => output.imports.filter((entry) => entry.external && !builtin(entry.path)));
for (const entry of new Set(external.map((entry) => entry.path))) problems.push(`the bundle imports ${entry}: every package must be bundled`);
if (problems.length > 0) {
  process.stderr.write(`cli: the bundle is wrong:\n  ${problems.join("\n  ")}\n`);
  process.exit(1);
}
chmodSync(join(dist, "persona.js"), 0o755);

// The contract, without the indentation of generated/openapi.json (a quarter smaller, read at every start).
const contract = JSON.parse(readFileSync(join(root, "generated", "openapi.json"), "utf8"));
writeFileSync(join(dist, "openapi.json"), JSON.stringify(contract));

writeFileSync(join(dist, "THIRD_PARTY_LICENSES.txt"), thirdPartyLicenses(Object.keys(result.metafile.inputs)));

const size = (file) => `${Math.round(readFileSync(join(dist, file)).length / 1024)} kB`;
if (args.analyze) process.stdout.write(await analyzeMetafile(result.metafile));
process.stdout.write(`cli: built ${fromRoot(dist)} (persona.js ${size("persona.js")}, openapi.json ${size("openapi.json")})\n`);

/** The licence text of every package bundled, found from the bundle's inputs under node_modules/. */
function thirdPartyLicenses(inputs) {
  const packages = new Map();
  for (const input of inputs) {
    const match = /^(.*?node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (match && !packages.has(match[1])) packages.set(match[1], join(root, match[1]));
  }
  const sections = [...packages.values()].sort().map((dir) => {
    const { name, version, license } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    const file = existsSync(dir) ? readdirSync(dir).find((entry) => /^(licen[cs]e|copying)(\.|$)/i.test(entry)) : undefined;
    const text = file ? readFileSync(join(dir, file), "utf8").trim() : `(no licence file in the package; package.json says ${license})`;
    return `${name} ${version} (${license})\n\n${text}\n`;
  });
  return `The persona command line bundles these packages:\n\n${sections.join(`\n${"-".repeat(72)}\n\n`)}`;
}
