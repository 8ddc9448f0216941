import { APIPromise } from "../api-promise.ts";
import { init, settle, unwrap, unwrapBody } from "../core.ts";
import { GeneratedPersonas } from "../generated/resources.ts";
import type { IdempotentRequestOptions, RequestBody, RequestOptions, ResponseOf, Schemas } from "../types.ts";
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
export class Personas extends GeneratedPersonas {
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
        this.core.raw
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
    return unwrap(this.core.raw.GET("/v1/personas/{id}/card", { params: { path: { id }, query: { format: "json" } }, ...init(options) })) as APIPromise<Schemas["CharacterCardV3"]>;
  }

  /**
   * The persona as a PNG card: its avatar (or a plain image) with `ccv3` and `chara` chunks.
   * @example
   * await writeFile("nova.png", await client.personas.exportCardPng(id));
   */
  exportCardPng(id: string, options?: RequestOptions): APIPromise<Uint8Array> {
    return unwrapBody(
      this.core.raw.GET("/v1/personas/{id}/card", { params: { path: { id }, query: { format: "png" } }, parseAs: "arrayBuffer", ...init(options) }),
      (data) => new Uint8Array(data as ArrayBuffer),
    );
  }
}
