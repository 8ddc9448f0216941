import { execFile } from "node:child_process";
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { npmCliPath } from "../support/processes.ts";

// Every Node version the project names is true (issue 13, item 7): the README's minimum is the
// root `engines`, every installed package accepts it (so npm prints no EBADENGINE there), and the
// SDK's minimum holds for the dependencies it ships with. npm's dry run also shows the install free
// of peer conflicts (item 9).
const run = promisify(execFile);
const readJson = (path: string) => JSON.parse(readFileSync(resolve(root, path), "utf8"));

interface Manifest {
  engines: { node: string };
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}
interface Lock {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
}

const manifest = readJson("package.json") as Manifest;
const sdk = readJson("sdk/package.json") as Manifest;
const lock = readJson("package-lock.json") as Lock;
const minimum = semver.minVersion(manifest.engines.node)!;
const pinned = manifest.devDependencies.node!;
const SYSTEM_NODE = "/usr/bin/node";

/** Each locked package whose `engines.node` refuses `version`. */
function refusing(version: string, packages = Object.entries(lock.packages)): string[] {
  return packages.flatMap(([path, entry]) => {
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    return range && !semver.satisfies(version, range) ? [`${path || "(root)"} wants ${range}`] : [];
  });
}

/** `npm ci --dry-run` of the project's lock on `node`, offline: npm checks every engine and installs nothing. */
async function dryRunInstall(node: string): Promise<string> {
  const scratch = await mkdtemp(join(tmpdir(), "persona-engines-"));
  try {
    for (const file of ["package.json", "package-lock.json"]) await copyFile(resolve(root, file), join(scratch, file));
    const args = [npmCliPath(), "ci", "--dry-run", "--ignore-scripts", "--offline", "--no-audit", "--no-fund", "--loglevel=warn", "--cache", join(scratch, "cache")];
    const { stdout, stderr } = await run(node, args, { cwd: scratch, env: { ...process.env, npm_config_engine_strict: "false" } });
    return stdout + stderr;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

describe("the project's Node version", () => {
  // The READMEs' claims of these versions are checked by `npm run check` (scripts/docs-check.ts).
  it("is met by the pinned runtime", () => {
    expect(semver.satisfies(pinned, manifest.engines.node)).toBe(true);
    expect(process.version.slice(1)).toBe(pinned);
  });

  it("is accepted by every package of the lock file: the minimum and the pinned runtime", () => {
    expect(Object.keys(lock.packages).length).toBeGreaterThan(500);
    expect(refusing(minimum.version)).toEqual([]);
    expect(refusing(pinned)).toEqual([]);
    // The minimum is the tightest: one Node release older and some package refuses it.
    const older = minimum.minor > 0 ? `${minimum.major}.${minimum.minor - 1}.0` : `${minimum.major - 1}.99.0`;
    expect(refusing(older).length).toBeGreaterThan(0);
  });

  it("gets no engine warning and no peer conflict from npm on the pinned runtime", async () => {
    const output = await dryRunInstall(process.execPath);
    expect(output).toMatch(/added \d+ packages/);
    expect(output).not.toMatch(/EBADENGINE/);
    // The TypeSpec set is one release (issue 13, item 9): npm overrides no peer dependency.
    expect(output).not.toMatch(/ERESOLVE|peer dep/i);
  }, 120_000);

  it.skipIf(!existsSync(SYSTEM_NODE))("gets engine warnings on an older Node, so the check above can see them", async () => {
    const version = (await run(SYSTEM_NODE, ["--version"])).stdout.trim();
    if (semver.satisfies(version, manifest.engines.node)) return;
    expect(await dryRunInstall(SYSTEM_NODE)).toMatch(/EBADENGINE/);
  }, 120_000);
});

describe("the SDK's Node version", () => {
  const sdkMinimum = semver.minVersion(sdk.engines.node)!;

  it("ships the dependencies the project tests it with", () => {
    for (const [name, version] of Object.entries(sdk.dependencies)) expect(manifest.dependencies[name], name).toBe(version);
  });

  it("is accepted by every dependency it ships with", () => {
    const shipped = Object.entries(lock.packages).filter(([path]) => Object.keys(sdk.dependencies).some((name) => path === `node_modules/${name}`));
    expect(shipped).toHaveLength(Object.keys(sdk.dependencies).length);
    expect(refusing(sdkMinimum.version, shipped)).toEqual([]);
  });

});
