import { v7 as uuidv7 } from "uuid";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { GREETING_TASK, generateGreeting } from "../../server/areas/personas/greeting-job.ts";
import { UpstreamError } from "../../server/toolkit/providers/errors.ts";
import type { ChatCompletion, ChatModelProvider, ChatRequest } from "../../server/toolkit/providers/llm/types.ts";
import type { Services } from "../../server/toolkit/services.ts";
import { expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { until } from "../support/wait.ts";

// The greeting a persona gets from its model when created without one: a graphile-worker job.
let service: TestService;
let alice: TestUser;

/** Every request the service's model was given. */
const requests: ChatRequest[] = [];

/** Answers a greeting, padded with whitespace the job must trim; fails for instructions saying FAIL. */
const model: ChatModelProvider = {
  name: "fake",
  complete: async (request) => {
    requests.push(request);
    if (request.messages[0]?.content.includes("FAIL")) throw new UpstreamError("The fake model is down", 503);
    return { content: "  Ahoy, cadet! Which star shall we visit first?\n", model: request.model, usage: { inputTokens: 20, outputTokens: 10 } };
  },
  // eslint-disable-next-line require-yield
  stream: async function* () {
    throw new Error("not used");
  },
};

/** A model whose one answer waits until `answer` is called. */
function heldModel(): ChatModelProvider & { answer: (content: string) => void; asked: Promise<void> } {
  let answer!: (content: string) => void;
  let asked!: () => void;
  const reply = new Promise<string>((resolve) => (answer = resolve));
  const askedPromise = new Promise<void>((resolve) => (asked = resolve));
  return {
    name: "held",
    answer,
    asked: askedPromise,
    complete: async (request): Promise<ChatCompletion> => {
      asked();
      return { content: await reply, model: request.model, usage: { inputTokens: 1, outputTokens: 1 } };
    },
    // eslint-disable-next-line require-yield
    stream: async function* () {
      throw new Error("not used");
    },
  };
}

const withModel = (llm: ChatModelProvider): Services => ({ ...service.services, providers: { ...service.services.providers, llm } });

async function create(fields: { instructions: string; greeting_message?: string }) {
  return expectOk(service.clientFor(alice).POST("/v1/personas", { body: { name: "Captain Nova", ...fields } }), 201);
}

async function read(id: string) {
  return expectOk(service.clientFor(alice).GET("/v1/personas/{id}", { params: { path: { id } } }));
}

/** A persona row written straight to the database: no greeting, and no job queued for it. */
async function insertBare(instructions: string): Promise<string> {
  const id = uuidv7();
  const now = new Date();
  await service.services.db.knex("personas").insert({
    id, creator_id: alice.id, name: "Bare", handle: `bare-${id.slice(-8)}`, instructions, model: service.services.config.llm.model, created_at: now, updated_at: now,
  });
  return id;
}

beforeAll(async () => {
  // No automatic avatars (test/images/avatars.test.ts): only the greeting job changes a persona here.
  service = await startTestService({ providers: { llm: model }, env: { AUTO_AVATARS: "false" } });
  alice = await registerUser(service);
  await service.services.db.knex("users").where({ id: alice.id }).update({ plan: "creator" });
});

afterAll(async () => {
  await service?.close();
});

describe("the generated greeting", () => {
  it("is null at creation, then written by the persona's model from its instructions", async () => {
    const instructions = "You are Captain Nova, a warm retired starship captain.";
    const made = await create({ instructions });
    expect(made.greeting_message).toBeNull();

    const greeted = await until("the generated greeting", async () => {
      const persona = await read(made.id);
      return persona.greeting_message === null ? undefined : persona;
    });
    expect(greeted).toEqual({ ...made, greeting_message: "Ahoy, cadet! Which star shall we visit first?" });

    const request = requests.find((r) => r.messages[0]?.content.startsWith(instructions))!;
    expect(request).toMatchObject({ model: made.model, purpose: "greeting" });
    expect(request.messages[0]).toEqual({ role: "system", content: expect.stringContaining("one-sentence greeting") });
  });

  it("is not asked for when the persona was given one", async () => {
    const add = vi.spyOn(service.services.jobs, "add");
    try {
      const made = await create({ instructions: "You are terse.", greeting_message: "Yes?" });
      expect(add.mock.calls.filter(([task]) => task === GREETING_TASK)).toEqual([]);
      expect((await read(made.id)).greeting_message).toBe("Yes?");
    } finally {
      add.mockRestore();
    }
  });

  it("does not overwrite a greeting the owner set while the model was writing", async () => {
    const id = await insertBare("You are patient.");
    const held = heldModel();
    const job = generateGreeting(withModel(held), id);
    await held.asked;
    await expectOk(service.clientFor(alice).PUT("/v1/personas/{id}", { params: { path: { id } }, body: { greeting_message: "The owner's own words." } }));
    held.answer("The model's words.");
    await job;
    expect((await read(id)).greeting_message).toBe("The owner's own words.");
  });

  it("throws when the model fails or answers nothing, so that graphile-worker retries; nothing is stored", async () => {
    const id = await insertBare("You are quiet.");
    const failing = { ...model, complete: async () => Promise.reject(new UpstreamError("down", 502)) };
    await expect(generateGreeting(withModel(failing), id)).rejects.toThrow("down");
    const empty = heldModel();
    empty.answer("   ");
    await expect(generateGreeting(withModel(empty), id)).rejects.toThrow(/empty greeting/);
    expect((await read(id)).greeting_message).toBeNull();
  });

  it("is queued for retry by the worker after a failed attempt", async () => {
    const made = await create({ instructions: "FAIL: this model call fails." });
    // This persona's is the only greeting job that fails. graphile-worker counts an attempt when it
    // takes the job, and records the error once the attempt failed.
    // Its own job (graphile-worker's jobs view has no payload: its own table names the persona).
    const job = await until("the failed greeting job", () =>
      service.services.db.knex("graphile_worker._private_jobs as j")
        .join("graphile_worker._private_tasks as t", "t.id", "j.task_id")
        .select("j.attempts", "j.max_attempts", "j.last_error")
        .where("t.identifier", GREETING_TASK)
        .whereRaw("j.payload->>'personaId' = ?", [made.id])
        .whereNotNull("j.last_error")
        .first(),
    );
    expect(job).toMatchObject({ attempts: 1, max_attempts: 10, last_error: expect.stringContaining("The fake model is down") });
    expect((await read(made.id)).greeting_message).toBeNull();
  });

  it("does nothing for a persona deleted before the job ran", async () => {
    const asked = vi.fn();
    await generateGreeting(withModel({ ...model, complete: async () => (asked(), Promise.reject(new Error("unreachable"))) }), uuidv7());
    expect(asked).not.toHaveBeenCalled();
  });
});
