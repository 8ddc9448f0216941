import type { APIPromise } from "../api-promise.ts";
import { init, list, unwrap, type Core } from "../core.ts";
import type { PageIterator } from "../pagination.ts";
import { randomKey } from "../signal.ts";
import { ChatStream, type OpenedStream } from "../stream.ts";
import type { IdempotentRequestOptions, QueryOf, RequestBody, RequestOptions, ResponseOf, Schemas } from "../types.ts";
import { errorFromResponse } from "../errors.ts";

/**
 * One-to-one chats with a persona.
 *
 * @example
 * const conversation = await client.conversations.create({ persona_id: persona.id });
 * const reply = await client.conversations.stream(conversation.id, { content: "Hi!" }).text();
 */
export class Conversations {
  readonly #core: Core;
  /** The messages of a conversation. */
  readonly messages: Messages;

  constructor(core: Core) {
    this.#core = core;
    this.messages = new Messages(core);
  }

  /**
   * Starts a conversation with a persona the caller owns or a public one.
   * @example
   * const conversation = await client.conversations.create({ persona_id: persona.id, title: "Stars" });
   */
  create(body: RequestBody<"conversations_create">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"conversations_create">> {
    return unwrap(this.#core.raw.POST("/v1/conversations", { body, ...init(options) }));
  }

  /**
   * The caller's conversations, most recently updated first.
   * @example
   * for await (const c of client.conversations.list({ persona_id })) console.log(c.title);
   */
  list(query: QueryOf<"conversations_list"> = {}, options?: RequestOptions): PageIterator<Schemas["Conversation"], ResponseOf<"conversations_list">> {
    return list((q) => this.#core.raw.GET("/v1/conversations", { params: { query: q }, ...init(options) }), query);
  }

  /**
   * A conversation with its 50 most recent messages, oldest first.
   * @example
   * const { title, messages } = await client.conversations.get(id);
   */
  get(id: string, options?: RequestOptions): APIPromise<ResponseOf<"conversations_get">> {
    return unwrap(this.#core.raw.GET("/v1/conversations/{id}", { params: { path: { id } }, ...init(options) }));
  }

  /**
   * Deletes a conversation and its messages.
   * @example
   * await client.conversations.delete(id);
   */
  delete(id: string, options?: RequestOptions): APIPromise<ResponseOf<"conversations_delete">> {
    return unwrap(this.#core.raw.DELETE("/v1/conversations/{id}", { params: { path: { id } }, ...init(options) }));
  }

  /**
   * Sends a message and waits for the whole reply; both are stored together.
   * @example
   * const { assistant_message } = await client.conversations.send(id, { content: "What is a nebula?" });
   */
  send(id: string, body: RequestBody<"conversations_send_message">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"conversations_send_message">> {
    return unwrap(this.#core.raw.POST("/v1/conversations/{id}/messages", { params: { path: { id } }, body, ...init(options) }));
  }

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
        const { data, error, response } = await this.#core.raw.POST("/v1/conversations/{id}/messages/stream", {
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
        idleTimeout: this.#core.timeout,
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
      idleTimeout: this.#core.timeout,
      signal: options.signal,
      generationId,
      resume: (generation, lastEventId, signal) => this.#openResume(id, generation, lastEventId ?? options.lastEventId, signal),
      stop: (generation) => this.stopGeneration(id, generation),
    });
  }

  /**
   * A generation's state: running, done, stopped or failed, with its message ids.
   * @example
   * const { status, reply_message_id } = await client.conversations.getGeneration(id, stream.generationId!);
   */
  getGeneration(id: string, generationId: string, options?: RequestOptions): APIPromise<ResponseOf<"conversation_generations_get">> {
    return unwrap(this.#core.raw.GET("/v1/conversations/{id}/generations/{generation_id}", { params: { path: { id, generation_id: generationId } }, ...init(options) }));
  }

  /**
   * Stops a running generation from anywhere, keeping the partial reply; harmless once it has ended.
   * @example
   * const generation = await client.conversations.stopGeneration(id, stream.generationId!);
   */
  stopGeneration(id: string, generationId: string, options?: RequestOptions): APIPromise<ResponseOf<"conversation_generations_stop">> {
    return unwrap(this.#core.raw.POST("/v1/conversations/{id}/generations/{generation_id}/stop", { params: { path: { id, generation_id: generationId } }, ...init(options) }));
  }

  async #openResume(id: string, generationId: string, lastEventId: string | undefined, signal: AbortSignal): Promise<OpenedStream> {
    const { data, error, response } = await this.#core.raw.GET("/v1/conversations/{id}/generations/{generation_id}/stream", {
      params: { path: { id, generation_id: generationId }, header: lastEventId === undefined ? {} : { "Last-Event-ID": lastEventId } },
      parseAs: "stream",
      ...init({ signal }),
    });
    if (!response.ok) throw errorFromResponse(response, error);
    if (!data) throw errorFromResponse(response, undefined);
    return { body: data, response };
  }

  /**
   * Full-text search over the caller's own messages; `highlight` wraps matches in `<mark>`.
   * @example
   * for await (const hit of client.conversations.search({ q: "nebula" })) console.log(hit.highlight);
   */
  search(query: QueryOf<"conversations_search">, options?: RequestOptions): PageIterator<Schemas["ConversationSearchHit"], ResponseOf<"conversations_search">> {
    return list((q) => this.#core.raw.GET("/v1/conversations/search", { params: { query: q as QueryOf<"conversations_search"> }, ...init(options) }), query);
  }

  // ------------------------------------------------------------ the conversation tree (issue 21)

  /**
   * Regenerates the active branch's last reply: a new alternative that becomes active.
   * @example
   * const again = await client.conversations.regenerate(id, reply.id); // again.alternative_index === 1
   */
  regenerate(id: string, messageId: string, options?: RequestOptions): APIPromise<ResponseOf<"conversation_tree_regenerate">> {
    return unwrap(this.#core.raw.POST("/v1/conversations/{id}/messages/{message_id}/regenerate", { params: { path: { id, message_id: messageId } }, ...init(options) }));
  }

  /**
   * Regenerates the last reply and streams it, with the same events as `stream`.
   * @example
   * const text = await client.conversations.regenerateStream(id, reply.id).text();
   */
  regenerateStream(id: string, messageId: string, options: RequestOptions = {}): ChatStream {
    return this.#treeStream(id, options, (signal) =>
      this.#core.raw.POST("/v1/conversations/{id}/messages/{message_id}/regenerate/stream", {
        params: { path: { id, message_id: messageId } },
        parseAs: "stream",
        ...init({ ...options, signal }),
      }),
    );
  }

  /**
   * Continues from an alternative (a reply or an edited message): its newest leaf becomes active.
   * @example
   * const conversation = await client.conversations.select(id, firstReply.id);
   */
  select(id: string, messageId: string, options?: RequestOptions): APIPromise<ResponseOf<"conversation_tree_select">> {
    return unwrap(this.#core.raw.POST("/v1/conversations/{id}/messages/{message_id}/select", { params: { path: { id, message_id: messageId } }, ...init(options) }));
  }

  /**
   * Edits an earlier user message: a new branch with the persona's reply, made active.
   * @example
   * const { assistant_message } = await client.conversations.edit(id, question.id, { content: "And Mars?" });
   */
  edit(id: string, messageId: string, body: RequestBody<"conversation_tree_edit">, options?: RequestOptions): APIPromise<ResponseOf<"conversation_tree_edit">> {
    return unwrap(this.#core.raw.POST("/v1/conversations/{id}/messages/{message_id}/edit", { params: { path: { id, message_id: messageId } }, body, ...init(options) }));
  }

  /**
   * Edits an earlier user message and streams the reply of the new branch.
   * @example
   * const text = await client.conversations.editStream(id, question.id, { content: "And Mars?" }).text();
   */
  editStream(id: string, messageId: string, body: RequestBody<"conversation_tree_edit_stream">, options: RequestOptions = {}): ChatStream {
    return this.#treeStream(id, options, (signal) =>
      this.#core.raw.POST("/v1/conversations/{id}/messages/{message_id}/edit/stream", {
        params: { path: { id, message_id: messageId } },
        body,
        parseAs: "stream",
        ...init({ ...options, signal }),
      }),
    );
  }

  /**
   * The conversation's branches, newest leaf first, the active one flagged.
   * @example
   * for await (const branch of client.conversations.branches(id)) console.log(branch.leaf_id, branch.active);
   */
  branches(id: string, query: QueryOf<"conversation_tree_list_branches"> = {}, options?: RequestOptions): PageIterator<Schemas["ConversationBranch"], ResponseOf<"conversation_tree_list_branches">> {
    return list((q) => this.#core.raw.GET("/v1/conversations/{id}/branches", { params: { path: { id }, query: q }, ...init(options) }), query);
  }

  /**
   * Switches to the branch ending at `leafId`.
   * @example
   * await client.conversations.activateBranch(id, branch.leaf_id);
   */
  activateBranch(id: string, leafId: string, options?: RequestOptions): APIPromise<ResponseOf<"conversation_tree_activate_branch">> {
    return unwrap(this.#core.raw.POST("/v1/conversations/{id}/branches/{leaf_id}/activate", { params: { path: { id, leaf_id: leafId } }, ...init(options) }));
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
        idleTimeout: this.#core.timeout,
        signal: options.signal,
        resume: (generationId, lastEventId, signal) => this.#openResume(id, generationId, lastEventId, signal),
        stop: (generationId) => this.stopGeneration(id, generationId),
      },
    );
  }
}

export class Messages {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * A conversation's messages, newest first, paged with `before` (stable while new ones arrive).
   * @example
   * for await (const message of client.conversations.messages.list(id)) console.log(message.role, message.content);
   */
  list(id: string, query: QueryOf<"conversations_list_messages"> = {}, options?: RequestOptions): PageIterator<Schemas["Message"], ResponseOf<"conversations_list_messages">> {
    return list(
      (q) => this.#core.raw.GET("/v1/conversations/{id}/messages", { params: { path: { id }, query: q }, ...init(options) }),
      query,
      "before",
    );
  }
}
