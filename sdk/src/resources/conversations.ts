import { init } from "../core.ts";
import { errorFromResponse } from "../errors.ts";
import { GeneratedConversations } from "../generated/resources.ts";
import { randomKey } from "../signal.ts";
import { ChatStream, type OpenedStream } from "../stream.ts";
import type { IdempotentRequestOptions, RequestBody, RequestOptions } from "../types.ts";

/**
 * One-to-one chats with a persona. The methods of its operations are generated from the contract
 * (GeneratedConversations); the streamed replies are written here: each is a ChatStream that
 * resumes a dropped connection and stops its generation.
 *
 * @example
 * const conversation = await client.conversations.create({ persona_id: persona.id });
 * const reply = await client.conversations.stream(conversation.id, { content: "Hi!" }).text();
 */
export class Conversations extends GeneratedConversations {
  /**
   * Sends a message and streams the reply as typed events (see ChatStream). Errors the service
   * answers before streaming (NotFoundError, PlanLimitError, ...) are thrown on first read.
   * @example
   * const stream = client.conversations.stream(id, { content: "Tell me about Mars" });
   * for await (const event of stream) {
   *   if (event.type === "delta") process.stdout.write(event.content);
   *   if (event.type === "error") console.error(event.code, event.message);
   * }
   * // or: const reply = await client.conversations.stream(id, { content }).text();
   */
  stream(id: string, body: RequestBody<"conversations_stream_message">, options: IdempotentRequestOptions = {}): ChatStream {
    const idempotencyKey = options.idempotencyKey ?? randomKey();
    return new ChatStream(
      async (signal) => {
        const { data, error, response } = await this.core.raw.POST("/v1/conversations/{id}/messages/stream", {
          params: { path: { id } },
          body,
          parseAs: "stream",
          ...init({ ...options, idempotencyKey, signal }),
        });
        if (!response.ok) throw errorFromResponse(response, error);
        if (!data) throw errorFromResponse(response, undefined);
        return { body: data, response };
      },
      {
        idempotencyKey,
        idleTimeout: this.core.timeout,
        signal: options.signal,
        resume: (generationId, lastEventId, signal) => this.#openResume(id, generationId, lastEventId, signal),
        stop: (generationId) => this.stopGeneration(id, generationId),
      },
    );
  }

  /**
   * Follows a generation (a streamed reply) from after `lastEventId`, e.g. from another device or
   * after a restart; the ChatStream resumes by itself after drops.
   * @example
   * const stream = client.conversations.resume(id, generationId, { lastEventId: "12" });
   * for await (const event of stream) if (event.type === "delta") process.stdout.write(event.content);
   */
  resume(id: string, generationId: string, options: RequestOptions & { lastEventId?: string } = {}): ChatStream {
    return new ChatStream((signal) => this.#openResume(id, generationId, options.lastEventId, signal), {
      idempotencyKey: "",
      idleTimeout: this.core.timeout,
      signal: options.signal,
      generationId,
      lastEventId: options.lastEventId,
      resume: (generation, lastEventId, signal) => this.#openResume(id, generation, lastEventId ?? options.lastEventId, signal),
      stop: (generation) => this.stopGeneration(id, generation),
    });
  }

  async #openResume(id: string, generationId: string, lastEventId: string | undefined, signal: AbortSignal): Promise<OpenedStream> {
    const { data, error, response } = await this.core.raw.GET("/v1/conversations/{id}/generations/{generation_id}/stream", {
      params: { path: { id, generation_id: generationId }, header: lastEventId === undefined ? {} : { "Last-Event-ID": lastEventId } },
      parseAs: "stream",
      ...init({ signal }),
    });
    if (!response.ok) throw errorFromResponse(response, error);
    if (!data) throw errorFromResponse(response, undefined);
    return { body: data, response };
  }

  /**
   * Regenerates the last reply and streams it, with the same events as `stream`.
   * @example
   * const text = await client.conversations.regenerateStream(id, reply.id).text();
   */
  regenerateStream(id: string, messageId: string, options: RequestOptions = {}): ChatStream {
    return this.#treeStream(id, options, (signal) =>
      this.core.raw.POST("/v1/conversations/{id}/messages/{message_id}/regenerate/stream", {
        params: { path: { id, message_id: messageId } },
        parseAs: "stream",
        ...init({ ...options, signal }),
      }),
    );
  }

  /**
   * Edits an earlier user message and streams the reply of the new branch.
   * @example
   * const text = await client.conversations.editStream(id, question.id, { content: "And Mars?" }).text();
   */
  editStream(id: string, messageId: string, body: RequestBody<"conversation_tree_edit_stream">, options: RequestOptions = {}): ChatStream {
    return this.#treeStream(id, options, (signal) =>
      this.core.raw.POST("/v1/conversations/{id}/messages/{message_id}/edit/stream", {
        params: { path: { id, message_id: messageId } },
        body,
        parseAs: "stream",
        ...init({ ...options, signal }),
      }),
    );
  }

  /**
   * A streamed tree reply; it has no Idempotency-Key (a retry would make another alternative). It
   * runs as a generation, so it resumes after drops and `stop()` keeps the partial reply.
   */
  #treeStream(
    id: string,
    options: RequestOptions,
    post: (signal: AbortSignal) => Promise<{ data?: ReadableStream<Uint8Array> | null | undefined; error?: unknown; response: Response }>,
  ): ChatStream {
    return new ChatStream(
      async (signal) => {
        const { data, error, response } = await post(signal);
        if (!response.ok) throw errorFromResponse(response, error);
        if (!data) throw errorFromResponse(response, undefined);
        return { body: data, response };
      },
      {
        idempotencyKey: "",
        idleTimeout: this.core.timeout,
        signal: options.signal,
        resume: (generationId, lastEventId, signal) => this.#openResume(id, generationId, lastEventId, signal),
        stop: (generationId) => this.stopGeneration(id, generationId),
      },
    );
  }
}
