import { init, list, unwrap, type Core } from "../core.ts";
import type { PageIterator } from "../pagination.ts";
import type { IdempotentRequestOptions, QueryOf, RequestBody, RequestOptions, ResponseOf, Schemas } from "../types.ts";

/**
 * Personas: the characters users chat with.
 *
 * @example
 * const persona = await client.personas.create({
 *   name: "Captain Nova",
 *   instructions: "You are Captain Nova, a retired starship captain who explains astronomy.",
 * });
 */
export class Personas {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Creates a persona; a PlanLimitError when the plan's persona quota is used up.
   * @example
   * const persona = await client.personas.create({ name: "Nova", instructions: "Be brief.", is_public: true });
   */
  create(body: RequestBody<"personas_create">, options?: IdempotentRequestOptions): Promise<ResponseOf<"personas_create">> {
    return unwrap(this.#core.raw.POST("/v1/personas", { body, ...init(options) }));
  }

  /**
   * The caller's personas, page by page (`limit`/`offset`).
   * @example
   * for await (const persona of client.personas.list({ sort: "recent" })) console.log(persona.name);
   */
  list(query: QueryOf<"personas_list"> = {}, options?: RequestOptions): PageIterator<Schemas["PersonaSummary"], ResponseOf<"personas_list">> {
    return list((q) => this.#core.raw.GET("/v1/personas", { params: { query: q }, ...init(options) }), query);
  }

  /**
   * Public personas of every creator, with search and category filters.
   * @example
   * const tutors = await client.personas.explore({ category: "tutor", limit: 10 });
   */
  explore(query: QueryOf<"personas_explore"> = {}, options?: RequestOptions): PageIterator<Schemas["ExplorePersona"], ResponseOf<"personas_explore">> {
    return list((q) => this.#core.raw.GET("/v1/personas/explore", { params: { query: q }, ...init(options) }), query);
  }

  /**
   * One persona the caller owns or a public one (NotFoundError otherwise).
   * @example
   * const persona = await client.personas.get(id);
   */
  get(id: string, options?: RequestOptions): Promise<ResponseOf<"personas_get">> {
    return unwrap(this.#core.raw.GET("/v1/personas/{id}", { params: { path: { id } }, ...init(options) }));
  }

  /**
   * Changes the given fields of the caller's persona.
   * @example
   * await client.personas.update(id, { is_public: false });
   */
  update(id: string, body: RequestBody<"personas_update">, options?: RequestOptions): Promise<ResponseOf<"personas_update">> {
    return unwrap(this.#core.raw.PUT("/v1/personas/{id}", { params: { path: { id } }, body, ...init(options) }));
  }

  /**
   * Deletes the caller's persona.
   * @example
   * await client.personas.delete(id);
   */
  delete(id: string, options?: RequestOptions): Promise<ResponseOf<"personas_delete">> {
    return unwrap(this.#core.raw.DELETE("/v1/personas/{id}", { params: { path: { id } }, ...init(options) }));
  }
}
