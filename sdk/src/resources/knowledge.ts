import { APIPromise } from "../api-promise.ts";
import { init, settle } from "../core.ts";
import { GeneratedKnowledge } from "../generated/resources.ts";
import type { IdempotentRequestOptions, RequestBody, ResponseOf } from "../types.ts";
import { uploadForm, type Uploadable, type UploadOptions } from "../upload.ts";

/**
 * A persona's knowledge base: documents whose chunks are retrieved into its replies.
 *
 * @example
 * const doc = await client.knowledge.upload(persona.id, "./guide.md");   // Node: a path
 * const doc2 = await client.knowledge.upload(persona.id, fileInput.files[0]); // browser: a File
 */
export class Knowledge extends GeneratedKnowledge {
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
        this.core.raw
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
}
