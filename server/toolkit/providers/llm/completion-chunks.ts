import { APIError } from "openai";
import type OpenAI from "openai";
import { createParser, type EventSourceMessage } from "eventsource-parser";

type Chunk = OpenAI.ChatCompletionChunk;

/**
 * The chunks of a streamed chat completion, read from the raw response the `openai` package
 * answered (`.asResponse()`: its request building, retries, timeouts and error answers stay the
 * package's) with eventsource-parser: the package's own stream reader costs about a quarter of a
 * millisecond of CPU more per reply, and builds an exception with a stack when a read is cancelled
 * (issue 37). What it does is kept: `[DONE]` ends the reply, an `error` event or a chunk carrying
 * `error` is an `APIError` as the package makes it, a chunk that is not JSON a `SyntaxError`, and a
 * read ended by `signal` ends quietly (the caller asks why it ended). Leaving early cancels the body.
 */
export async function* completionChunks(response: Response, signal: AbortSignal): AsyncGenerator<Chunk> {
  const body = response.body;
  if (!body) return;
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const messages: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (message) => void messages.push(message) });
  let done = false;
  try {
    for (;;) {
      let read: ReadableStreamReadResult<Uint8Array>;
      try {
        read = await reader.read();
      } catch (error) {
        if (signal.aborted) return;
        throw error;
      }
      if (read.done) {
        done = true;
        return;
      }
      parser.feed(decoder.decode(read.value, { stream: true }));
      for (const message of messages.splice(0)) {
        if (message.data === "[DONE]") {
          done = true;
          return;
        }
        let data: Chunk & { error?: unknown };
        try {
          data = JSON.parse(message.data) as Chunk & { error?: unknown };
        } catch {
          throw new SyntaxError("Error reading response: malformed server-sent event JSON.");
        }
        if (message.event === "error") throw new APIError(undefined, (data as { error?: object }).error ?? data, undefined, response.headers);
        if (data && data.error) throw new APIError(undefined, data.error as object, undefined, response.headers);
        yield data;
      }
    }
  } finally {
    // Left before the end (a stop, a capped reply, an error): the rest is not read.
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
