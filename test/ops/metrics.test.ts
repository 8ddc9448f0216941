import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConversation, createPersona, readEvents, sendBlocking, sendStream } from "../support/chat.ts";
import { freePort } from "../support/ports.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";
import { createWebhook, loopbackEnv } from "../webhooks/helpers.ts";
import { startReceiver, type Receiver } from "../webhooks/receiver.ts";
import { families, parseExposition, select, total, type Sample } from "./exposition.ts";

// Issue 39: a service with metrics on (its own METRICS_PORT listener and METRICS_TOKEN on the main
// one) goes through a mixed flow (sign-up, persona, blocking and streamed chat, a room's event
// stream, jobs, a webhook delivered to a loopback receiver after one failure, a rate-limit refusal),
// and one scrape then holds every metric the README's Monitoring section lists, with values that
// flow could have produced.

const TOKEN = "metrics-token-of-the-test-0123456789abcdef";
const RATE_LIMIT = 120;

let service: TestService;
let metricsUrl: string;
let alice: TestUser;
let hook: Receiver;

beforeAll(async () => {
  const port = await freePort();
  metricsUrl = `http://127.0.0.1:${port}/metrics`;
  service = await startTestService({
    env: { ...loopbackEnv, METRICS_PORT: String(port), METRICS_TOKEN: TOKEN, RATE_LIMIT_PER_MINUTE: String(RATE_LIMIT) },
  });
  // The first delivery attempt fails, the retry is answered.
  let calls = 0;
  hook = await startReceiver(() => ({ status: ++calls === 1 ? 500 : 200 }));
});

afterAll(async () => {
  await hook?.close();
  await service?.close();
});

async function scrape(): Promise<{ text: string; samples: Sample[] }> {
  const response = await fetch(metricsUrl);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  return { text, samples: parseExposition(text) };
}

describe("metrics after a mixed flow", () => {
  let scraped: { text: string; samples: Sample[] };

  beforeAll(async () => {
    alice = await registerUser(service);
    await createWebhook(service, alice, { url: hook.url, events: ["conversation.created", "message.created"] });
    const persona = await createPersona(service, alice);
    const conversation = await createConversation(service, alice, persona.id);
    expect((await sendBlocking(service, alice, conversation.id, "Hello, captain")).status).toBe(201);
    const streamed = await sendStream(service, alice, conversation.id, "Tell me about your ship");
    expect(streamed.status).toBe(200);
    expect((await readEvents(streamed)).events.at(-1)?.event).toBe("done");

    // A room's event stream stays open until its client leaves: it is counted while open.
    const { data: room } = await service.clientFor(alice).POST("/v1/rooms", { body: { name: "Bridge", persona_ids: [persona.id] } });
    const leave = new AbortController();
    const events = await service.fetch(`/v1/rooms/${room!.id}/events`, { headers: alice.auth, signal: leave.signal });
    expect(events.status).toBe(200);
    const open = await until("the room's stream counted open", async () => {
      const { samples } = await scrape();
      return total(samples, "persona_sse_streams_open", { operation: "rooms_events" }) === 1 ? samples : undefined;
    });
    expect(total(open, "persona_sse_streams_open")).toBeGreaterThanOrEqual(1);
    leave.abort();
    await events.body?.cancel().catch(() => undefined);
    await until("the room's stream counted closed", async () => total((await scrape()).samples, "persona_sse_streams_open", { operation: "rooms_events" }) === 0);

    // The conversation's and the messages' events reach the receiver, the first attempt refused and retried.
    await until("a webhook delivered after a retry", () => hook.received.length >= 2);
    await until("the delivery counted", async () => total((await scrape()).samples, "persona_webhook_deliveries_total", { outcome: "delivered" }) >= 1);

    // The limit is per client: a user of its own calls until one call is refused (the others' counts are untouched).
    const eager = await registerUser(service);
    let refused = false;
    for (let i = 0; i <= RATE_LIMIT && !refused; i++) {
      const response = await service.fetch("/v1/auth/me", { headers: eager.auth });
      await response.body?.cancel();
      refused = response.status === 429;
    }
    expect(refused).toBe(true);

    // A garbage collection is counted once one has run since the metrics began, and a flow this
    // short may have had none: garbage is made until one is seen (a scavenge comes within a few MB).
    await until("a garbage collection counted", async () => {
      const garbage = Array.from({ length: 64 }, () => new Array(16_384).fill(Math.random()));
      expect(garbage).toHaveLength(64);
      return total((await scrape()).samples, "nodejs_gc_duration_seconds_count") > 0;
    });
    scraped = await scrape();
  });

  it("counts requests and their durations by operationId and status", () => {
    const { samples } = scraped;
    expect(total(samples, "persona_http_requests_total", { operation: "auth_register", status: "201" })).toBeGreaterThanOrEqual(1);
    expect(total(samples, "persona_http_requests_total", { operation: "conversations_send_message", status: "201" })).toBe(1);
    expect(total(samples, "persona_http_requests_total", { operation: "conversations_stream_message", status: "200" })).toBe(1);
    // Refused before its route was matched: the rate limit comes first.
    expect(total(samples, "persona_http_requests_total", { operation: "unknown", status: "429" })).toBe(1);
    const count = total(samples, "persona_http_request_duration_seconds_count", { operation: "conversations_send_message", status: "201" });
    const sum = total(samples, "persona_http_request_duration_seconds_sum", { operation: "conversations_send_message", status: "201" });
    expect(count).toBe(1);
    expect(sum).toBeGreaterThan(0);
    expect(sum).toBeLessThan(60);
    // Buckets are cumulative up to +Inf, which holds every request.
    const buckets = select(samples, "persona_http_request_duration_seconds_bucket", { operation: "conversations_send_message", status: "201" });
    expect(buckets.find((bucket) => bucket.labels.le === "+Inf")?.value).toBe(1);
    expect(buckets.map((bucket) => bucket.value)).toEqual([...buckets.map((bucket) => bucket.value)].sort((a, b) => a - b));
  });

  it("counts the open event streams by the operation that opened them", () => {
    const { samples } = scraped;
    expect(select(samples, "persona_sse_streams_open", { operation: "conversations_stream_message" })).toEqual([expect.objectContaining({ value: 0 })]);
    expect(total(samples, "persona_sse_streams_open", { operation: "rooms_events" })).toBe(0);
  });

  it("times the model's first text and counts tokens per reply by model", () => {
    const { samples } = scraped;
    const model = "local-offline-v1";
    expect(total(samples, "persona_model_first_delta_seconds_count", { model })).toBeGreaterThanOrEqual(1);
    const firstDelta = total(samples, "persona_model_first_delta_seconds_sum", { model }) / total(samples, "persona_model_first_delta_seconds_count", { model });
    expect(firstDelta).toBeGreaterThan(0);
    expect(firstDelta).toBeLessThan(30);
    // The blocking and the streamed reply at least (rooms' personas may have replied too).
    expect(total(samples, "persona_reply_tokens_count", { model })).toBeGreaterThanOrEqual(2);
    expect(total(samples, "persona_reply_tokens_sum", { model })).toBeGreaterThan(0);
    expect(total(samples, "persona_model_calls_total", { model, purpose: "reply", outcome: "ok" })).toBeGreaterThanOrEqual(2);
    expect(total(samples, "persona_model_tokens_total", { model, direction: "output" })).toBeGreaterThan(0);
    expect(total(samples, "persona_model_call_duration_seconds_count", { model, purpose: "reply" })).toBeGreaterThanOrEqual(2);
  });

  it("counts generations by outcome, and those running", () => {
    const { samples } = scraped;
    expect(total(samples, "persona_generations_total", { outcome: "done" })).toBeGreaterThanOrEqual(1);
    for (const outcome of ["stopped", "failed", "lost"]) expect(select(samples, "persona_generations_total", { outcome })).toHaveLength(1);
    expect(select(samples, "persona_generations_running")).toHaveLength(1);
    expect(select(samples, "persona_generation_oldest_running_seconds")).toHaveLength(1);
  });

  it("shows the job queue by task and the worker's jobs by task and outcome", () => {
    const { samples } = scraped;
    const queue = select(samples, "persona_job_queue_jobs");
    expect(new Set(queue.map((sample) => sample.labels.state))).toEqual(new Set(["due", "scheduled", "running", "failed"]));
    expect(queue.map((sample) => sample.labels.task)).toContain("webhooks_deliver");
    for (const sample of queue) expect(sample.value).toBeGreaterThanOrEqual(0);
    const ages = select(samples, "persona_job_queue_oldest_due_seconds");
    expect(ages.length).toBeGreaterThan(0);
    for (const age of ages) expect(age.value).toBeGreaterThanOrEqual(0);
    // The webhook's jobs ran in this process's worker.
    expect(total(samples, "persona_jobs_total", { task: "webhooks_fanout", outcome: "success" })).toBeGreaterThanOrEqual(1);
    expect(total(samples, "persona_job_duration_seconds_count", { task: "webhooks_fanout", outcome: "success" })).toBeGreaterThanOrEqual(1);
    expect(total(samples, "persona_job_duration_seconds_sum")).toBeGreaterThan(0);
  });

  it("counts webhook deliveries by outcome and their lag", () => {
    const { samples } = scraped;
    expect(total(samples, "persona_webhook_deliveries_total", { outcome: "retry" })).toBeGreaterThanOrEqual(1);
    expect(total(samples, "persona_webhook_deliveries_total", { outcome: "delivered" })).toBeGreaterThanOrEqual(1);
    const delivered = total(samples, "persona_webhook_delivery_lag_seconds_count");
    expect(delivered).toBeGreaterThanOrEqual(1);
    // At least the retry's wait (WEBHOOKS_RETRY_BASE_MS, 50 ms less a quarter) for the one that failed first.
    const lag = total(samples, "persona_webhook_delivery_lag_seconds_sum");
    expect(lag).toBeGreaterThan(0.03);
    expect(lag / delivered).toBeLessThan(60);
    expect(total(samples, "persona_webhook_attempt_duration_seconds_count", { outcome: "delivered" })).toBeGreaterThanOrEqual(1);
  });

  it("shows the database pools and statement durations", () => {
    const { samples } = scraped;
    for (const pool of ["knex", "pg"]) {
      expect(select(samples, "persona_db_pool_connections", { pool, state: "in_use" }).length).toBeGreaterThan(0);
      expect(select(samples, "persona_db_pool_waiting", { pool }).length).toBeGreaterThan(0);
    }
    expect(total(samples, "persona_db_pool_connections", { pool: "knex" })).toBeGreaterThan(0);
    expect(total(samples, "persona_db_pool_waiting")).toBeGreaterThanOrEqual(0);
    const statements = total(samples, "persona_db_statement_duration_seconds_count", { outcome: "ok" });
    expect(statements).toBeGreaterThan(10);
    expect(total(samples, "persona_db_statement_duration_seconds_sum", { outcome: "ok" }) / statements).toBeLessThan(5);
  });

  it("counts refusals by reason", () => {
    const { samples } = scraped;
    expect(total(samples, "persona_refusals_total", { reason: "rate_limit" })).toBeGreaterThanOrEqual(1);
    for (const reason of ["admission_full", "admission_timeout", "load_shed", "stream_limit"]) expect(select(samples, "persona_refusals_total", { reason })).toHaveLength(1);
  });

  it("has the process's memory, GC and event-loop delay", () => {
    const { samples, text } = scraped;
    expect(total(samples, "process_resident_memory_bytes")).toBeGreaterThan(10 * 1024 * 1024);
    expect(total(samples, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    expect(families(text).get("nodejs_gc_duration_seconds")).toBe("histogram");
    expect(total(samples, "nodejs_gc_duration_seconds_count")).toBeGreaterThan(0);
    const lag = total(samples, "nodejs_eventloop_lag_p99_seconds");
    expect(lag).toBeGreaterThan(0);
    expect(lag).toBeLessThan(10);
  });
});

describe("/metrics on the main listener", () => {
  const metricsPath = "/metrics";

  it("refuses a scraper without the token, or with another", async () => {
    const without = await service.fetch(metricsPath);
    expect(without.status).toBe(401);
    expect(without.headers.get("www-authenticate")).toMatch(/^Bearer /);
    expect(((await without.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    const wrong = await service.fetch(metricsPath, { headers: { authorization: `Bearer ${TOKEN}x` } });
    expect(wrong.status).toBe(401);
    await wrong.body?.cancel();
    // A user's own credential is not the scraper's.
    const user = await registerUser(service);
    const asUser = await service.fetch(metricsPath, { headers: user.auth });
    expect(asUser.status).toBe(401);
    await asUser.body?.cancel();
  });

  it("answers the same exposition to the scraper with the token", async () => {
    const response = await service.fetch(metricsPath, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await response.text();
    const listed = families(text);
    expect([...families((await scrape()).text).keys()].filter((name) => !listed.has(name))).toEqual([]);
    expect(total(parseExposition(text), "persona_http_requests_total", { operation: "ops_metrics", status: "401" })).toBeGreaterThanOrEqual(2);
  });

  it("is an unknown path on a server without METRICS_TOKEN", async () => {
    const plain = await startTestService();
    try {
      const response = await plain.fetch(metricsPath, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(response.status).toBe(404);
      await response.body?.cancel();
    } finally {
      await plain.close();
    }
  });
});

describe("/readyz with metrics on", () => {
  it("reports the database and the worker", async () => {
    const response = await service.fetch("/readyz");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: "ready", checks: { database: "ok", worker: "ok" } });
  });
});
