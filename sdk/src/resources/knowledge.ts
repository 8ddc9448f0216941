import { APIPromise } from "../api-promise.ts";
import { init, list, settle, unwrap, type Core } from "../core.ts";
import type { PageIterator } from "../pagination.ts";
import type { IdempotentRequestOptions, QueryOf, RequestBody, RequestOptions, ResponseOf, Schemas } from "../types.ts";
import { uploadForm, type Uploadable, type UploadOptions } from "../upload.ts";

/**
 * A persona's knowledge base: documents whose chunks are retrieved into its replies.
 *
 * @example
 * const doc = await client.knowledge.upload(persona.id, "./guide.md");   // Node: a path
 * const doc2 = await client.knowledge.upload(persona.id, fileInput.files[0]); // browser: a File
 */
export class Knowledge {
  readonly #core: Core;

  constructor(core: Core) {
    this.#core = core;
  }

  /**
   * Uploads a .txt, .md, .csv, .json or .pdf file (at most 10 MB); processing continues in the
   * background (`status` "processing", then "ready" or "failed").
   * @param file a Blob or File, bytes (Buffer, Uint8Array, ArrayBuffer), or in Node a filesystem path
   * @example
   * await client.knowledge.upload(personaId, new Blob(["# Notes"]), { filename: "notes.md" });
   * await client.knowledge.upload(personaId, await readFile("faq.pdf"), { filename: "faq.pdf" });
   */
  upload(personaId: string, file: Uploadable, options: UploadOptions & IdempotentRequestOptions = {}): APIPromise<ResponseOf<"knowledge_upload">> {
    return new APIPromise(
      uploadForm(file, options).then((form) =>
        this.#core.raw
          .POST("/v1/knowledge/{persona_id}/documents", {
            params: { path: { persona_id: personaId } },
            // The contract types the part as a string; the form carries it as a Blob with its file name.
            body: form as unknown as RequestBody<"knowledge_upload">,
            bodySerializer: (body: unknown) => body,
            ...init(options),
          })
          .then(settle),
      ),
    );
  }

  /**
   * A persona's documents, page by page.
   * @example
   * for await (const doc of client.knowledge.list(personaId)) console.log(doc.filename, doc.status);
   */
  list(personaId: string, query: QueryOf<"knowledge_list"> = {}, options?: RequestOptions): PageIterator<Schemas["DocumentSummary"], ResponseOf<"knowledge_list">> {
    return list(
      (q) => this.#core.raw.GET("/v1/knowledge/{persona_id}/documents", { params: { path: { persona_id: personaId }, query: q }, ...init(options) }),
      query,
    );
  }

  /**
   * One document with its processing status.
   * @example
   * const { status } = await client.knowledge.get(personaId, docId);
   */
  get(personaId: string, docId: string, options?: RequestOptions): APIPromise<ResponseOf<"knowledge_get">> {
    return unwrap(
      this.#core.raw.GET("/v1/knowledge/{persona_id}/documents/{doc_id}", {
        params: { path: { persona_id: personaId, doc_id: docId } },
        ...init(options),
      }),
    );
  }

  /**
   * Deletes a document and its chunks.
   * @example
   * await client.knowledge.delete(personaId, docId);
   */
  delete(personaId: string, docId: string, options?: RequestOptions): APIPromise<ResponseOf<"knowledge_delete">> {
    return unwrap(
      this.#core.raw.DELETE("/v1/knowledge/{persona_id}/documents/{doc_id}", {
        params: { path: { persona_id: personaId, doc_id: docId } },
        ...init(options),
      }),
    );
  }

  /**
   * The chunks most similar to a query (what a reply would draw on).
   * @example
   * const { results } = await client.knowledge.query(personaId, { query: "launch window", limit: 3 });
   */
  query(personaId: string, body: RequestBody<"knowledge_query">, options?: RequestOptions): APIPromise<ResponseOf<"knowledge_query">> {
    return unwrap(this.#core.raw.POST("/v1/knowledge/{persona_id}/query", { params: { path: { persona_id: personaId } }, body, ...init(options) }));
  }
}
