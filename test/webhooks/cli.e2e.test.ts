import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cliPath, runCli } from "../cli/run-cli.ts";
import { root } from "../support/contract.ts";
import { eventually } from "../support/wait.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";
import { emit, loopbackEnv } from "./helpers.ts";
import { startReceiver, type Receiver } from "./receiver.ts";

let service: TestService;
let hook: Receiver;
let user: TestUser;
let env: Record<string, string>;

beforeAll(async () => {
  service = await startTestService({ env: loopbackEnv });
  hook = await startReceiver();
  user = await registerUser(service);
  env = { PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, user) };
});
afterAll(async () => {
  await hook?.close();
  await service?.close();
});

describe("persona webhooks", () => {
  it("creates, lists, updates, shows deliveries, redelivers and deletes", { timeout: 90_000 }, async () => {
    const created = await runCli(["webhooks", "create", "--url", hook.url, "--event", "message.failed", "--json"], { env });
    expect(created.code, created.stderr).toBe(0);
    const webhook = created.json<{ id: string; secret: string }>();
    expect(webhook.secret).toMatch(/^whsec_/);
    const bad = await runCli(["webhooks", "create", "--url", hook.url, "--event", "message.deleted"], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("unknown event message.deleted");

    const list = await runCli(["webhooks", "list"], { env });
    expect(list.stdout).toContain(webhook.id);
    const paused = await runCli(["webhooks", "update", webhook.id, "--active", "false", "--json"], { env });
    expect(paused.json()).toMatchObject({ active: false });
    await runCli(["webhooks", "update", webhook.id, "--active", "true"], { env });

    await emit(service, user, "message.failed");
    await eventually(async () => hook.received.length === 1);
    const deliveries = await eventually(async () => {
      const result = await runCli(["webhooks", "deliveries", webhook.id, "--json"], { env });
      const page = result.json<{ data: { id: string; status: string }[] }>();
      return page.data[0]?.status === "succeeded" && page;
    });
    const again = await runCli(["webhooks", "redeliver", webhook.id, deliveries.data[0]!.id], { env });
    expect(again.stdout).toMatch(/^Queued delivery /);
    await eventually(async () => hook.received.length === 2);
    const deleted = await runCli(["webhooks", "delete", webhook.id], { env });
    expect(deleted.stdout).toContain(`Deleted webhook ${webhook.id}`);
  });

  it("listen registers a temporary webhook, prints and forwards verified deliveries, and removes it on exit", { timeout: 90_000 }, async () => {
    const listener = await registerUser(service);
    const target = await startReceiver(() => ({ status: 202 }));
    const child = spawn(process.execPath, [cliPath, "webhooks", "listen", "--forward-to", target.url, "--event", "conversation.created"], {
      cwd: root,
      env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: tmpdir(), PERSONA_BASE_URL: service.url, PERSONA_API_KEY: await apiKeyFor(service, listener) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    try {
      await eventually(async () => stderr.includes("Ready: webhook"), 30_000);
      const [registered] = await service.services.db.knex("webhooks").where({ user_id: listener.id });
      expect(registered.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
      await emit(service, listener, "conversation.created", { conversation_id: "c1" });
      await eventually(async () => target.received.length === 1 && stdout.includes("conversation.created"));
      expect(stdout).toContain(`-> ${target.url} [202]`);
      expect(target.received[0]!.headers["x-persona-signature"]).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.parse(target.received[0]!.raw)).toMatchObject({ type: "conversation.created", data: { conversation_id: "c1" } });
    } finally {
      child.kill("SIGINT");
      await new Promise((done) => child.once("exit", done));
      await target.close();
    }
    expect(stderr).toContain("Removed webhook");
    expect(await service.services.db.knex("webhooks").where({ user_id: listener.id })).toEqual([]);
  });

  it("listen explains what to do when the server refuses private URLs", { timeout: 60_000 }, async () => {
    const strict = await startTestService();
    try {
      const someone = await registerUser(strict);
      const result = await runCli(["webhooks", "listen"], { env: { PERSONA_BASE_URL: strict.url, PERSONA_API_KEY: await apiKeyFor(strict, someone) } });
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("WEBHOOKS_ALLOW_PRIVATE_URLS=true");
    } finally {
      await strict.close();
    }
  });
});
