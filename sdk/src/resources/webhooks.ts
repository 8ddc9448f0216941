import type { APIPromise } from "../api-promise.ts";
import { init, list, unwrap, type Core } from "../core.ts";
import type { PageIterator } from "../pagination.ts";
import type { IdempotentRequestOptions, QueryOf, RequestBody, RequestOptions, ResponseOf, Schemas } from "../types.ts";

/**
 * Webhooks: signed HTTP deliveries of the account's events. Verify them with {@link verifyWebhook}.
 *
 * @example
 * const hook = await client.webhooks.create({ url: "https://example.com/hooks", events: ["message.created"] });
 * console.log(hook.secret); // shown only now: store it
 */
export class Webhooks {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Registers a webhook; the answer carries its secret, the only time it is shown.
   * @example
   * const { id, secret } = await client.webhooks.create({ url: "https://example.com/hooks", events: ["message.created"] });
   */
  create(body: RequestBody<"webhooks_create">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"webhooks_create">> {
    return unwrap(this.#core.raw.POST("/v1/webhooks", { body, ...init(options) }));
  }

  /**
   * The caller's webhooks, newest first, without secrets.
   * @example
   * const { data } = await client.webhooks.list();
   */
  list(options?: RequestOptions): APIPromise<ResponseOf<"webhooks_list">> {
    return unwrap(this.#core.raw.GET("/v1/webhooks", { ...init(options) }));
  }

  /**
   * Changes the URL, the events, or `active` (true re-enables a webhook disabled after failures).
   * @example
   * await client.webhooks.update(id, { active: true });
   */
  update(id: string, body: RequestBody<"webhooks_update">, options?: RequestOptions): APIPromise<ResponseOf<"webhooks_update">> {
    return unwrap(this.#core.raw.PUT("/v1/webhooks/{id}", { params: { path: { id } }, body, ...init(options) }));
  }

  /**
   * Deletes a webhook; its pending deliveries are dropped.
   * @example
   * await client.webhooks.delete(id);
   */
  delete(id: string, options?: RequestOptions): APIPromise<ResponseOf<"webhooks_delete">> {
    return unwrap(this.#core.raw.DELETE("/v1/webhooks/{id}", { params: { path: { id } }, ...init(options) }));
  }

  /**
   * A webhook's deliveries of the last 30 days, newest first, page by page.
   * @example
   * for await (const delivery of client.webhooks.deliveries(id)) console.log(delivery.status, delivery.response_status);
   */
  deliveries(
    id: string,
    query: QueryOf<"webhooks_list_deliveries"> = {},
    options?: RequestOptions,
  ): PageIterator<Schemas["WebhookDelivery"], ResponseOf<"webhooks_list_deliveries">> {
    return list((q) => this.#core.raw.GET("/v1/webhooks/{id}/deliveries", { params: { path: { id }, query: q }, ...init(options) }), query);
  }

  /**
   * Sends a logged delivery's event again (same event id and body), as a new pending delivery.
   * @example
   * await client.webhooks.redeliver(webhookId, deliveryId);
   */
  redeliver(id: string, deliveryId: string, options?: RequestOptions): APIPromise<ResponseOf<"webhooks_redeliver">> {
    return unwrap(
      this.#core.raw.POST("/v1/webhooks/{id}/deliveries/{delivery_id}/redeliver", { params: { path: { id, delivery_id: deliveryId } }, ...init(options) }),
    );
  }
}
