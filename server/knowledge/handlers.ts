import { principalOf } from "../http/principal.ts";
import { ApiError } from "../http/errors.ts";
import type { Handler } from "../http/router.ts";
import { deleteDocument, getDocument, listDocuments, queryKnowledge, toDetail, toDocument, toSummary, uploadDocument, type UploadedFile } from "./service.ts";

/** The multipart part named `file`, as express-openapi-validator's multer left it in `req.files`. */
function uploadedFile(files: unknown): UploadedFile {
  const file = Array.isArray(files) ? (files as (UploadedFile & { fieldname: string })[]).find((f) => f.fieldname === "file") : undefined;
  if (!file) throw new ApiError(400, "invalid_request", "The multipart field `file` is required", { errors: [{ path: "/body/file", message: "is required" }] });
  return file;
}

export const knowledge_upload: Handler<"knowledge_upload"> = async ({ services, req, params }) => {
  const row = await uploadDocument(services, principalOf(req).userId, params.persona_id, uploadedFile(req.files));
  return { status: 202, body: toDocument(row) };
};

export const knowledge_list: Handler<"knowledge_list"> = async ({ services, req, params, query }) => {
  const limit = query.limit ?? 20;
  const offset = query.offset ?? 0;
  const { rows, total } = await listDocuments(services, principalOf(req).userId, params.persona_id, { limit, offset });
  return { status: 200, body: { data: rows.map(toSummary), total, limit, offset } };
};

export const knowledge_get: Handler<"knowledge_get"> = async ({ services, req, params }) => ({
  status: 200,
  body: toDetail(await getDocument(services, principalOf(req).userId, params.persona_id, params.doc_id)),
});

export const knowledge_delete: Handler<"knowledge_delete"> = async ({ services, req, params }) => {
  await deleteDocument(services, principalOf(req).userId, params.persona_id, params.doc_id);
  return { status: 200, body: { id: params.doc_id, deleted: true } };
};

export const knowledge_query: Handler<"knowledge_query"> = async ({ services, req, params, body }) => {
  const results = await queryKnowledge(services, principalOf(req).userId, params.persona_id, body.query, body.limit ?? 5);
  return {
    status: 200,
    body: {
      results: results.map(({ chunk_id, document_id, filename, content, similarity, chunk_index }) => ({ chunk_id, document_id, filename, content, similarity, chunk_index })),
      query: body.query,
      total_results: results.length,
    },
  };
};
