import { describe, expect, it } from "vitest";
import { fromDiscord, fromSlack, fromTelegram, shouldAnswer } from "../../server/areas/integrations/messages.ts";
import { SIGNATURE_WINDOW_SECONDS, slackSignature, slackSignatureValid } from "../../server/areas/integrations/signatures.ts";
import { splitMessage } from "../../server/areas/integrations/split.ts";

// The pure parts of the integrations area: message splitting at the platforms' limits, the v0
// signature's window, and the normalisers' reading of each platform's payload.

describe("splitMessage", () => {
  it("keeps a text at the limit whole and cuts a longer one at a break in the second half of each part", () => {
    expect(splitMessage("a".repeat(2000), 2000)).toEqual(["a".repeat(2000)]);
    const words = Array.from({ length: 600 }, (_, n) => `word${n}`).join(" ");
    const parts = splitMessage(words, 2000);
    expect(parts.every((part) => part.length <= 2000)).toBe(true);
    expect(parts.join(" ")).toBe(words);
    expect(splitMessage(`${"x".repeat(1500)}\n\n${"y".repeat(1000)}`, 2000)).toEqual(["x".repeat(1500), "y".repeat(1000)]);
    // No break at all: a hard cut.
    expect(splitMessage("z".repeat(4001), 2000).map((part) => part.length)).toEqual([2000, 2000, 1]);
    expect(splitMessage("   ", 10)).toEqual(["…"]);
  });
});

describe("slackSignatureValid", () => {
  const secret = "8f742231b10e8888abcd99yyyzzz85a5";
  const body = Buffer.from('{"type":"event_callback"}');
  const now = new Date(1_795_000_000_000);
  const signed = (timestamp: number) => ({ timestamp: String(timestamp), signature: slackSignature(secret, String(timestamp), body), rawBody: body });

  it("accepts a signature within the 5-minute window, to the second, and nothing outside it", () => {
    const at = now.getTime() / 1000;
    expect(slackSignatureValid(signed(at), secret, now)).toBe(true);
    expect(slackSignatureValid(signed(at - SIGNATURE_WINDOW_SECONDS), secret, now)).toBe(true);
    expect(slackSignatureValid(signed(at + SIGNATURE_WINDOW_SECONDS), secret, now)).toBe(true);
    expect(slackSignatureValid(signed(at - SIGNATURE_WINDOW_SECONDS - 1), secret, now)).toBe(false);
    expect(slackSignatureValid(signed(at + SIGNATURE_WINDOW_SECONDS + 1), secret, now)).toBe(false);
  });

  it("refuses another body, another secret, a malformed timestamp and missing parts", () => {
    const at = now.getTime() / 1000;
    expect(slackSignatureValid({ ...signed(at), rawBody: Buffer.from("{}") }, secret, now)).toBe(false);
    expect(slackSignatureValid(signed(at), "other", now)).toBe(false);
    expect(slackSignatureValid({ ...signed(at), timestamp: "1795000000.5" }, secret, now)).toBe(false);
    expect(slackSignatureValid({ ...signed(at), signature: undefined }, secret, now)).toBe(false);
    expect(slackSignatureValid({ ...signed(at), rawBody: undefined }, secret, now)).toBe(false);
    expect(slackSignatureValid({ ...signed(at), signature: "v0=short" }, secret, now)).toBe(false);
  });
});

describe("normalisers", () => {
  const bot = { id: "100", username: "nova_bot" };
  const settings = { platform: "forum" as const, status: "active", auto_respond: false, bot_user_id: "100", guild_id: "g", workspace_id: null, channel_ids: ["c"] };

  it("read a forum mention, strip it, and answer it only in the configured guild and channel", () => {
    const message = fromDiscord({ id: "1", channel_id: "c", guild_id: "g", content: "<@!100> hello", author: { id: "7", username: "ada" }, mentions: [{ id: "100" }] }, bot)!;
    expect(message).toMatchObject({ text: "hello", mentioned: true, direct: false, replyTo: "1", eventIds: ["message:1"] });
    expect(shouldAnswer(settings, message)).toBe(true);
    expect(shouldAnswer({ ...settings, channel_ids: ["d"] }, message)).toBe(false);
    expect(shouldAnswer({ ...settings, guild_id: "h" }, message)).toBe(false);
    expect(shouldAnswer({ ...settings, status: "inactive" }, message)).toBe(false);
    expect(fromDiscord({ id: "2", channel_id: "c" }, bot)).toBeUndefined();
  });

  it("read messenger mentions by name case-insensitively, and non-text updates as nothing", () => {
    const update = { update_id: 5, message: { message_id: 9, chat: { id: -1, type: "group" }, from: { id: 7, is_bot: false, first_name: "Ada", last_name: "L" }, text: "@Nova_Bot hi", entities: [{ type: "mention", offset: 0, length: 9 }] } };
    expect(fromTelegram(update, bot)).toMatchObject({ text: "hi", mentioned: true, authorName: "Ada L", eventIds: ["update:5"] });
    expect(fromTelegram({ update_id: 6, edited_message: {} }, bot)).toBeUndefined();
    expect(fromTelegram({ update_id: 7, message: { message_id: 1, chat: { id: 1, type: "private" }, from: { id: 7 }, text: "/start" } }, bot)).toMatchObject({ text: "Hello!", direct: true });
  });

  it("read a workspace message with both its event id and its channel + ts as keys", () => {
    const message = fromSlack({ type: "event_callback", team_id: "T", event_id: "Ev1", event: { type: "message", channel: "C", user: "U", text: "<@100> hi", ts: "1.2" } }, bot)!;
    expect(message).toMatchObject({ eventIds: ["event:Ev1", "message:C:1.2"], text: "hi", mentioned: true, place: "T" });
    expect(fromSlack({ type: "event_callback", event: { type: "reaction_added" } }, bot)).toBeUndefined();
  });
});
