import { spawn, type ChildProcess } from "node:child_process";
import { describe, expect, it } from "vitest";
import { handlers } from "../../server/areas.ts";
import { freePort } from "../support/ports.ts";
import { root } from "../support/contract.ts";
import { startTestService } from "../support/service.ts";

// Deploys and restarts send SIGTERM: requests in flight must finish, and the process must exit cleanly.
const sleep = (ms: number) => new Promise((wait) => setTimeout(wait, ms));

describe("stop()", () => {
  it("lets an in-flight request finish, then refuses connections and closes the database", async () => {
    let entered!: () => void;
    const inHandler = new Promise<void>((resolve) => (entered = resolve));
    const service = await startTestService({
      handlers: {
        ...handlers,
        ops_healthz: async (ctx) => {
          entered();
          await sleep(500);
          return handlers.ops_healthz(ctx);
        },
      },
    });
    const order: string[] = [];
    const request = service.fetch("/healthz").then(async (response) => {
      order.push("response");
      return { status: response.status, connection: response.headers.get("connection"), body: await response.json() };
    });
    await inHandler;
    await service.stop().then(() => order.push("stopped"));

    // The answer tells the client to drop the connection, so stop() need not wait out keep-alive.
    expect(await request).toEqual({ status: 200, connection: "close", body: { status: "ok" } });
    // stop() waited for the in-flight answer (the order), and nothing else: no timing bound, which
    // a loaded machine would break.
    expect(order).toEqual(["response", "stopped"]);
    await expect(fetch(`${service.url}/healthz`)).rejects.toThrow();
    await expect(service.services.db.knex.raw("select 1")).rejects.toThrow();
    await service.close(); // stop() is idempotent; this also drops a TEST_DATABASE_URL database.
  });
});

interface Spawned {
  child: ChildProcess;
  url: string;
  output: () => string;
  stdout: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs a Node entry point of the project on a free port until it answers /healthz. */
async function spawnService(args: string[]): Promise<Spawned> {
  const port = await freePort();
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: "",
      EMBEDDED_DB_IN_MEMORY: "true",
      LOG_LEVEL: "info",
      LOG_PRETTY: "false",
      WORKER_ENABLED: "",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  let stdout = "";
  child.stdout!.on("data", (chunk: Buffer) => ((log += chunk.toString()), (stdout += chunk.toString())));
  child.stderr!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((done) =>
    child.once("exit", (code, signal) => done({ code, signal })),
  );
  const url = `http://127.0.0.1:${port}`;
  // A first embedded start runs initdb: 20 s and more on a busy runner.
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && child.exitCode === null) {
    const ok = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.ok, () => false);
    if (ok) return { child, url, output: () => log, stdout: () => stdout, exit };
    await sleep(200);
  }
  child.kill("SIGKILL");
  throw new Error(`${args.join(" ")} did not answer /healthz:\n${log}`);
}

/**
 * Sends SIGTERM and expects a clean exit. A process that hangs is killed after 60 s, which the exit
 * check then reports (signal SIGKILL): a hang guard, not a timing bound.
 */
async function terminate(service: Spawned): Promise<void> {
  service.child.kill("SIGTERM");
  const timer = setTimeout(() => service.child.kill("SIGKILL"), 60_000);
  const { code, signal } = await service.exit;
  clearTimeout(timer);
  expect({ code, signal }, service.output()).toEqual({ code: 0, signal: null });
}

describe("a real process", () => {
  it("node server/main.ts exits 0 on SIGTERM after shutting down", { timeout: 120_000 }, async () => {
    const service = await spawnService(["server/main.ts"]);
    const readyz = await fetch(`${service.url}/readyz`);
    expect(await readyz.json()).toEqual({ status: "ready", checks: { database: "ok", worker: "ok" } });
    await terminate(service);
    expect(service.stdout()).toContain('"msg":"shut down"');
  });

  it("node cli/persona.ts serve --no-worker runs without a worker and exits 0 on SIGTERM", { timeout: 120_000 }, async () => {
    const service = await spawnService(["cli/persona.ts", "serve", "--no-worker"]);
    const readyz = await fetch(`${service.url}/readyz`);
    expect(readyz.status).toBe(200);
    expect(await readyz.json()).toEqual({ status: "ready", checks: { database: "ok", worker: "disabled" } });
    await terminate(service);
    expect(service.stdout()).toContain('"msg":"shut down"');
  });
});

describe("SIGTERM under traffic (issue 31 L7)", () => {
  it("answers every request that reached the process: none is reset, each client is told to close", { timeout: 120_000 }, async () => {
    const { Client } = await import("undici");
    const service = await spawnService(["server/main.ts"]);
    // Keep-alive clients, each sending its next request as soon as the last is answered, as a load
    // balancer's pool does. A client stops when told to close (or when refused a new connection,
    // which nothing received); an error on a request that was sent is the finding.
    const LOOPS = 8;
    let answered = 0;
    let terminated = false;
    const outcomes = await Promise.all(
      Array.from({ length: LOOPS }, async () => {
        const client = new Client(service.url, { pipelining: 1, keepAliveTimeout: 60_000 });
        try {
          for (;;) {
            const response = await client.request({ path: "/healthz", method: "GET" });
            const body = await response.body.text();
            answered++;
            if (answered === 200 && !terminated) {
              terminated = true;
              service.child.kill("SIGTERM");
            }
            if (response.statusCode !== 200) return `status ${response.statusCode}: ${body}`;
            if (response.headers.connection === "close") return "closed";
          }
        } catch (error) {
          const code = (error as { code?: string }).code;
          return code === "ECONNREFUSED" ? "refused" : `error ${code ?? ""} ${(error as Error).message}`;
        } finally {
          await client.destroy();
        }
      }),
    );
    const { code, signal } = await service.exit;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
    expect(outcomes.filter((outcome) => outcome !== "closed" && outcome !== "refused"), service.output()).toEqual([]);
    // The clients busy or idle when the signal came were answered on their connections.
    expect(outcomes.filter((outcome) => outcome === "closed").length).toBeGreaterThan(0);
  });
});
