import { missingMultipartField } from "../../toolkit/http/error-catalogue.ts";
import { pageBody, pageWindow } from "../../toolkit/http/paging.ts";
import type { Handler, HandlerMap } from "../../toolkit/http/router.ts";
import { deleteDocument, getDocument, listDocuments, queryKnowledge, uploadDocument, type UploadedFile } from "./service.ts";
import { toDetail, toDocument, toQueryResult, toSummary } from "./views.ts";

/** The multipart part named `file`, as express-openapi-validator's multer left it in `req.files`. */
function uploadedFile(files: unknown): UploadedFile {
  const file = Array.isArray(files) ? (files as (UploadedFile & { fieldname: string })[]).find((f) => f.fieldname === "file") : undefined;
  if (!file) throw missingMultipartField("file");
  return file;
}

const knowledge_upload: Handler<"knowledge_upload"> = async ({ services, principal, req, params }) => {
  const row = await uploadDocument(services, principal.userId, params.persona_id, uploadedFile(req.files));
  return { status: 202, body: toDocument(row) };
};

const knowledge_list: Handler<"knowledge_list"> = async ({ services, principal, params, query }) => {
  const window = pageWindow(query);
  const page = await listDocuments(services, principal.userId, params.persona_id, window);
  return { status: 200, body: pageBody(page, window, toSummary) };
};

const knowledge_get: Handler<"knowledge_get"> = async ({ services, principal, params }) => ({
  status: 200,
  body: toDetail(await getDocument(services, principal.userId, params.persona_id, params.doc_id)),
});

const knowledge_delete: Handler<"knowledge_delete"> = async ({ services, principal, params }) => {
  await deleteDocument(services, principal.userId, params.persona_id, params.doc_id);
  return { status: 200, body: { id: params.doc_id, deleted: true } };
};

const knowledge_query: Handler<"knowledge_query"> = async ({ services, principal, params, body }) => {
  const results = await queryKnowledge(services, principal.userId, params.persona_id, body.query, body.limit ?? 5);
  return { status: 200, body: { results: results.map(toQueryResult), query: body.query, total_results: results.length } };
};

export const handlers = {
  knowledge_upload,
  knowledge_list,
  knowledge_get,
  knowledge_delete,
  knowledge_query,
} satisfies Partial<HandlerMap>;
