import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { contract } from "../test/support/contract.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { schemaErrors } from "../test/support/schema.ts";
import { parseSse } from "../test/support/sse.ts";
import { target } from "./support/target.ts";

describe("openai", () => {
  let user: TestUser;
  let personaId: string | undefined;

  beforeAll(async () => {
    user = await registerUser("openai");
    personaId = await createPersona(user);
  });

  op("openai_list_models", async () => {
    const answer = await call("openai_list_models", { token: user.token, expect: [200] });
    if (target.stateful) expect((answer.json as { data: { persona_id: string }[] }).data.map((model) => model.persona_id)).toContain(personaId);
  });

  op("openai_get_model", async () => {
    const answer = await call("openai_get_model", { token: user.token, path: { model: idOr(personaId) }, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject({ persona_id: personaId, object: "model" });
  });

  op("openai_create_chat_completion", async () => {
    const messages = [{ role: "user", content: "Which planet is the bright one low in the west after sunset?" }];
    const whole = await call("openai_create_chat_completion", { token: user.token, json: { model: idOr(personaId), messages }, headers: { accept: "application/json" }, expect: [200] });
    if (target.stateful) expect(whole.json).toMatchObject({ object: "chat.completion", model: personaId });

    const streamed = await call("openai_create_chat_completion", {
      token: user.token,
      json: { model: idOr(personaId), messages, stream: true, stream_options: { include_usage: true } },
      headers: { accept: "text/event-stream" },
      expect: [200],
    });
    if (streamed.status !== 200 || !target.stateful) return;
    expect(streamed.contentType).toBe("text/event-stream");
    const data = parseSse(streamed.text).events.map((event) => event.data);
    expect(data.at(-1)).toBe("[DONE]");
    for (const chunk of data.slice(0, -1)) {
      expect(schemaErrors(contract.components.schemas.OpenAIChatCompletionChunk!, JSON.parse(chunk)), chunk).toEqual([]);
    }
  }, 60_000);
});
