import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { root } from "../support/contract.ts";
import { freePort } from "../support/ports.ts";
import { startAndWait, type RunningProcess } from "../support/processes.ts";
import { createTestDatabase, databaseKind, type TestDatabase } from "../support/service.ts";
import { until } from "../support/wait.ts";
import { parseExposition, select, total } from "./exposition.ts";

// `persona serve --processes 2` with metrics (issue 39): one scrape of the primary's METRICS_PORT
// listener, or of /metrics on the shared port with METRICS_TOKEN (answered by whichever process
// takes the connection), holds every process's series, each labelled `process`; /readyz on either
// process lists both, and a process killed and started again is seen going and coming back.

const TOKEN = "metrics-token-of-the-cluster-test-0123456789";
let database: TestDatabase;
let server: RunningProcess;
let base: string;
let metricsUrl: string;

interface Readiness {
  status: string;
  checks: Record<string, string>;
  processes?: { process: number; pid?: number; status: string; checks?: Record<string, string> }[];
}

/** One request on a connection of its own: the primary deals connections out to the processes in turn. */
function call(path: string, headers: Record<string, string> = {}, method = "GET", body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${base}${path}`, { method, headers: { ...headers, connection: "close" }, agent: false }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on("error", reject);
    // A connection dealt to a process at the moment it is killed may never be answered.
    req.setTimeout(10_000, () => req.destroy(new Error(`${path}: no answer within 10 s`)));
    req.end(body);
  });
}

const readyz = async () => {
  const answer = await call("/readyz");
  return { status: answer.status, body: JSON.parse(answer.body) as Readiness };
};

beforeAll(async () => {
  database = await createTestDatabase();
  const [port, metricsPort] = [await freePort(), await freePort()];
  base = `http://127.0.0.1:${port}`;
  metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
  const env = {
    PORT: String(port),
    HOST: "127.0.0.1",
    METRICS_PORT: String(metricsPort),
    METRICS_TOKEN: TOKEN,
    LOG_LEVEL: "warn",
    EMBEDDED_DB_IN_MEMORY: "true",
    ...(database.url ? { DATABASE_URL: database.url } : { DATABASE_URL: "" }),
  };
  server = await startAndWait("node", [join(root, "cli/persona.ts"), "serve", "--processes", "2"], `${base}/readyz`, 180_000, env);
  // /readyz answers 200 while the second process is still starting (the first serves); wait for both.
  await until("both processes ready", async () => {
    const { status, body } = await readyz();
    return status === 200 && body.processes?.length === 2 && body.processes.every((each) => each.status === "ready");
  }, 180_000);
}, 240_000);

afterAll(async () => {
  await server?.stop();
  await database?.drop();
});

describe(`persona serve --processes 2 with metrics (${databaseKind})`, () => {
  it("lists each process in /readyz, whichever process answers", async () => {
    const seen = new Set<number>();
    for (let i = 0; i < 6; i++) {
      const { status, body } = await readyz();
      expect(status).toBe(200);
      expect(body.status).toBe("ready");
      expect(body.checks).toMatchObject({ database: "ok", processes: "ok" });
      // Only the first process runs the job worker.
      expect(body.processes).toEqual([
        { process: 1, pid: expect.any(Number), status: "ready", checks: { database: "ok", worker: "ok" } },
        { process: 2, pid: expect.any(Number), status: "ready", checks: { database: "ok", worker: "disabled" } },
      ]);
      seen.add(body.checks.worker === "ok" ? 1 : 2);
    }
    // Connections are dealt out in turn: both processes answered.
    expect(seen).toEqual(new Set([1, 2]));
  });

  it("scrapes every process in one exposition, each series labelled by process", async () => {
    // Requests spread over both processes.
    for (let i = 0; i < 6; i++) expect((await call("/healthz")).status).toBe(200);
    const response = await fetch(metricsUrl);
    expect(response.status).toBe(200);
    const samples = parseExposition(await response.text());
    expect(select(samples, "persona_process_up").map((sample) => [sample.labels.process, sample.value]).sort()).toEqual([["1", 1], ["2", 1]]);
    for (const process of ["1", "2"]) {
      expect(total(samples, "persona_http_requests_total", { process, operation: "ops_healthz", status: "200" })).toBeGreaterThanOrEqual(1);
      expect(total(samples, "process_resident_memory_bytes", { process })).toBeGreaterThan(10 * 1024 * 1024);
      expect(select(samples, "nodejs_eventloop_lag_p99_seconds", { process })).toHaveLength(1);
    }
    expect(total(samples, "persona_http_requests_total", { operation: "ops_healthz", status: "200" })).toBeGreaterThanOrEqual(6);
    // The primary's own process (it holds the embedded database) is there too, without the service's series.
    expect(total(samples, "process_resident_memory_bytes", { process: "primary" })).toBeGreaterThan(0);
    expect(select(samples, "persona_http_requests_total", { process: "primary" })).toEqual([]);
    // The queue is read by both processes (the job worker runs in the first).
    expect(select(samples, "persona_job_queue_jobs", { process: "1" }).length).toBeGreaterThan(0);
    expect(select(samples, "persona_job_queue_jobs", { process: "2" }).length).toBeGreaterThan(0);
  });

  it("answers every process's metrics on the shared port to the token, whichever process takes it", async () => {
    expect((await call("/metrics")).status).toBe(401);
    for (let i = 0; i < 2; i++) {
      const answer = await call("/metrics", { authorization: `Bearer ${TOKEN}` });
      expect(answer.status).toBe(200);
      const samples = parseExposition(answer.body);
      expect(select(samples, "persona_process_up").map((sample) => sample.labels.process).sort()).toEqual(["1", "2"]);
    }
  });

  it("sees a killed process go and its replacement come back in the same place", async () => {
    const before = (await readyz()).body.processes!;
    const killed = before.find((each) => each.process === 2)!.pid!;
    process.kill(killed, "SIGKILL");
    const back = await until(
      "process 2 replaced and ready",
      async () => {
        const { status, body } = await readyz().catch(() => ({ status: 0, body: undefined }));
        const second = body?.processes?.find((each) => each.process === 2);
        return status === 200 && second?.status === "ready" && second.pid !== killed ? body : undefined;
      },
      120_000,
    );
    expect(back.processes!.map((each) => each.process)).toEqual([1, 2]);
    expect(back.processes!.find((each) => each.process === 1)!.pid).toBe(before.find((each) => each.process === 1)!.pid);
  }, 150_000);
});
