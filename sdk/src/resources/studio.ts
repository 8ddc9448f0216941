import type { APIPromise } from "../api-promise.ts";
import { init, unwrap, type Core } from "../core.ts";
import type { IdempotentRequestOptions, QueryOf, RequestBody, RequestOptions, ResponseOf } from "../types.ts";

/**
 * The creator studio: instruction versions, test chat, A/B variants, analytics and publishing, for
 * the caller's own personas (another user's persona is a NotFoundError).
 *
 * @example
 * const draft = await client.studio.createVersion(personaId, { instructions: "Be brief." });
 * const reply = await client.studio.testChat(personaId, { message: "Hi", version_id: draft.id });
 * await client.studio.activateVersion(personaId, draft.id);
 */
export class Studio {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Every instruction version, newest first.
   * @example
   * const { data } = await client.studio.versions(personaId);
   */
  versions(personaId: string, options?: RequestOptions): APIPromise<ResponseOf<"studio_list_versions">> {
    return unwrap(this.#core.raw.GET("/v1/studio/{persona_id}/versions", { params: { path: { persona_id: personaId } }, ...init(options) }));
  }

  /**
   * Saves a draft version with the next number; it is not live until activated.
   * @example
   * const draft = await client.studio.createVersion(personaId, { instructions: "Be brief.", changelog: "Shorter" });
   */
  createVersion(personaId: string, body: RequestBody<"studio_create_version">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"studio_create_version">> {
    return unwrap(this.#core.raw.POST("/v1/studio/{persona_id}/versions", { params: { path: { persona_id: personaId } }, body, ...init(options) }));
  }

  /**
   * Makes a version the live instructions; the previously active one becomes inactive.
   * @example
   * await client.studio.activateVersion(personaId, versionId);
   */
  activateVersion(personaId: string, versionId: string, options?: RequestOptions): APIPromise<ResponseOf<"studio_activate_version">> {
    return unwrap(
      this.#core.raw.POST("/v1/studio/{persona_id}/versions/{version_id}/activate", { params: { path: { persona_id: personaId, version_id: versionId } }, ...init(options) }),
    );
  }

  /**
   * One model reply with a version's instructions (the active one by default); nothing is stored.
   * @example
   * const { output, latency_ms } = await client.studio.testChat(personaId, { message: "Why is Mars red?" });
   */
  testChat(personaId: string, body: RequestBody<"studio_test_chat">, options?: RequestOptions): APIPromise<ResponseOf<"studio_test_chat">> {
    return unwrap(this.#core.raw.POST("/v1/studio/{persona_id}/test-chat", { params: { path: { persona_id: personaId } }, body, ...init(options) }));
  }

  /**
   * Every A/B variant with its metrics, oldest first.
   * @example
   * const { data } = await client.studio.variants(personaId);
   */
  variants(personaId: string, options?: RequestOptions): APIPromise<ResponseOf<"studio_list_variants">> {
    return unwrap(this.#core.raw.GET("/v1/studio/{persona_id}/variants", { params: { path: { persona_id: personaId } }, ...init(options) }));
  }

  /**
   * Adds a variant; a ValidationError when the variants' traffic would exceed 100 in total.
   * @example
   * await client.studio.createVariant(personaId, { name: "Pirate", instructions: "Arr.", traffic_percentage: 20 });
   */
  createVariant(personaId: string, body: RequestBody<"studio_create_variant">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"studio_create_variant">> {
    return unwrap(this.#core.raw.POST("/v1/studio/{persona_id}/variants", { params: { path: { persona_id: personaId } }, body, ...init(options) }));
  }

  /**
   * Changes a variant's share of new conversations; conversations keep the variant they have.
   * @example
   * await client.studio.updateVariant(personaId, variantId, { traffic_percentage: 35 });
   */
  updateVariant(personaId: string, variantId: string, body: RequestBody<"studio_update_variant">, options?: RequestOptions): APIPromise<ResponseOf<"studio_update_variant">> {
    return unwrap(
      this.#core.raw.PUT("/v1/studio/{persona_id}/variants/{variant_id}", { params: { path: { persona_id: personaId, variant_id: variantId } }, body, ...init(options) }),
    );
  }

  /**
   * Messages, users, rating and retention over 7, 30 or 90 days, with a row for every UTC day.
   * @example
   * const { message_count, daily_breakdown } = await client.studio.analytics(personaId, { period: "7d" });
   */
  analytics(personaId: string, query: QueryOf<"studio_analytics"> = {}, options?: RequestOptions): APIPromise<ResponseOf<"studio_analytics">> {
    return unwrap(this.#core.raw.GET("/v1/studio/{persona_id}/analytics", { params: { path: { persona_id: personaId }, query }, ...init(options) }));
  }

  /**
   * Lists the persona in the marketplace, or updates its listing; a ConflictError without an active version.
   * `category` is a shelf of `client.marketplace.categories()`; omitted, a listing keeps its shelf
   * and a new one goes on the shelf of the persona's own category (a `character` goes on `roleplay`).
   * @example
   * const { marketplace_url } = await client.studio.publish(personaId, { category: "roleplay", tags: ["pirates"], pricing: "free" });
   */
  publish(personaId: string, body: RequestBody<"studio_publish">, options?: RequestOptions): APIPromise<ResponseOf<"studio_publish">> {
    return unwrap(this.#core.raw.POST("/v1/studio/{persona_id}/publish", { params: { path: { persona_id: personaId } }, body, ...init(options) }));
  }
}
