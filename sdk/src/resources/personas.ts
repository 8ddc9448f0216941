import { APIPromise } from "../api-promise.ts";
import { init, list, settle, unwrap, unwrapBody, type Core } from "../core.ts";
import type { PageIterator } from "../pagination.ts";
import type { IdempotentRequestOptions, QueryOf, RequestBody, RequestOptions, ResponseOf, Schemas } from "../types.ts";
import { uploadForm, type Uploadable, type UploadOptions } from "../upload.ts";

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
  create(body: RequestBody<"personas_create">, options?: IdempotentRequestOptions): APIPromise<ResponseOf<"personas_create">> {
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
  get(id: string, options?: RequestOptions): APIPromise<ResponseOf<"personas_get">> {
    return unwrap(this.#core.raw.GET("/v1/personas/{id}", { params: { path: { id } }, ...init(options) }));
  }

  /**
   * Changes the given fields of the caller's persona.
   * @example
   * await client.personas.update(id, { is_public: false });
   */
  update(id: string, body: RequestBody<"personas_update">, options?: RequestOptions): APIPromise<ResponseOf<"personas_update">> {
    return unwrap(this.#core.raw.PUT("/v1/personas/{id}", { params: { path: { id } }, body, ...init(options) }));
  }

  /**
   * Creates a persona from a Character Card V2/V3: a JSON file or a PNG card (which becomes the
   * avatar). The content decides which, not the name. ValidationError (400) for a card that is
   * not JSON or has no name, PayloadTooLargeError (413) over 2 MB of JSON, 415 for other files.
   * @param file a Blob or File, bytes (Buffer, Uint8Array, ArrayBuffer), or in Node a filesystem path
   * @example
   * const persona = await client.personas.importCard("./nova.png");
   * const again = await client.personas.importCard(new Blob([JSON.stringify(card)]), { filename: "nova.json" });
   */
  importCard(file: Uploadable, options: UploadOptions & IdempotentRequestOptions = {}): APIPromise<ResponseOf<"cards_import">> {
    return new APIPromise(
      uploadForm(file, options).then((form) =>
        this.#core.raw
          .POST("/v1/personas/import", {
            // The contract types the part as a string; the form carries it as a Blob with its file name.
            body: form as unknown as RequestBody<"cards_import">,
            bodySerializer: (body: unknown) => body,
            ...init(options),
          })
          .then(settle),
      ),
    );
  }

  /**
   * The persona as a Character Card V3 (JSON). Its owner gets everything; others a public
   * persona's public fields.
   * @example
   * const card = await client.personas.exportCard(id);
   */
  exportCard(id: string, options?: RequestOptions): APIPromise<Schemas["CharacterCardV3"]> {
    return unwrap(this.#core.raw.GET("/v1/personas/{id}/card", { params: { path: { id }, query: { format: "json" } }, ...init(options) })) as APIPromise<Schemas["CharacterCardV3"]>;
  }

  /**
   * The persona as a PNG card: its avatar (or a plain image) with `ccv3` and `chara` chunks.
   * @example
   * await writeFile("nova.png", await client.personas.exportCardPng(id));
   */
  exportCardPng(id: string, options?: RequestOptions): APIPromise<Uint8Array> {
    return unwrapBody(
      this.#core.raw.GET("/v1/personas/{id}/card", { params: { path: { id }, query: { format: "png" } }, parseAs: "arrayBuffer", ...init(options) }),
      (data) => new Uint8Array(data as ArrayBuffer),
    );
  }

  /**
   * Deletes the caller's persona.
   * @example
   * await client.personas.delete(id);
   */
  delete(id: string, options?: RequestOptions): APIPromise<ResponseOf<"personas_delete">> {
    return unwrap(this.#core.raw.DELETE("/v1/personas/{id}", { params: { path: { id } }, ...init(options) }));
  }
}
