import type { APIPromise } from "../api-promise.ts";
import { init, unwrap, type Core } from "../core.ts";
import type { IdempotentRequestOptions, RequestBody, RequestOptions, ResponseOf } from "../types.ts";

/**
 * Integrations: a persona's bot on a forum server, a messenger or a workspace. The bot token is
 * checked with the platform when connecting and is never returned.
 *
 * @example
 * const bot = await client.integrations.connectMessenger({ persona_id: personaId, bot_token: process.env.BOT_TOKEN! });
 * const { test_result } = await client.integrations.test(bot.id);
 */
export class Integrations {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * The caller's integrations on every platform, newest first.
   * @example
   * const { data } = await client.integrations.list();
   */
  list(options?: RequestOptions): APIPromise<ResponseOf<"integrations_list">> {
    return unwrap(this.#core.raw.GET("/v1/integrations", { ...init(options) }));
  }

  /**
   * Connects a persona to a forum server (guild) through its bot, answering in the given channels.
   * @example
   * await client.integrations.connectForum({ persona_id, bot_token, guild_id: "884213597310459904", channel_ids: ["884213597310459907"] });
   */
  connectForum(body: RequestBody<"integrations_connect_forum">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"integrations_connect_forum">> {
    return unwrap(this.#core.raw.POST("/v1/integrations/forum", { body, ...init(options) }));
  }

  /**
   * Connects a persona to a messenger bot; the server registers the bot's webhook itself.
   * @example
   * await client.integrations.connectMessenger({ persona_id, bot_token });
   */
  connectMessenger(body: RequestBody<"integrations_connect_messenger">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"integrations_connect_messenger">> {
    return unwrap(this.#core.raw.POST("/v1/integrations/messenger", { body, ...init(options) }));
  }

  /**
   * Connects a persona to a workspace app; give the answer's `events_url` to the app as its Events API request URL.
   * @example
   * const { events_url } = await client.integrations.connectWorkspace({ persona_id, bot_token, workspace_id: "T04A7QX2M9", channel_ids: ["C05B8RY3N1"], signing_secret });
   */
  connectWorkspace(body: RequestBody<"integrations_connect_workspace">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"integrations_connect_workspace">> {
    return unwrap(this.#core.raw.POST("/v1/integrations/workspace", { body, ...init(options) }));
  }

  /**
   * One integration, with `auto_respond`, `last_message_at` and why the last message went unanswered (`last_error`).
   * @example
   * const { message_count, last_error } = await client.integrations.get(id);
   */
  get(id: string, options?: RequestOptions): APIPromise<ResponseOf<"integrations_get">> {
    return unwrap(this.#core.raw.GET("/v1/integrations/{id}", { params: { path: { id } }, ...init(options) }));
  }

  /**
   * Pauses or resumes the bot, or changes its channels or reply mode; only the supplied fields change.
   * @example
   * await client.integrations.update(id, { auto_respond: true });
   */
  update(id: string, body: RequestBody<"integrations_update">, options?: RequestOptions): APIPromise<ResponseOf<"integrations_update">> {
    return unwrap(this.#core.raw.PUT("/v1/integrations/{id}", { params: { path: { id } }, body, ...init(options) }));
  }

  /**
   * Disconnects the bot and forgets its token.
   * @example
   * await client.integrations.delete(id);
   */
  delete(id: string, options?: RequestOptions): APIPromise<ResponseOf<"integrations_delete">> {
    return unwrap(this.#core.raw.DELETE("/v1/integrations/{id}", { params: { path: { id } }, ...init(options) }));
  }

  /**
   * Sends a test message through the bot; a refusal by the platform is `success: false` with its reason.
   * @example
   * const { test_result } = await client.integrations.test(id);
   */
  test(id: string, options?: RequestOptions): APIPromise<ResponseOf<"integrations_test">> {
    return unwrap(this.#core.raw.POST("/v1/integrations/{id}/test", { params: { path: { id } }, ...init(options) }));
  }
}
