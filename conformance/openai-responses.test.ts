import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { contract } from "../test/support/contract.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { schemaErrors } from "../test/support/schema.ts";
import { parseSse } from "../test/support/sse.ts";
import { target } from "./support/target.ts";

describe("openai responses", () => {
  let user: TestUser;
  let personaId: string | undefined;

  beforeAll(async () => {
    user = await registerUser("openai_responses");
    personaId = await createPersona(user);
  });

  op("openai_responses_create", async () => {
    const input = "Which planet is the bright one low in the west after sunset?";
    const whole = await call("openai_responses_create", { token: user.token, json: { model: idOr(personaId), input }, headers: { accept: "application/json" }, expect: [200] });
    if (target.stateful) expect(whole.json).toMatchObject({ object: "response", status: "completed", model: personaId });

    const streamed = await call("openai_responses_create", {
      token: user.token,
      json: { model: idOr(personaId), input, stream: true },
      headers: { accept: "text/event-stream" },
      expect: [200],
    });
    if (streamed.status !== 200 || !target.stateful) return;
    expect(streamed.contentType).toBe("text/event-stream");
    const events = parseSse(streamed.text).events;
    expect(events.at(-1)?.event).toBe("response.completed");
    for (const { event, data } of events) {
      const parsed = JSON.parse(data) as { type: string };
      expect(parsed.type).toBe(event);
      expect(schemaErrors(contract.components.schemas.OpenAIResponsesStreamEvent!, parsed), data).toEqual([]);
    }
  }, 60_000);
});
