import { v7 as uuidv7 } from "uuid";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ChatModelProvider } from "../../server/toolkit/providers/llm/index.ts";
import type { ChatRequest } from "../../server/toolkit/providers/llm/types.ts";
import { pickVariant, trafficPoint } from "../../server/areas/studio/variants.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { call, makePersona } from "../social/helpers.ts";

// A/B variants: create, list, update, the sum rule (also under concurrent writes), limits, other
// users, deterministic sticky assignment and the instructions each conversation's replies use.
let service: TestService;
const clock = new Date("2026-11-21T10:00:00.000Z");
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const seen: ChatRequest[] = [];
const model: ChatModelProvider = {
  name: "fake",
  complete: async (request) => {
    seen.push(request);
    return { content: "Aye.", model: request.model, usage: { inputTokens: 3, outputTokens: 1 } };
  },
  // eslint-disable-next-line require-yield
  stream: async function* () {
    throw new Error("not used");
  },
};
let owner: TestUser;
let stranger: TestUser;

beforeAll(async () => {
  service = await startTestService({ now: () => clock, providers: { llm: model }, env: { RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" } });
  owner = await registerUser(service);
  stranger = await registerUser(service);
  await service.services.db.knex("users").where({ id: owner.id }).update({ plan: "creator" });
});

afterAll(async () => {
  await service?.close();
});

const variant = (name: string, traffic_percentage: number) => ({ name, instructions: `You are ${name}.`, traffic_percentage });
const systemOf = (request: ChatRequest) => request.messages.find((turn) => turn.role === "system")?.content ?? "";
// The last persona reply the model was asked for: the title job asks too, in the background.
const lastReply = () => seen.filter((request) => request.purpose === "reply").at(-1)!;

describe("variants", () => {
  it("creates, lists oldest first with empty metrics, and updates a share", async () => {
    const persona = await makePersona(service, owner, "Nova");
    const a = await call(service, owner, "POST", `/v1/studio/${persona.id}/variants`, 201, variant("Pirate", 20));
    expect(a).toMatchObject({ name: "Pirate", instructions: "You are Pirate.", traffic_percentage: 20, metrics: { message_count: 0, avg_rating: null, retention_rate: null } });
    expect(a).not.toHaveProperty("updated_at");
    const b = await call(service, owner, "POST", `/v1/studio/${persona.id}/variants`, 201, variant("Poet", 30.5));
    const list = await call(service, owner, "GET", `/v1/studio/${persona.id}/variants`, 200);
    expect(list).toMatchObject({ total: 2, data: [{ id: a.id }, { id: b.id, traffic_percentage: 30.5 }] });
    const updated = await call(service, owner, "PUT", `/v1/studio/${persona.id}/variants/${a.id}`, 200, { traffic_percentage: 35 });
    expect(updated).toMatchObject({ id: a.id, traffic_percentage: 35, updated_at: clock.toISOString() });
  });

  it("refuses a sum over 100 (400) on create and update, and allows exactly 100 in decimals", async () => {
    const persona = await makePersona(service, owner, "Sums");
    await call(service, owner, "POST", `/v1/studio/${persona.id}/variants`, 201, variant("A", 33.33));
    const b = await call(service, owner, "POST", `/v1/studio/${persona.id}/variants`, 201, variant("B", 33.33));
    await call(service, owner, "POST", `/v1/studio/${persona.id}/variants`, 201, variant("C", 33.34));
    const over = await call(service, owner, "POST", `/v1/studio/${persona.id}/variants`, 400, variant("D", 0.01));
    expect(over.error.code).toBe("invalid_request");
    await call(service, owner, "POST", `/v1/studio/${persona.id}/variants`, 201, variant("Zero", 0));
    await call(service, owner, "PUT", `/v1/studio/${persona.id}/variants/${b.id}`, 400, { traffic_percentage: 33.34 });
    await call(service, owner, "PUT", `/v1/studio/${persona.id}/variants/${b.id}`, 200, { traffic_percentage: 33.33 });
    expect((await call(service, owner, "GET", `/v1/studio/${persona.id}/variants`, 200)).total).toBe(4);
  });

  it("never exceeds 100 under concurrent creates", async () => {
    const persona = await makePersona(service, owner, "Crowded");
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        service.clientFor(owner).POST("/v1/studio/{persona_id}/variants", { params: { path: { persona_id: persona.id } }, body: variant(`V${i}`, 25) }),
      ),
    );
    expect(results.filter((r) => r.response.status === 201)).toHaveLength(4);
    expect(results.filter((r) => r.response.status === 400)).toHaveLength(8);
  });

  it("refuses bad input with nothing written", async () => {
    const persona = await makePersona(service, owner, "Bad Input");
    for (const body of [
      {},
      variant("", 10),
      variant("x".repeat(81), 10),
      variant("ok", -1),
      variant("ok", 100.5),
      { name: "ok", instructions: "", traffic_percentage: 1 },
      { name: "ok", instructions: "x".repeat(32001), traffic_percentage: 1 },
      { name: "ok", instructions: "fine", traffic_percentage: "10" },
    ]) {
      await call(service, owner, "POST", `/v1/studio/${persona.id}/variants`, 400, body);
    }
    const a = await call(service, owner, "POST", `/v1/studio/${persona.id}/variants`, 201, variant("x".repeat(80), 100));
    await call(service, owner, "PUT", `/v1/studio/${persona.id}/variants/${a.id}`, 400, { traffic_percentage: 101 });
    await call(service, owner, "PUT", `/v1/studio/${persona.id}/variants/${a.id}`, 400, {});
    expect((await call(service, owner, "GET", `/v1/studio/${persona.id}/variants`, 200)).data).toEqual([expect.objectContaining({ traffic_percentage: 100 })]);
  });

  it("another user's persona and unknown ids are 404", async () => {
    const persona = await makePersona(service, owner, "Private Lab", { is_public: true });
    const a = await call(service, owner, "POST", `/v1/studio/${persona.id}/variants`, 201, variant("A", 10));
    await call(service, stranger, "GET", `/v1/studio/${persona.id}/variants`, 404);
    await call(service, stranger, "POST", `/v1/studio/${persona.id}/variants`, 404, variant("B", 10));
    await call(service, stranger, "PUT", `/v1/studio/${persona.id}/variants/${a.id}`, 404, { traffic_percentage: 5 });
    await call(service, owner, "PUT", `/v1/studio/${persona.id}/variants/${uuidv7()}`, 404, { traffic_percentage: 5 });
    await call(service, owner, "PUT", `/v1/studio/${persona.id}/variants/nope`, 400, { traffic_percentage: 5 });
    const other = await makePersona(service, owner, "Other");
    await call(service, owner, "PUT", `/v1/studio/${other.id}/variants/${a.id}`, 404, { traffic_percentage: 5 });
  });
});

describe("assignment", () => {
  it("is deterministic and covers the shares in order", () => {
    const persona = uuidv7();
    const conversation = uuidv7();
    expect(trafficPoint(persona, conversation)).toBe(trafficPoint(persona, conversation));
    const rows = [
      { id: "a", traffic_percentage: 20 },
      { id: "b", traffic_percentage: 30 },
    ] as never[];
    expect(pickVariant(rows, 0)).toMatchObject({ id: "a" });
    expect(pickVariant(rows, 19.99)).toMatchObject({ id: "a" });
    expect(pickVariant(rows, 20)).toMatchObject({ id: "b" });
    expect(pickVariant(rows, 50)).toBeUndefined();
    // Roughly the configured split over many conversations.
    const points = Array.from({ length: 2000 }, () => trafficPoint(persona, uuidv7()));
    const share = points.filter((p) => p < 20).length / points.length;
    expect(share).toBeGreaterThan(0.15);
    expect(share).toBeLessThan(0.25);
  });

  it("a conversation keeps its variant's instructions for life; new ones follow the shares; metrics count its messages", async () => {
    const persona = await makePersona(service, owner, "Split", { instructions: "You are the original." });
    const all = await call(service, owner, "POST", `/v1/studio/${persona.id}/variants`, 201, variant("Pirate", 100));
    const chatter = await registerUser(service);
    const first = await call(service, chatter, "POST", "/v1/conversations", 201, { persona_id: persona.id });
    seen.length = 0;
    await call(service, chatter, "POST", `/v1/conversations/${first.id}/messages`, 201, { content: "Hello?" });
    expect(systemOf(lastReply())).toContain("You are Pirate.");

    await call(service, owner, "PUT", `/v1/studio/${persona.id}/variants/${all.id}`, 200, { traffic_percentage: 0 });
    const second = await call(service, chatter, "POST", "/v1/conversations", 201, { persona_id: persona.id });
    await call(service, chatter, "POST", `/v1/conversations/${second.id}/messages`, 201, { content: "Hello?" });
    expect(systemOf(lastReply())).toContain("You are the original.");
    await call(service, chatter, "POST", `/v1/conversations/${first.id}/messages`, 201, { content: "Still there?" });
    expect(systemOf(lastReply())).toContain("You are Pirate.");

    const [metrics] = (await call(service, owner, "GET", `/v1/studio/${persona.id}/variants`, 200)).data.map((v: Json) => v.metrics);
    expect(metrics).toMatchObject({ message_count: 4, avg_rating: null });
  });

  it("activating a version changes the next message of conversations without a variant", async () => {
    const persona = await makePersona(service, owner, "Versioned", { instructions: "You are version one." });
    const conversation = await call(service, owner, "POST", "/v1/conversations", 201, { persona_id: persona.id });
    await call(service, owner, "POST", `/v1/conversations/${conversation.id}/messages`, 201, { content: "Hi" });
    expect(systemOf(lastReply())).toContain("You are version one.");
    const draft = await call(service, owner, "POST", `/v1/studio/${persona.id}/versions`, 201, { instructions: "You are version two." });
    await call(service, owner, "POST", `/v1/studio/${persona.id}/versions/${draft.id}/activate`, 200);
    await call(service, owner, "POST", `/v1/conversations/${conversation.id}/messages`, 201, { content: "Hi again" });
    expect(systemOf(lastReply())).toContain("You are version two.");
  });
});
