import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { personaInput, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { target } from "./support/target.ts";

describe("personas", () => {
  let owner: TestUser;
  let personaId: string | undefined;

  beforeAll(async () => {
    owner = await registerUser("personas");
  });

  op("personas_create", async () => {
    const answer = await call("personas_create", { token: owner.token, json: personaInput, expect: [201] });
    personaId = (answer.json as { id: string }).id;
    if (target.stateful) expect(answer.json).toMatchObject({ name: personaInput.name, creator_id: owner.id });
  });

  op("personas_list", async () => {
    const answer = await call("personas_list", { token: owner.token, query: { limit: 10, offset: 0, sort: "created_at" }, expect: [200] });
    if (target.stateful && personaId) expect((answer.json as { data: { id: string }[] }).data.map((p) => p.id)).toContain(personaId);
  });

  op("personas_explore", async () => {
    await call("personas_explore", { token: owner.token, query: { limit: 5, category: "tutor", sort: "popular" }, expect: [200] });
  });

  op("personas_get", async () => {
    await call("personas_get", { token: owner.token, path: { id: idOr(personaId) }, expect: [200] });
  });

  op("personas_update", async () => {
    const json = { description: "Now with more nebulae.", voice_id: "onyx" };
    const answer = await call("personas_update", { token: owner.token, path: { id: idOr(personaId) }, json, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject(json);
  });

  op("personas_delete", async () => {
    await call("personas_delete", { token: owner.token, path: { id: idOr(personaId) }, expect: [200] });
    await call("personas_get", { token: owner.token, path: { id: idOr(personaId) }, expect: [404] });
  });
});
