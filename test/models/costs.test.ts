import { describe, expect, it } from "vitest";
import { costReport } from "../../server/areas/conversations/index.ts";
import { createConversation, createPersona, sendBlocking, sendStream } from "../support/chat.ts";
import { readIdEvents, stopMidReply } from "../support/generations.ts";
import { databaseKind } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { addMember, makeRoom } from "../rooms/helpers.ts";
import { expectedCost, storedReply, type ModelsWorld, useModelsWorld } from "./support.ts";

// Issue 40, item 5: every stored reply records its model, tokens and cost at the registry's prices,
// whichever way it was made (blocking, streamed, stopped, regenerated); usage, studio analytics and
// the operator's report sum them.
let world: ModelsWorld;
let alice: TestUser;

useModelsWorld(1, (started, [a]) => {
  [world, alice] = [started, a!];
});

const knex = () => world.service.services.db.knex;

describe(`the cost of every reply (${databaseKind})`, () => {
  it("is recorded for blocking, streamed, stopped and regenerated replies, and summed by usage, analytics and the operator's report", async () => {
    const dear = await createPersona(world.service, alice, { name: "Priced", model: "alpha" });
    const cheap = await createPersona(world.service, alice, { name: "Cheap", model: "beta" });
    const conversation = await createConversation(world.service, alice, dear.id, "costs");
    const replies: { id: string; model: "alpha" | "beta" }[] = [];

    // Blocking.
    const blocking = await (await sendBlocking(world.service, alice, conversation.id, "What is the brightest star?")).json();
    replies.push({ id: blocking.assistant_message.id, model: "alpha" });

    // Streamed.
    world.first.chat.next({ chunks: ["Sirius", " is", " the", " brightest."] });
    const streamed = await readIdEvents(await sendStream(world.service, alice, conversation.id, "And the nearest?"));
    replies.push({ id: (JSON.parse(streamed.at(-1)!.data) as { message_id: string }).message_id, model: "alpha" });

    // Stopped: the partial reply is counted as the service counts it, in the model's family encoding.
    world.first.chat.next({ chunks: Array.from({ length: 40 }, (_, i) => `word${i} `), chunkDelayMs: 150 });
    const { generation } = await stopMidReply(world.first, await sendStream(world.service, alice, conversation.id, "Tell me everything"), (generationId) =>
      world.service.fetch(`/v1/conversations/${conversation.id}/generations/${generationId}/stop`, { method: "POST", headers: alice.auth }),
    );
    replies.push({ id: generation.reply_message_id, model: "alpha" });
    expect(await storedReply(world.service, generation.reply_message_id)).toMatchObject({ stopped: true, model_id: "alpha" });

    // Regenerated.
    const regenerated = await world.service.fetch(`/v1/conversations/${conversation.id}/messages/${generation.reply_message_id}/regenerate`, { method: "POST", headers: alice.auth });
    expect(regenerated.status).toBe(201);
    replies.push({ id: (await regenerated.json()).id, model: "alpha" });

    // Another persona, another model and price.
    const other = await createConversation(world.service, alice, cheap.id, "cheap");
    const cheapReply = await (await sendBlocking(world.service, alice, other.id, "Hi")).json();
    replies.push({ id: cheapReply.assistant_message.id, model: "beta" });

    let total = 0;
    let inputTokens = 0;
    let outputTokens = 0;
    for (const reply of replies) {
      const stored = await storedReply(world.service, reply.id);
      expect(stored.model_id).toBe(reply.model);
      expect(stored.input_tokens).toBeGreaterThan(0);
      expect(Number(stored.cost_nanos)).toBe(expectedCost(reply.model, stored));
      total += Number(stored.cost_nanos);
      inputTokens += stored.input_tokens;
      outputTokens += stored.output_tokens;
    }

    // Usage: the period's replies, their tokens and cost, per model.
    const usage = (await world.service.clientFor(alice).GET("/v1/billing/usage")).data!;
    expect(usage.costs).toMatchObject({ replies: 5, own_key_replies: 0, input_tokens: inputTokens, output_tokens: outputTokens });
    expect(usage.costs.cost_usd).toBeCloseTo(total / 1e9, 12);
    expect(usage.costs.by_model.map((model) => [model.model, model.replies])).toEqual([["alpha", 4], ["beta", 1]]);

    // Studio analytics: each persona's replies of the period.
    const analytics = (await world.service.clientFor(alice).GET("/v1/studio/{persona_id}/analytics", { params: { path: { persona_id: dear.id }, query: { period: "7d" } } })).data!;
    const alphaTotal = (await Promise.all(replies.filter((reply) => reply.model === "alpha").map((reply) => storedReply(world.service, reply.id)))).reduce((sum, row) => sum + Number(row.cost_nanos), 0);
    expect(analytics.cost_usd).toBeCloseTo(alphaTotal / 1e9, 12);

    // The operator's report, per user and per persona.
    const window = { from: new Date(Date.now() - 86_400_000), to: new Date(Date.now() + 86_400_000), limit: 1000 };
    const perUser = (await costReport(world.service.services, "user", window)).find((line) => line.id === alice.id);
    expect(perUser).toMatchObject({ replies: 5, costNanos: total, inputTokens, outputTokens });
    const perPersona = await costReport(world.service.services, "persona", window);
    expect(perPersona.find((line) => line.id === dear.id)).toMatchObject({ name: "Priced", replies: 4, costNanos: alphaTotal });
    expect(perPersona.find((line) => line.id === cheap.id)).toMatchObject({ name: "Cheap", replies: 1 });
  });

  it("leaves greetings and user messages without a cost", async () => {
    const bob = await registerUser(world.service);
    const persona = await createPersona(world.service, bob, { name: "Greeter", model: "beta" });
    const conversation = await createConversation(world.service, bob, persona.id, "greeting");
    await sendBlocking(world.service, bob, conversation.id, "Hello");
    const rows = await knex()("messages").where({ conversation_id: conversation.id }).orderBy("depth").select("role", "depth", "cost_nanos", "model_id");
    expect(rows.map((row) => [row.role, row.depth, row.cost_nanos === null ? null : "priced", row.model_id])).toEqual([
      ["assistant", 0, null, null],
      ["user", 1, null, null],
      ["assistant", 2, "priced", "beta"],
    ]);
    const usage = (await world.service.clientFor(bob).GET("/v1/billing/usage")).data!;
    expect(usage.costs.replies).toBe(1);
  });

  it("is recorded for a persona's room replies, billed to the member whose post they answer, and summed with the rest", async () => {
    const owner = await registerUser(world.service);
    const member = await registerUser(world.service);
    const persona = await createPersona(world.service, owner, { name: "Roomy", model: "alpha" });
    const room = await makeRoom(world.service, owner, { persona_ids: [persona.id], reply_mode: "all" });
    await addMember(world.service, owner, room.id, member);
    const posted = await world.service.clientFor(member).POST("/v1/rooms/{id}/messages", { params: { path: { id: room.id } }, body: { content: "Roomy, what is the brightest star?" } });
    expect(posted.response.status).toBe(201);
    const rows = await knex()("room_messages").where({ room_id: room.id }).orderBy("created_at").select("sender_type", "model_id", "own_key", "cost_nanos", "billed_user_id", "input_tokens", "output_tokens");
    expect(rows.map((row) => [row.sender_type, row.model_id, row.billed_user_id])).toEqual([["user", null, null], ["persona", "alpha", member.id]]);
    const reply = rows[1]!;
    expect(reply.input_tokens).toBeGreaterThan(0);
    expect(reply.own_key).toBe(false);
    expect(Number(reply.cost_nanos)).toBe(expectedCost("alpha", reply));
    expect(rows[0]!.cost_nanos).toBeNull();

    // The member's usage counts it; the room's owner's does not.
    const usage = (await world.service.clientFor(member).GET("/v1/billing/usage")).data!;
    expect(usage.costs).toMatchObject({ replies: 1, input_tokens: reply.input_tokens, output_tokens: reply.output_tokens });
    expect(usage.costs.cost_usd).toBeCloseTo(Number(reply.cost_nanos) / 1e9, 12);
    expect(usage.costs.by_model.map((model) => [model.model, model.replies])).toEqual([["alpha", 1]]);
    expect((await world.service.clientFor(owner).GET("/v1/billing/usage")).data!.costs.replies).toBe(0);

    // Studio analytics and the operator's report, per member and per persona.
    const analytics = (await world.service.clientFor(owner).GET("/v1/studio/{persona_id}/analytics", { params: { path: { persona_id: persona.id }, query: { period: "7d" } } })).data!;
    expect(analytics.cost_usd).toBeCloseTo(Number(reply.cost_nanos) / 1e9, 12);
    const window = { from: new Date(Date.now() - 86_400_000), to: new Date(Date.now() + 86_400_000), limit: 1000 };
    expect((await costReport(world.service.services, "user", window)).find((line) => line.id === member.id)).toMatchObject({ replies: 1, costNanos: Number(reply.cost_nanos) });
    expect((await costReport(world.service.services, "user", window)).find((line) => line.id === owner.id)).toBeUndefined();
    expect((await costReport(world.service.services, "persona", window)).find((line) => line.id === persona.id)).toMatchObject({ name: "Roomy", replies: 1 });

  });
});
