import type { ApiError } from "../../toolkit/http/errors.ts";
import type { ReplyRecord } from "../replies/index.ts";

/**
 * A reply the content policy withheld (MODERATION_CHECK_REPLIES, issue 41), as OpenAI reports a
 * filtered completion: no text, `finish_reason: content_filter`, and the tokens it took. OpenAI's
 * clients read that as an answer, where a 502 would make the official SDKs generate it again. No
 * `cost_usd`: the withheld reply is recorded nowhere. Undefined for any other failure.
 */
export function withheldReply(error: ApiError): Pick<ReplyRecord, "content" | "usage" | "finishReason"> | undefined {
  if (error.code !== "reply_flagged") return undefined;
  const usage = (error.details as { usage?: { input_tokens?: number; output_tokens?: number } } | undefined)?.usage;
  return { content: "", usage: { inputTokens: usage?.input_tokens ?? 0, outputTokens: usage?.output_tokens ?? 0 }, finishReason: "content_filter" };
}
