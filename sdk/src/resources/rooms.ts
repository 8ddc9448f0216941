import type { APIPromise } from "../api-promise.ts";
import { init, unwrap } from "../core.ts";
import { errorFromResponse } from "../errors.ts";
import { GeneratedRooms } from "../generated/resources.ts";
import { RoomEventStream, type RoomEventsOptions } from "../room-events.ts";
import type { RequestOptions, ResponseOf } from "../types.ts";

/**
 * Group rooms: several users and personas in one conversation.
 *
 * @example
 * const room = await client.rooms.create({ name: "Stargazers", persona_ids: [persona.id] });
 * const sent = await client.rooms.send(room.id, { content: "@Captain Nova, which planet is that?" });
 * for (const reply of sent.persona_responses) console.log(reply.persona_name, reply.content);
 * for await (const event of client.rooms.events(room.id)) console.log(event.type, event.data);
 */
export class Rooms extends GeneratedRooms {
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
        const { data, error, response } = await this.core.raw.GET("/v1/rooms/{id}/events", {
          params: { path: { id }, ...(lastEventId === undefined ? {} : { header: { "Last-Event-ID": lastEventId } }) },
          parseAs: "stream",
          ...init({ ...(options.headers ? { headers: options.headers } : {}), signal }),
        });
        if (!response.ok) throw errorFromResponse(response, error);
        if (!data) throw errorFromResponse(response, undefined);
        return { body: data, response };
      },
      { ...options, idleTimeout: this.core.timeout },
    );
  }

  /**
   * Adds a user as a member (owner only; ConflictError when already one). Takes the user's id alone,
   * the body's only field.
   * @example
   * await client.rooms.addMember(id, userId);
   */
  addMember(id: string, userId: string, options?: RequestOptions): APIPromise<ResponseOf<"rooms_add_member">> {
    return unwrap(this.core.raw.POST("/v1/rooms/{id}/members", { params: { path: { id } }, body: { user_id: userId }, ...init(options) }));
  }

  /**
   * Adds a persona the caller owns or a public one. Takes the persona's id alone, the body's only field.
   * @example
   * await client.rooms.addPersona(id, personaId);
   */
  addPersona(id: string, personaId: string, options?: RequestOptions): APIPromise<ResponseOf<"rooms_add_persona">> {
    return unwrap(this.core.raw.POST("/v1/rooms/{id}/personas", { params: { path: { id } }, body: { persona_id: personaId }, ...init(options) }));
  }
}
