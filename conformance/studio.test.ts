import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { target } from "./support/target.ts";

describe("studio", () => {
  let creator: TestUser;
  let personaId: string | undefined;
  let versionId: string | undefined;
  let variantId: string | undefined;

  beforeAll(async () => {
    creator = await registerUser("studio");
    personaId = await createPersona(creator);
  });

  const persona = () => ({ persona_id: idOr(personaId) });

  op("studio_create_version", async () => {
    const json = {
      instructions: "You are Captain Nova, a warm retired starship captain. Keep answers under 120 words and end with a question.",
      changelog: "Shorter answers; end every answer with a question.",
    };
    const answer = await call("studio_create_version", { token: creator.token, path: persona(), json, headers: { "idempotency-key": randomUUID() }, expect: [201] });
    versionId = (answer.json as { id: string }).id;
  });

  op("studio_list_versions", async () => {
    const answer = await call("studio_list_versions", { token: creator.token, path: persona(), expect: [200] });
    if (target.stateful && versionId) expect(JSON.stringify(answer.json)).toContain(versionId);
  });

  op("studio_activate_version", async () => {
    await call("studio_activate_version", { token: creator.token, path: { ...persona(), version_id: idOr(versionId) }, expect: [200] });
  });

  op("studio_test_chat", async () => {
    const json = { message: "Why is Mars red?", version_id: idOr(versionId) };
    await call("studio_test_chat", { token: creator.token, path: persona(), json, expect: [200] });
  }, 60_000);

  op("studio_create_variant", async () => {
    const json = { name: "Pirate captain", instructions: "You are Captain Nova with a pirate's swagger.", traffic_percentage: 20 };
    const answer = await call("studio_create_variant", { token: creator.token, path: persona(), json, expect: [201] });
    variantId = (answer.json as { id: string }).id;
  });

  op("studio_list_variants", async () => {
    await call("studio_list_variants", { token: creator.token, path: persona(), expect: [200] });
  });

  op("studio_update_variant", async () => {
    const json = { traffic_percentage: 35 };
    await call("studio_update_variant", { token: creator.token, path: { ...persona(), variant_id: idOr(variantId) }, json, expect: [200] });
  });

  op("studio_analytics", async () => {
    await call("studio_analytics", { token: creator.token, path: persona(), query: { period: "7d" }, expect: [200] });
  });

  op("studio_publish", async () => {
    const json = { category: "education", tags: ["astronomy", "science", "storytelling"], pricing: "free" };
    await call("studio_publish", { token: creator.token, path: persona(), json, expect: [200] });
  });
});
