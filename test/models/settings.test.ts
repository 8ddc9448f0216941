import { describe, expect, it } from "vitest";
import { uploadCard, exportCard } from "../cards/helpers.ts";
import { createConversation, createPersona, sendBlocking } from "../support/chat.ts";
import { databaseKind } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";
import { callBody, chatCalls, expectedCost, type ModelsWorld, useModelsWorld } from "./support.ts";

// Issue 40, item 3: a persona's generation settings, and each instruction version's and A/B
// variant's over them, reach its model's upstream; the studio's test chat tries them; a card
// export carries them and an import sets them again.
let world: ModelsWorld;
let alice: TestUser;
let bob: TestUser;

useModelsWorld(2, (started, [a, b]) => {
  [world, alice, bob] = [started, a!, b!];
});

const api = (user: TestUser) => world.service.clientFor(user);

describe(`instruction versions and their settings (${databaseKind})`, () => {
  it("keeps a version's settings, and activating it sets them over the persona's", async () => {
    const persona = await createPersona(world.service, alice, { name: "Versioned", model: "beta", model_settings: { temperature: 0.5, top_p: 0.9 } });
    const path = { params: { path: { persona_id: persona.id } } };
    const draft = await api(alice).POST("/v1/studio/{persona_id}/versions", { ...path, body: { instructions: "You are terse.", model_settings: { temperature: 0.1, max_tokens: 100 } } });
    expect(draft.response.status).toBe(201);
    expect(draft.data).toMatchObject({ status: "draft", model_settings: { temperature: 0.1, max_tokens: 100 } });
    const listed = await api(alice).GET("/v1/studio/{persona_id}/versions", path);
    expect(listed.data!.data.map((version) => version.model_settings)).toEqual([{ temperature: 0.1, max_tokens: 100 }, {}]);

    const activated = await api(alice).POST("/v1/studio/{persona_id}/versions/{version_id}/activate", { params: { path: { persona_id: persona.id, version_id: draft.data!.id } } });
    expect(activated.response.status).toBe(200);
    const read = await api(alice).GET("/v1/personas/{id}", { params: { path: { id: persona.id } } });
    expect(read.data).toMatchObject({ instructions: "You are terse.", model_settings: { temperature: 0.1, top_p: 0.9, max_tokens: 100 } });
    const conversation = await createConversation(world.service, alice, persona.id, "versioned");
    await sendBlocking(world.service, alice, conversation.id, "Hi");
    expect(callBody(world.second)).toMatchObject({ temperature: 0.1, top_p: 0.9, max_tokens: 100 });
  });

  it("refuses settings out of the contract's bounds, and another user's persona (404)", async () => {
    const persona = await createPersona(world.service, alice, { name: "Bounded", model: "alpha" });
    const path = { params: { path: { persona_id: persona.id } } };
    const version = await api(alice).POST("/v1/studio/{persona_id}/versions", { ...path, body: { instructions: "x", model_settings: { top_p: 1.5 } } as never });
    expect(version.response.status).toBe(400);
    expect(version.error).toMatchObject({ error: { details: { errors: [{ path: "/body/model_settings/top_p" }] } } });
    const bad = await api(alice).POST("/v1/studio/{persona_id}/variants", { ...path, body: { name: "v", instructions: "x", traffic_percentage: 10, model_settings: { temperature: 3 } } as never });
    expect(bad.response.status).toBe(400);
    expect((await api(bob).POST("/v1/studio/{persona_id}/versions", { ...path, body: { instructions: "x", model_settings: { temperature: 1 } } })).response.status).toBe(404);
  });
});

describe(`A/B variants and their settings (${databaseKind})`, () => {
  it("gives a variant's conversations its settings over the persona's, and changes them on update", async () => {
    const persona = await createPersona(world.service, alice, { name: "Split", model: "beta", model_settings: { temperature: 0.5, seed: 3 } });
    const path = { params: { path: { persona_id: persona.id } } };
    const created = await api(alice).POST("/v1/studio/{persona_id}/variants", { ...path, body: { name: "Hot", instructions: "You are wild.", traffic_percentage: 100, model_settings: { temperature: 1.7 } } });
    expect(created.response.status).toBe(201);
    expect(created.data).toMatchObject({ model_settings: { temperature: 1.7 } });
    const conversation = await createConversation(world.service, alice, persona.id, "variant");
    await sendBlocking(world.service, alice, conversation.id, "Hi");
    expect(callBody(world.second)).toMatchObject({ temperature: 1.7, seed: 3 });
    expect(callBody(world.second).messages[0]!.content).toBe("You are wild.");

    // Only the settings change: the share stays.
    const updated = await api(alice).PUT("/v1/studio/{persona_id}/variants/{variant_id}", { params: { path: { persona_id: persona.id, variant_id: created.data!.id } }, body: { model_settings: { temperature: 0.2 } } });
    expect(updated.data).toMatchObject({ traffic_percentage: 100, model_settings: { temperature: 0.2 } });
    await sendBlocking(world.service, alice, conversation.id, "Again");
    expect(callBody(world.second)).toMatchObject({ temperature: 0.2, seed: 3 });
  });
});

describe(`the studio's test chat (${databaseKind})`, () => {
  it("tries settings over the version's and the persona's, and reports the model that answered and what it cost", async () => {
    const persona = await createPersona(world.service, alice, { name: "Tested", model: "alpha", model_settings: { temperature: 0.4, top_p: 0.5 } });
    const answer = await api(alice).POST("/v1/studio/{persona_id}/test-chat", { params: { path: { persona_id: persona.id } }, body: { message: "Hi", model_settings: { temperature: 1.2, stop: ["END"] } } });
    expect(answer.response.status).toBe(200);
    const result = answer.data!;
    expect(result).toMatchObject({ model: "alpha-upstream", model_id: "alpha", fallback_from: null, model_settings: { temperature: 1.2, top_p: 0.5, stop: ["END"] } });
    expect(result.cost_usd).toBeCloseTo(expectedCost("alpha", { input_tokens: result.tokens.input, output_tokens: result.tokens.output }) / 1e9, 12);
    expect(callBody(world.first)).toMatchObject({ model: "alpha-upstream", temperature: 1.2, top_p: 0.5, stop: ["END"] });

    // Its model failing before answering: the fallback answers, and says so.
    world.first.chat.next({ status: 503 });
    const fallback = (await api(alice).POST("/v1/studio/{persona_id}/test-chat", { params: { path: { persona_id: persona.id } }, body: { message: "Hi" } })).data!;
    expect(fallback).toMatchObject({ model_id: "beta", fallback_from: "alpha" });
    expect(chatCalls(world.second)).toHaveLength(1);
    // Beyond the model's output: capped to it.
    world.first.reset();
    const greedy = await api(alice).POST("/v1/studio/{persona_id}/test-chat", { params: { path: { persona_id: persona.id } }, body: { message: "Hi", model_settings: { max_tokens: 9999 } } });
    expect(greedy.response.status).toBe(200);
    expect(greedy.data!.model_settings.max_tokens).toBe(9999);
    expect(callBody(world.first)).toMatchObject({ max_tokens: 256 });
  });
});

describe(`character cards and settings (${databaseKind})`, () => {
  it("exports the owner's model and settings in the card's own extension, and an import sets them again", async () => {
    const settings = { temperature: 0.7, stop: ["<END>"], max_tokens: 200, client_may_set: ["temperature" as const] };
    const persona = await createPersona(world.service, alice, { name: "Carded", model: "alpha", model_settings: settings, is_public: true });
    const card = await (await exportCard(world.service, alice, persona.id, "json")).json();
    expect(card.data.extensions.persona).toMatchObject({ model: "alpha", model_settings: settings });
    // Another user's export of the public persona carries neither.
    const theirs = await (await exportCard(world.service, bob, persona.id, "json")).json();
    expect(theirs.data.extensions.persona.model_settings).toBeUndefined();

    const imported = await (await uploadCard(world.service, bob, JSON.stringify(card), "carded.json")).json();
    expect(imported).toMatchObject({ model: "alpha", model_settings: settings });

    // A card's settings beyond the bounds are left out, not refused; a model this server lacks is its default.
    card.data.extensions.persona.model_settings = { temperature: 9, max_tokens: 0, top_p: 0.3, stop: "one" };
    card.data.extensions.persona.model = "no-such-model";
    const lenient = await (await uploadCard(world.service, bob, JSON.stringify(card), "lenient.json")).json();
    expect(lenient).toMatchObject({ model: "beta", model_settings: { top_p: 0.3 } });
    expect(Object.keys(lenient.model_settings)).toEqual(["top_p"]);
  });
});
