import type { APIPromise } from "../api-promise.ts";
import { init, list, unwrap, type Core } from "../core.ts";
import { errorFromResponse } from "../errors.ts";
import type { PageIterator } from "../pagination.ts";
import { RoomEventStream, type RoomEventsOptions } from "../room-events.ts";
import type { IdempotentRequestOptions, QueryOf, RequestBody, RequestOptions, ResponseOf, Schemas } from "../types.ts";

/**
 * Group rooms: several users and personas in one conversation.
 *
 * @example
 * const room = await client.rooms.create({ name: "Stargazers", persona_ids: [persona.id] });
 * const sent = await client.rooms.send(room.id, { content: "@Captain Nova, which planet is that?" });
 * for (const reply of sent.persona_responses) console.log(reply.persona_name, reply.content);
 * for await (const event of client.rooms.events(room.id)) console.log(event.type, event.data);
 */
export class Rooms {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Creates a room owned by the caller, with personas it owns or public ones (NotFoundError for any other).
   * @example
   * const room = await client.rooms.create({ name: "Stargazers", is_public: true });
   */
  create(body: RequestBody<"rooms_create">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"rooms_create">> {
    return unwrap(this.#core.raw.POST("/v1/rooms", { body, ...init(options) }));
  }

  /**
   * The caller's rooms, the most recently active first.
   * @example
   * for await (const room of client.rooms.list()) console.log(room.name, room.member_count);
   */
  list(query: QueryOf<"rooms_list"> = {}, options?: RequestOptions): PageIterator<Schemas["RoomListItem"], ResponseOf<"rooms_list">> {
    return list((q) => this.#core.raw.GET("/v1/rooms", { params: { query: q }, ...init(options) }), query);
  }

  /**
   * A room with its members and personas.
   * @example
   * const { members, personas } = await client.rooms.get(id);
   */
  get(id: string, options?: RequestOptions): APIPromise<ResponseOf<"rooms_get">> {
    return unwrap(this.#core.raw.GET("/v1/rooms/{id}", { params: { path: { id } }, ...init(options) }));
  }

  /**
   * Changes the supplied fields (owner only: ForbiddenError otherwise).
   * @example
   * await client.rooms.update(id, { is_public: true });
   */
  update(id: string, body: RequestBody<"rooms_update">, options?: RequestOptions): APIPromise<ResponseOf<"rooms_update">> {
    return unwrap(this.#core.raw.PUT("/v1/rooms/{id}", { params: { path: { id } }, body, ...init(options) }));
  }

  /**
   * Deletes a room with its messages (owner only).
   * @example
   * await client.rooms.delete(id);
   */
  delete(id: string, options?: RequestOptions): APIPromise<ResponseOf<"rooms_delete">> {
    return unwrap(this.#core.raw.DELETE("/v1/rooms/{id}", { params: { path: { id } }, ...init(options) }));
  }

  /**
   * The room's messages, newest first; `before` (ISO 8601) keeps only older ones.
   * @example
   * for await (const message of client.rooms.messages(id)) console.log(message.sender.name, message.content);
   */
  messages(id: string, query: QueryOf<"rooms_list_messages"> = {}, options?: RequestOptions): PageIterator<Schemas["RoomMessage"], ResponseOf<"rooms_list_messages">> {
    return list((q) => this.#core.raw.GET("/v1/rooms/{id}/messages", { params: { path: { id }, query: q }, ...init(options) }), query);
  }

  /**
   * Posts a message and waits for the personas' replies (`@name` names who answers; else one does).
   * @example
   * const { persona_responses } = await client.rooms.send(id, { content: "@Quill, a poem please" });
   */
  send(id: string, body: RequestBody<"rooms_send_message">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"rooms_send_message">> {
    return unwrap(this.#core.raw.POST("/v1/rooms/{id}/messages", { params: { path: { id } }, body, ...init(options) }));
  }

  /**
   * The room's live events (members only): new messages, replies as they are written (`delta`),
   * members and personas coming and going. Reconnects by itself with `Last-Event-ID`, so no stored
   * event is lost; see RoomEventStream. Errors the service answers when opening (NotFoundError,
   * PermissionDeniedError, ...) are thrown by the iteration.
   * @example
   * for await (const event of client.rooms.events(id)) {
   *   if (event.type === "message") console.log(`${event.data.sender.name}: ${event.data.content}`);
   *   if (event.type === "closed") console.log("the room is gone, or you were removed");
   * }
   */
  events(id: string, options: RoomEventsOptions = {}): RoomEventStream {
    return new RoomEventStream(
      async (lastEventId, signal) => {
        const { data, error, response } = await this.#core.raw.GET("/v1/rooms/{id}/events", {
          params: { path: { id }, ...(lastEventId === undefined ? {} : { header: { "Last-Event-ID": lastEventId } }) },
          parseAs: "stream",
          ...init({ ...(options.headers ? { headers: options.headers } : {}), signal }),
        });
        if (!response.ok) throw errorFromResponse(response, error);
        if (!data) throw errorFromResponse(response, undefined);
        return { body: data, response };
      },
      { ...options, idleTimeout: this.#core.timeout },
    );
  }

  /**
   * Adds a user as a member (owner only; ConflictError when already one).
   * @example
   * await client.rooms.addMember(id, userId);
   */
  addMember(id: string, userId: string, options?: RequestOptions): APIPromise<ResponseOf<"rooms_add_member">> {
    return unwrap(this.#core.raw.POST("/v1/rooms/{id}/members", { params: { path: { id } }, body: { user_id: userId }, ...init(options) }));
  }

  /**
   * Removes a member (owner), or leaves the room (a member removing itself).
   * @example
   * await client.rooms.removeMember(id, myUserId); // leave
   */
  removeMember(id: string, userId: string, options?: RequestOptions): APIPromise<ResponseOf<"rooms_remove_member">> {
    return unwrap(this.#core.raw.DELETE("/v1/rooms/{id}/members/{user_id}", { params: { path: { id, user_id: userId } }, ...init(options) }));
  }

  /**
   * Adds a persona the caller owns or a public one.
   * @example
   * await client.rooms.addPersona(id, personaId);
   */
  addPersona(id: string, personaId: string, options?: RequestOptions): APIPromise<ResponseOf<"rooms_add_persona">> {
    return unwrap(this.#core.raw.POST("/v1/rooms/{id}/personas", { params: { path: { id } }, body: { persona_id: personaId }, ...init(options) }));
  }

  /**
   * Takes a persona out of the room (the owner any; a member the ones it added); its messages stay.
   * @example
   * await client.rooms.removePersona(id, personaId);
   */
  removePersona(id: string, personaId: string, options?: RequestOptions): APIPromise<ResponseOf<"rooms_remove_persona">> {
    return unwrap(this.#core.raw.DELETE("/v1/rooms/{id}/personas/{persona_id}", { params: { path: { id, persona_id: personaId } }, ...init(options) }));
  }
}
