import { beforeAll, describe, expect } from "vitest";
import { CHAT_STREAM_EVENT_SCHEMAS as EVENT_SCHEMAS } from "./support/chat-events.ts";
import { call } from "./support/client.ts";
import { contract } from "../test/support/contract.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { ifLive, op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { schemaErrors } from "../test/support/schema.ts";
import { parseSse } from "../test/support/sse.ts";
import { target } from "./support/target.ts";

// The conversation tree (issue 21): regenerate, choose an alternative, edit, list and switch branches.

function checkStream(answer: { status: number; contentType: string; text: string }): string | undefined {
  if (answer.status !== 200) return undefined;
  expect(answer.contentType).toBe("text/event-stream");
  const { events } = parseSse(answer.text);
  // A tree reply runs as a generation: it names itself first, to be resumed or stopped.
  expect(events[0]?.event).toBe("start");
  for (const event of events) {
    const schema = EVENT_SCHEMAS[event.event];
    expect(schema, `unexpected stream event ${event.event}`).toBeDefined();
    expect(schemaErrors(contract.components.schemas[schema!]!, JSON.parse(event.data)), `${event.event} event ${event.data}`).toEqual([]);
  }
  expect(events.at(-1)!.event).toBe("done");
  return (JSON.parse(events.at(-1)!.data) as { message_id: string }).message_id;
}

describe("conversation tree", () => {
  let user: TestUser;
  let conversationId: string | undefined;
  let questionId: string | undefined;
  let firstReplyId: string | undefined;
  let lastReplyId: string | undefined;
  let leafId: string | undefined;

  beforeAll(async () => {
    user = await registerUser("tree");
    const personaId = await createPersona(user);
    const created = await ifLive(() => call("conversations_create", { token: user.token, json: { persona_id: idOr(personaId) }, expect: [201] }));
    conversationId = target.stateful ? (created?.json as { id?: string } | undefined)?.id : undefined;
    const sent = await ifLive(() =>
      call("conversations_send_message", { token: user.token, path: { id: idOr(conversationId) }, json: { content: "Which planet is the evening star?" }, expect: [201] }),
    );
    if (target.stateful && sent?.status === 201) {
      const exchange = sent.json as { user_message: { id: string }; assistant_message: { id: string } };
      questionId = exchange.user_message.id;
      firstReplyId = lastReplyId = exchange.assistant_message.id;
    }
  }, 60_000);

  op("conversation_tree_regenerate", async () => {
    const answer = await call("conversation_tree_regenerate", { token: user.token, path: { id: idOr(conversationId), message_id: idOr(lastReplyId) }, expect: [201] });
    if (target.stateful && answer.status === 201) {
      expect(answer.json).toMatchObject({ role: "assistant", parent_id: questionId, alternative_index: 1, alternative_count: 2 });
      lastReplyId = (answer.json as { id: string }).id;
    }
  }, 60_000);

  op("conversation_tree_regenerate_stream", async () => {
    const answer = await call("conversation_tree_regenerate_stream", { token: user.token, path: { id: idOr(conversationId), message_id: idOr(lastReplyId) }, expect: [200] });
    const id = checkStream(answer);
    if (target.stateful && id) lastReplyId = id;
  }, 60_000);

  op("conversation_tree_select", async () => {
    const answer = await call("conversation_tree_select", { token: user.token, path: { id: idOr(conversationId), message_id: idOr(firstReplyId) }, expect: [200] });
    if (target.stateful && answer.status === 200) expect(answer.json).toMatchObject({ active_message_id: firstReplyId, message_count: 2 });
  });

  op("conversation_tree_edit", async () => {
    const answer = await call("conversation_tree_edit", {
      token: user.token,
      path: { id: idOr(conversationId), message_id: idOr(questionId) },
      json: { content: "Which planet is the red one?" },
      expect: [201],
    });
    if (target.stateful && answer.status === 201) expect((answer.json as { user_message: { alternative_count: number } }).user_message.alternative_count).toBe(2);
  }, 60_000);

  op("conversation_tree_edit_stream", async () => {
    const answer = await call("conversation_tree_edit_stream", {
      token: user.token,
      path: { id: idOr(conversationId), message_id: idOr(questionId) },
      json: { content: "Which planet has rings?" },
      expect: [200],
    });
    checkStream(answer);
  }, 60_000);

  op("conversation_tree_list_branches", async () => {
    const answer = await call("conversation_tree_list_branches", { token: user.token, path: { id: idOr(conversationId) }, query: { limit: 20 }, expect: [200] });
    if (target.stateful && answer.status === 200) {
      const body = answer.json as { data: { leaf_id: string; active: boolean }[]; total: number };
      // Three alternatives of the first reply and two edits: five leaves.
      expect(body.total).toBe(5);
      expect(body.data.filter((branch) => branch.active)).toHaveLength(1);
      leafId = body.data.find((branch) => !branch.active)?.leaf_id;
    }
  });

  op("conversation_tree_activate_branch", async () => {
    const answer = await call("conversation_tree_activate_branch", { token: user.token, path: { id: idOr(conversationId), leaf_id: idOr(leafId) }, expect: [200] });
    if (target.stateful && answer.status === 200) expect(answer.json).toMatchObject({ leaf_id: leafId, active: true });
  });
});
