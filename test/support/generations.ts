import { createParser } from "eventsource-parser";
import { afterAll, beforeAll, beforeEach, expect } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { createPersona } from "./chat.ts";
import { databaseKind, startTestService, type TestService } from "./service.ts";
import { registerUser, type TestUser } from "./users.ts";

/** One event of a chat stream with its SSE id. */
export interface IdEvent {
  id: string | undefined;
  event: string;
  data: string;
}

/**
 * Reads a `text/event-stream` response until `until` says so (then cancels the body: the client
 * drops) or the stream ends.
 */
export async function readIdEvents(response: Response, until: (events: IdEvent[]) => boolean = () => false): Promise<IdEvent[]> {
  const events: IdEvent[] = [];
  const parser = createParser({ onEvent: (e) => events.push({ id: e.id, event: e.event ?? "message", data: e.data }) });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parser.feed(decoder.decode(value, { stream: true }));
    if (until(events)) {
      await reader.cancel();
      break;
    }
  }
  return events;
}

/** The generation a chat stream's events belong to, from its first event (`start`). */
export const generationOf = (events: IdEvent[]) => (JSON.parse(events[0]!.data) as { generation_id: string }).generation_id;

/** A generation as its stop operation answers it. */
export interface StoppedGeneration {
  id: string;
  status: string;
  reply_message_id: string;
  user_message_id: string;
  [field: string]: unknown;
}

/**
 * Reads the chat stream `response` in the background and, once two deltas have arrived, stops its
 * generation with `stop` (the stop operation, through whichever process): requires a 200 answering
 * the generation stopped with its reply stored, and the fake upstream's call aborted. Answers that
 * generation and every event the stream carried to its end.
 */
export async function stopMidReply(
  fake: FakeOpenAI,
  response: Response,
  stop: (generationId: string) => Promise<Response>,
): Promise<{ generation: StoppedGeneration; events: IdEvent[] }> {
  let seen: IdEvent[] = [];
  const reading = readIdEvents(response, (events) => {
    seen = [...events];
    return false;
  });
  const deadline = Date.now() + 10_000;
  while (seen.filter((e) => e.event === "delta").length < 2) {
    if (Date.now() > deadline) throw new Error(`two deltas did not arrive in 10 s (events: ${seen.map((e) => e.event).join(", ")})`);
    await new Promise((wait) => setTimeout(wait, 25));
  }
  const answer = await stop(generationOf(seen));
  // Asked after the stop: `stop` may take its time (finding a connection on another process), and
  // the fake keeps an abort no one has claimed yet.
  const aborted = fake.waitForAbort(10_000);
  expect(answer.status).toBe(200);
  const generation = (await answer.json()) as StoppedGeneration;
  expect(generation).toMatchObject({ id: generationOf(seen), status: "stopped", reply_message_id: expect.any(String) });
  expect((await aborted).aborted).toBe(true);
  return { generation, events: await reading };
}

export const contentOf = (events: IdEvent[]) => events.filter((e) => e.event === "delta").map((e) => (JSON.parse(e.data) as { content: string }).content).join("");

export interface TwoProcesses {
  fake: FakeOpenAI;
  /** The process that generates. */
  a: TestService;
  /** Another API process on the same database (PostgreSQL); the same one on the embedded default. */
  b: TestService;
  alice: TestUser;
  bob: TestUser;
  persona: { id: string };
}

/**
 * Two API processes on one PostgreSQL database, each with its own pool and its own LISTEN
 * connection, talking to one fake OpenAI server; on the embedded default (one process owns its
 * data) both names are the same process.
 */
export function useTwoProcesses(): TwoProcesses {
  const fixture = {} as TwoProcesses;
  beforeAll(async () => {
    fixture.fake = await startFakeOpenAI();
    const env = { OPENAI_BASE_URL: fixture.fake.baseUrl, OPENAI_API_KEY: "sk-test-secret", LLM_MAX_RETRIES: "0", LLM_TIMEOUT_MS: "10000", STREAM_KEEPALIVE_MS: "200" };
    fixture.a = await startTestService({ env });
    fixture.b = databaseKind === "postgres" ? await startTestService({ env, database: fixture.a.database }) : fixture.a;
    fixture.alice = await registerUser(fixture.a);
    fixture.bob = await registerUser(fixture.a);
    fixture.persona = await createPersona(fixture.a, fixture.alice);
  }, 120_000);
  afterAll(async () => {
    if (fixture.b !== fixture.a) await fixture.b?.stop();
    await fixture.a?.close();
    await fixture.fake?.close();
  });
  beforeEach(() => fixture.fake?.reset());
  return fixture;
}
