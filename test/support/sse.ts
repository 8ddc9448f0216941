import { createParser } from "eventsource-parser";

/** One event of a `text/event-stream` body; `event` is "message" when the stream names none. */
export interface SseEvent {
  event: string;
  data: string;
}

export interface SseBody {
  events: SseEvent[];
  /** Comment lines, trimmed (the service's keep-alives). */
  comments: string[];
}

function collector() {
  const body: SseBody = { events: [], comments: [] };
  const parser = createParser({
    onEvent: (event) => body.events.push({ event: event.event ?? "message", data: event.data }),
    onComment: (comment) => body.comments.push(comment.trim()),
  });
  return { body, parser };
}

/** Splits a complete `text/event-stream` body into its events and comments. */
export function parseSse(text: string): SseBody {
  const { body, parser } = collector();
  parser.feed(text);
  // A last event without its blank line is still complete once the body has ended.
  parser.feed("\n\n");
  return body;
}

/** Reads a streamed `text/event-stream` response to its end. */
export async function readEvents(response: Response): Promise<SseBody> {
  const { body, parser } = collector();
  const decoder = new TextDecoder();
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
  return body;
}
