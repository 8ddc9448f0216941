import { randomUUID } from "node:crypto";
import { setTimeout as delay } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { handlers } from "../../server/areas.ts";
import { ApiError } from "../../server/toolkit/http/errors.ts";
import { idempotentOutcomeOf } from "../../server/toolkit/http/idempotency.ts";
import { HANDLED } from "../../server/toolkit/http/router.ts";
import type { Schemas } from "../../sdk/src/types.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser } from "../support/users.ts";
import { until } from "../support/wait.ts";

// A client that lost the answer to a POST must be able to send it again without creating the thing
// twice (a second webhook, a second charge): the same Idempotency-Key gets the first answer back.
let service: TestService;
let clock = new Date();
let created = 0;
let listed = 0;
/** Runs of the stand-in stream handler; what it does next: record its outcome, or leave without one. */
let streamed = 0;
let streamBehaviour: "record" | "leave" = "record";
/** What the stand-in create handler does next: answer at once, slowly, or fail upstream. */
let behaviour: "ok" | "slow" | "upstream_error" = "ok";
/** API keys of three users, by name. */
const keys: Record<"idempotency" | "alice" | "bob", string> = { idempotency: "", alice: "", bob: "" };

beforeAll(async () => {
  service = await startTestService({
    now: () => clock,
    handlers: {
      ...handlers,
      // No creating endpoint is live yet: stand-ins that count how often they really run.
      webhooks_create: async ({ body }) => {
        created += 1;
        // A slow handler: the fixed time is the point, the window a concurrent request falls into.
        if (behaviour === "slow") await delay(300);
        if (behaviour === "upstream_error") throw new ApiError(502, "upstream_error", "x");
        const webhook = { id: randomUUID(), url: body.url, events: body.events, secret: "s".repeat(32), active: true as const };
        return { status: 201, body: { ...webhook, created_at: new Date().toISOString() } };
      },
      // An operation that answers no JSON records an outcome of its own through the middleware's API.
      conversations_stream_message: async ({ req, res }) => {
        const key = idempotentOutcomeOf<{ run: number }>(req);
        res.status(200).type("text/event-stream");
        if (key?.previous) {
          key.markReplayed();
          res.end(`event: replay\ndata: ${JSON.stringify(key.previous)}\n\n`);
          return HANDLED;
        }
        streamed += 1;
        if (streamBehaviour === "record") await key?.record({ run: streamed });
        res.end(`event: run\ndata: ${JSON.stringify({ run: streamed })}\n\n`);
        return HANDLED;
      },
      webhooks_list: async () => {
        listed += 1;
        return { status: 200, body: { data: [], total: 0 } };
      },
    },
  });
  for (const name of Object.keys(keys) as (keyof typeof keys)[]) keys[name] = await apiKeyFor(service, await registerUser(service));
});

afterAll(async () => {
  await service?.close();
});

const webhook: Schemas["WebhookCreate"] = { url: "https://hooks.example.com/persona", events: ["message.created"] };

function create(key: string | undefined, body: Schemas["WebhookCreate"] = webhook, who: keyof typeof keys = "idempotency") {
  return service.clientFor({ auth: { "x-api-key": keys[who] } }).POST("/v1/webhooks", { params: { header: key ? { "Idempotency-Key": key } : {} }, body });
}
type Answer = Awaited<ReturnType<typeof create>>;

/** Runs `fn` and answers how many times the create handler ran meanwhile. */
async function runs(fn: () => Promise<unknown>): Promise<number> {
  const before = created;
  await fn();
  return created - before;
}

describe("Idempotency-Key", () => {
  it("replays the first response to a retry with the same key and body, without running twice", async () => {
    const key = randomUUID();
    let first!: Answer;
    let second!: Answer;
    expect(
      await runs(async () => {
        first = await create(key);
        second = await create(key);
      }),
    ).toBe(1);
    expect(first.response.status).toBe(201);
    expect(first.response.headers.get("idempotent-replayed")).toBeNull();
    expect(second.response.status).toBe(first.response.status);
    expect(second.data).toEqual(first.data);
    expect(second.response.headers.get("idempotent-replayed")).toBe("true");
  });

  it("answers 409 conflict to the same key with a different body", async () => {
    const key = randomUUID();
    expect((await create(key)).response.status).toBe(201);
    const other = await runs(async () => {
      const { error, response } = await create(key, { ...webhook, events: ["message.failed"] });
      expect(response.status).toBe(409);
      expect(error!.error.code).toBe("conflict");
    });
    expect(other).toBe(0);
  });

  it("keeps keys private to their client: another API key with the same key runs separately", async () => {
    const key = randomUUID();
    const count = await runs(async () => {
      const mine = await create(key, webhook, "alice");
      const theirs = await create(key, webhook, "bob");
      expect([mine.response.status, theirs.response.status]).toEqual([201, 201]);
      expect(theirs.response.headers.get("idempotent-replayed")).toBeNull();
      expect(theirs.data!.id).not.toBe(mine.data!.id);
    });
    expect(count).toBe(2);
  });

  it("runs every request that carries no key", async () => {
    const count = await runs(async () => {
      expect((await create(undefined)).response.status).toBe(201);
      expect((await create(undefined)).response.status).toBe(201);
    });
    expect(count).toBe(2);
  });

  it("answers 409 to a concurrent request with the same key while the first is still running", async () => {
    const key = randomUUID();
    behaviour = "slow";
    try {
      const answers = await Promise.all([create(key), create(key)]);
      const statuses = answers.map(({ response }) => response.status).sort();
      expect(statuses).toEqual([201, 409]);
      const refused = answers.find(({ response }) => response.status === 409)!;
      const body = refused.error!;
      expect(body.error.code).toBe("conflict");
      expect(body.error.message).toMatch(/in progress/);
    } finally {
      behaviour = "ok";
    }
    // Once the first is done, a retry gets its answer.
    const retry = await create(key);
    expect(retry.response.status).toBe(201);
    expect(retry.response.headers.get("idempotent-replayed")).toBe("true");
  });

  it("does not store a 5xx: a retry with the same key runs again", async () => {
    const key = randomUUID();
    behaviour = "upstream_error";
    try {
      const failed = await create(key);
      expect(failed.response.status).toBe(502);
      expect(failed.error!.error.code).toBe("upstream_error");
    } finally {
      behaviour = "ok";
    }
    expect(
      await runs(async () => {
        const retry = await create(key);
        expect(retry.response.status).toBe(201);
        expect(retry.response.headers.get("idempotent-replayed")).toBeNull();
      }),
    ).toBe(1);
  });

  it("forgets a key after 24 hours", async () => {
    const key = randomUUID();
    const start = clock;
    try {
      expect((await create(key)).response.status).toBe(201);
      clock = new Date(start.getTime() + 23 * 60 * 60 * 1000);
      expect((await create(key)).response.headers.get("idempotent-replayed")).toBe("true");
      clock = new Date(start.getTime() + 24 * 60 * 60 * 1000 + 1000);
      expect(
        await runs(async () => {
          const later = await create(key);
          expect(later.response.status).toBe(201);
          expect(later.response.headers.get("idempotent-replayed")).toBeNull();
        }),
      ).toBe(1);
    } finally {
      clock = new Date();
    }
  });

  it("gives a streaming handler its recorded outcome on a retry, and releases a key left without one", async () => {
    const conversationId = randomUUID();
    const stream = (key: string) =>
      service.clientFor({ auth: { "x-api-key": keys.idempotency } }).POST("/v1/conversations/{id}/messages/stream", {
        params: { path: { id: conversationId }, header: { "Idempotency-Key": key } },
        body: { content: "hello" },
        parseAs: "text",
      });
    const recorded = randomUUID();
    const first = await stream(recorded);
    const run = streamed;
    expect(first.data).toContain(`"run":${run}`);
    const retry = await stream(recorded);
    expect(retry.response.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.data).toBe(`event: replay\ndata: {"run":${run}}\n\n`);
    expect(streamed).toBe(run);

    streamBehaviour = "leave";
    try {
      const left = randomUUID();
      await stream(left);
      // The key is released once the first response has closed; until then a retry is "in progress".
      const again = await until("the key left without an outcome released", async () => {
        const answer = await stream(left);
        return answer.response.status === 409 ? undefined : answer;
      }, 10_000);
      expect(again.response.headers.get("idempotent-replayed")).toBeNull();
      expect(again.data).toContain(`"run":${run + 2}`);
    } finally {
      streamBehaviour = "record";
    }
  });

  it("is ignored by an operation whose contract does not declare it", async () => {
    const key = randomUUID();
    const before = listed;
    const init = { headers: { "x-api-key": keys.idempotency, "idempotency-key": key } };
    for (const response of [await service.fetch("/v1/webhooks", init), await service.fetch("/v1/webhooks", init)]) {
      expect(response.status).toBe(200);
      expect(response.headers.get("idempotent-replayed")).toBeNull();
    }
    expect(listed - before).toBe(2);
  });
});
