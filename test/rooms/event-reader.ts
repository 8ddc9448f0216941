import { createParser } from "eventsource-parser";
import { expect } from "vitest";

export interface ReadEvent {
  id: string | undefined;
  event: string;
  data: Record<string, unknown>;
}

export interface EventReader {
  status: number;
  /** Every event received so far, in order. */
  events: ReadEvent[];
  /** Comment lines received so far (keep-alives). */
  comments: string[];
  /** Resolves when the stream has ended (the server closed it, or `close()`). */
  ended: Promise<void>;
  /** Waits until `test` holds for the events received so far. */
  until: (test: (events: ReadEvent[]) => boolean, what: string, timeoutMs?: number) => Promise<ReadEvent[]>;
  /** The stored events (those with an id) of a type. */
  stored: (type?: string) => ReadEvent[];
  close: () => void;
}

/**
 * Opens `GET /v1/rooms/{roomId}/events` on `baseUrl` as `auth` and reads it in the background, the
 * way a client does: fetch, then an SSE parser over the body.
 */
export async function readEvents(baseUrl: string, roomId: string, auth: Record<string, string>, lastEventId?: string): Promise<EventReader> {
  const controller = new AbortController();
  const response = await fetch(`${baseUrl}/v1/rooms/${roomId}/events`, {
    headers: { ...auth, accept: "text/event-stream", ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId }) },
    signal: controller.signal,
  });
  const events: ReadEvent[] = [];
  const comments: string[] = [];
  let ended: Promise<void> = Promise.resolve();
  if (response.status === 200) {
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const parser = createParser({
      onEvent: (message) => events.push({ id: message.id, event: message.event ?? "message", data: JSON.parse(message.data) }),
      onComment: (comment) => comments.push(comment.trim()),
    });
    ended = (async () => {
      const decoder = new TextDecoder();
      try {
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
      } catch {
        // closed by the test
      }
    })();
  }
  const until = async (test: (received: ReadEvent[]) => boolean, what: string, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!test(events)) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; received ${JSON.stringify(events, null, 1)}`);
      await new Promise((wait) => setTimeout(wait, 20));
    }
    return events;
  };
  return {
    status: response.status,
    events,
    comments,
    ended,
    until,
    stored: (type) => events.filter((event) => event.id !== undefined && (type === undefined || event.event === type)),
    close: () => controller.abort(),
  };
}
