// The published artifact: build, `npm pack`, install the tarball into a scratch project, type-check
// a typed script against the installed declarations, then run it against the real service and load
// the CommonJS entry on the pinned Node 24 and on the machine's system Node (20, the SDK's declared
// minimum). Needs the npm registry (for openapi-fetch and eventsource-parser); about a minute.
// SKIP_PACK_TEST=1 skips it.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { fileURLToPath } from "node:url";
import semver from "semver";
import { afterAll, beforeAll, expect, test } from "vitest";
import { npmCliPath } from "../support/processes.ts";
import { startTestService, type TestService } from "../support/service.ts";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../..", import.meta.url));
const sdkDir = join(root, "sdk");
const sdkManifest = JSON.parse(await readFile(join(sdkDir, "package.json"), "utf8")) as { engines: { node: string } };

// The machine's own Node (Debian's), which the project's pinned runtime does not replace.
const SYSTEM_NODE = "/usr/bin/node";
const systemNode = existsSync(SYSTEM_NODE) ? (await run(SYSTEM_NODE, ["--version"])).stdout.trim() : undefined;
if (!systemNode) console.warn(`pack: ${SYSTEM_NODE} is missing, so the SDK runs on the pinned Node only`);

let service: TestService;
let scratch: string;
beforeAll(async () => {
  service = await startTestService();
  scratch = await mkdtemp(join(tmpdir(), "persona-sdk-scratch-"));
}, 120_000);
afterAll(async () => {
  await service?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

// What a user would write: typed calls, typed events, typed errors.
const script = (baseUrl: string) => `
import { createClient, PersonaError, type ChatStreamEvent, type Schemas } from "@persona-platform/sdk";

const baseUrl = ${JSON.stringify(baseUrl)};
const suffix = Math.random().toString(36).slice(2, 10);
const anonymous = createClient({ baseUrl });
const session = await anonymous.auth.register({ email: \`scratch_\${suffix}@example.com\`, username: \`scratch_\${suffix}\`, password: "Correct-horse-9" });
const client = createClient({ baseUrl, accessToken: session.access_token, refreshToken: session.refresh_token }, { maxRetries: 1 });
const me: Schemas["User"] = await client.auth.me();
const result: Record<string, unknown> = { username: me.username };

const persona = await client.personas.create({ name: "Captain Nova", instructions: "You are Captain Nova. Answer in one sentence." });
const conversation = await client.conversations.create({ persona_id: persona.id });
const stream = client.conversations.stream(conversation.id, { content: "Hello, captain!" });
const events: ChatStreamEvent["type"][] = [];
let reply = "";
for await (const event of stream) {
  events.push(event.type);
  if (event.type === "delta") reply += event.content;
  if (event.type === "error") throw new Error(event.code + ": " + event.message);
}
result.persona = persona.name;
result.events = events.at(-1);
result.reply = reply.length > 0;
result.messageId = typeof stream.finalMessageId === "string";

try {
  await client.auth.apiKeys.revoke("0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01");
} catch (error) {
  if (error instanceof PersonaError) result.error = [error.status, error.code, typeof error.requestId];
}
console.log(JSON.stringify(result));
`;

test.skipIf(process.env.SKIP_PACK_TEST === "1")(
  "the packed package installs, type-checks and runs register → persona → streamed chat; CJS loads",
  async () => {
    // A plain `npm pack` (or publish) in sdk/ builds dist/ itself (prepack), even from a clean tree.
    await rm(join(sdkDir, "dist"), { recursive: true, force: true });
    await run("npm", ["pack"], { cwd: sdkDir });
    const tarball = (await readdir(sdkDir)).find((file) => /^persona-platform-sdk-.*\.tgz$/.test(file));
    expect(tarball).toBeTruthy();
    const { stdout: listing } = await run("tar", ["-tzf", join(sdkDir, tarball!)]);
    expect(listing.split("\n").filter(Boolean).sort()).toEqual(
      ["README.md", "dist/index.cjs", "dist/index.cjs.map", "dist/index.d.cts", "dist/index.d.ts", "dist/index.js", "dist/index.js.map", "package.json"].map((f) => `package/${f}`),
    );

    await writeFile(join(scratch, "package.json"), JSON.stringify({ name: "scratch", private: true, type: "module" }));
    // Installed by npm on the oldest Node the SDK claims: none of its dependencies may ask for more.
    const installer = systemNode ? [SYSTEM_NODE, npmCliPath()] : ["npm"];
    const install = await run(installer[0]!, [...installer.slice(1), "install", "--no-audit", "--no-fund", "--loglevel=warn", join(sdkDir, tarball!)], { cwd: scratch });
    expect(install.stderr).not.toMatch(/EBADENGINE/);
    await writeFile(join(scratch, "main.ts"), script(service.url));

    // The root's TypeScript, strict, with the installed declarations checked too (no skipLibCheck)
    // and no @types/node: the SDK's types must stand on the standard DOM/ES library alone. It emits
    // the script as JavaScript, which every Node runs (Node 20 cannot strip types).
    const tsc = join(root, "node_modules/typescript/bin/tsc");
    const compilerOptions = { strict: true, noEmit: true, module: "nodenext", target: "es2022", types: [] };
    await writeFile(join(scratch, "tsconfig.json"), JSON.stringify({ compilerOptions: { ...compilerOptions, noEmit: false, outDir: "out" }, files: ["main.ts"] }));
    await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: scratch }).catch((error) => {
      throw new Error(`tsc failed:\n${error.stdout}${error.stderr}`);
    });

    // A type error must be caught, or the check above proves nothing.
    await writeFile(join(scratch, "wrong.ts"), `import { createClient } from "@persona-platform/sdk";\nawait createClient({ baseUrl: "x" }).personas.create({ nme: "typo" });\n`);
    await writeFile(join(scratch, "tsconfig.wrong.json"), JSON.stringify({ compilerOptions, files: ["wrong.ts"] }));
    const wrong = await run(process.execPath, [tsc, "-p", "tsconfig.wrong.json"], { cwd: scratch }).then(
      () => "",
      (error: { stdout: string }) => error.stdout,
    );
    expect(wrong).toMatch(/nme/);

    const nodes = [process.execPath, ...(systemNode ? [SYSTEM_NODE] : [])];
    if (systemNode) {
      // The oldest Node the SDK's package.json admits is the one that runs here.
      expect(semver.satisfies(systemNode, sdkManifest.engines.node)).toBe(true);
      expect(semver.minVersion(sdkManifest.engines.node)!.major).toBe(semver.major(systemNode));
    }
    for (const node of nodes) {
      const { stdout } = await run(node, ["out/main.js"], { cwd: scratch }).catch((error) => {
        throw new Error(`the script failed on ${node}:\n${error.stdout}${error.stderr}`);
      });
      const result = JSON.parse(stdout.trim().split("\n").at(-1)!);
      expect(result.username, node).toMatch(/^scratch_/);
      expect(result.error, node).toEqual([404, "not_found", "string"]);
      expect(result, node).toMatchObject({ persona: "Captain Nova", events: "done", reply: true, messageId: true });

      const cjs = `const sdk = require("@persona-platform/sdk");
        const client = sdk.createClient({ baseUrl: ${JSON.stringify(service.url)} });
        client.auth.login({ email: "nobody@example.com", password: "Wrong-password-1" }).catch((e) => {
          console.log(JSON.stringify([typeof sdk.createClient, e instanceof sdk.AuthenticationError, e instanceof sdk.PersonaError, e.name]));
        });`;
      const { stdout: cjsOut } = await run(node, ["-e", cjs], { cwd: scratch });
      expect(JSON.parse(cjsOut), node).toEqual(["function", true, true, "AuthenticationError"]);
    }
  },
  180_000,
);
