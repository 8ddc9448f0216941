import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, expect } from "vitest";
import { startFakeOpenAI, type FakeOpenAI, type RecordedRequest } from "../fakes/openai-server.ts";
import { createPersona } from "../support/chat.ts";
import { startTestService, type TestService, type TestServiceOptions } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

/**
 * A service whose model registry spans two fake upstreams on loopback (issue 40): `alpha` on the
 * first, with its own key, a small window and dear prices, falling back to `beta`; `beta` and
 * `gamma` on the second, `beta` the default. What a test asks of the registry it reads here.
 */
export const KEYS = { alpha: "sk-alpha-operator-secret-0001", beta: "sk-beta-operator-secret-0002" };

export const PRICES = {
  alpha: { input: 1, output: 2 },
  beta: { input: 0.5, output: 1.5 },
  gamma: { input: 0, output: 0 },
};

export interface ModelsWorld {
  service: TestService;
  /** The upstream of `alpha`. */
  first: FakeOpenAI;
  /** The upstream of `beta` and `gamma`. */
  second: FakeOpenAI;
  close(): Promise<void>;
}

/** The models file of the two upstreams. */
export function writeModelsFile(first: FakeOpenAI, second: FakeOpenAI): string {
  const path = join(mkdtempSync(join(tmpdir(), "persona-models-")), "models.json");
  const models = {
    default: "beta",
    models: [
      {
        id: "alpha",
        base_url: first.baseUrl,
        api_key_env: "ALPHA_KEY",
        upstream_model: "alpha-upstream",
        context_window: 4096,
        max_output_tokens: 256,
        input_price_per_million: PRICES.alpha.input,
        output_price_per_million: PRICES.alpha.output,
        fallbacks: ["beta"],
      },
      {
        id: "beta",
        base_url: second.baseUrl,
        api_key_env: "BETA_KEY",
        upstream_model: "beta-upstream",
        context_window: 16384,
        max_output_tokens: 512,
        input_price_per_million: PRICES.beta.input,
        output_price_per_million: PRICES.beta.output,
      },
      {
        id: "gamma",
        base_url: second.baseUrl,
        api_key_env: "BETA_KEY",
        upstream_model: "gamma-upstream",
        context_window: 8192,
        max_output_tokens: 300,
        capabilities: { tools: false, json_mode: false },
      },
    ],
  };
  writeFileSync(path, JSON.stringify(models, null, 2));
  return path;
}

export async function startModelsWorld(env: Record<string, string> = {}, options: Omit<TestServiceOptions, "env"> = {}): Promise<ModelsWorld> {
  const [first, second] = await Promise.all([startFakeOpenAI(), startFakeOpenAI()]);
  const service = await startTestService({
    env: {
      MODELS_FILE: writeModelsFile(first, second),
      ALPHA_KEY: KEYS.alpha,
      BETA_KEY: KEYS.beta,
      LLM_MAX_RETRIES: "0",
      LLM_TIMEOUT_MS: "5000",
      STREAM_KEEPALIVE_MS: "150",
      DEFAULT_PLAN: "creator",
      ...env,
    },
    ...options,
  });
  return {
    service,
    first,
    second,
    close: async () => {
      await service.close();
      await Promise.all([first.close(), second.close()]);
    },
  };
}

/** The chat completion calls an upstream received. */
export const chatCalls = (fake: FakeOpenAI): RecordedRequest[] => fake.requests.filter((request) => request.path === "/v1/chat/completions");

/** The body of an upstream's `index`th chat call. */
export function callBody(fake: FakeOpenAI, index = -1) {
  const call = chatCalls(fake).at(index);
  expect(call, "the upstream was called").toBeDefined();
  return call!.body as { model: string; max_tokens?: number; temperature?: number; top_p?: number; seed?: number; stop?: string[]; messages: { role: string; content: string }[] };
}

/** A reply's stored row. */
export async function storedReply(service: TestService, id: string) {
  return (await service.services.db.knex("messages").where({ id }).first()) as {
    id: string;
    model: string;
    model_id: string;
    fallback_from: string | null;
    own_key: boolean;
    input_tokens: number;
    output_tokens: number;
    cost_nanos: string | number;
    stopped: boolean;
  };
}

/** What a reply of `model` costs at the test registry's prices, in nano-USD. */
export const expectedCost = (model: keyof typeof PRICES, usage: { input_tokens: number; output_tokens: number }) =>
  Math.round(usage.input_tokens * PRICES[model].input * 1000 + usage.output_tokens * PRICES[model].output * 1000);

/** Messages counted against the user's monthly quota. */
export async function quotaUsed(service: TestService, user: TestUser): Promise<number> {
  return Number((await service.services.db.knex("usage_counters").where({ user_id: user.id }).sum({ n: "messages_sent" }).first())?.n ?? 0);
}

/** A persona of `user` whose chats run on their connection `connectionId` (named once it exists, with PUT). */
export async function personaOnConnection(service: TestService, user: TestUser, connectionId: string, fields: Record<string, unknown>) {
  const persona = await createPersona(service, user, fields);
  const named = await service.clientFor(user).PUT("/v1/personas/{id}", { params: { path: { id: persona.id } }, body: { provider_connection_id: connectionId } });
  expect(named.response.status, JSON.stringify(named.error)).toBe(200);
  return { ...persona, provider_connection_id: named.data!.provider_connection_id };
}

/**
 * A file's world on the default registry: started with `users` registered before its tests (given
 * to `ready`), the upstreams' records cleared before each test, closed after them.
 */
export function useModelsWorld(users: number, ready: (world: ModelsWorld, users: TestUser[]) => void): void {
  let world: ModelsWorld | undefined;
  beforeAll(async () => {
    const started = (world = await startModelsWorld());
    ready(started, await Promise.all(Array.from({ length: users }, () => registerUser(started.service))));
  });
  beforeEach(() => {
    world?.first.reset();
    world?.second.reset();
  });
  afterAll(async () => {
    await world?.close();
  });
}
