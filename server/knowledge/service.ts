import { v7 as uuidv7 } from "uuid";
import type { components } from "../../generated/openapi.d.ts";
import { assertUnderCountLimit } from "../billing/usage.ts";
import { notFound } from "../http/errors.ts";
import { requireOwnPersona } from "../personas/service.ts";
import type { Services } from "../services.ts";
import { checkUpload, cleanFilename } from "./files.ts";
import { KNOWLEDGE_PROCESS_MAX_ATTEMPTS, KNOWLEDGE_PROCESS_TASK } from "./jobs.ts";
import type { RetrievedChunk } from "./retrieval.ts";
import { embeddingsFailure, searchKnowledge } from "./search.ts";
import { isUuid } from "../http/text.ts";
import {
  countUserDocuments,
  deletePersonaDocument,
  findPersonaDocument,
  insertDocumentWithJob,
  listPersonaDocuments,
  type DocumentRow,
} from "./store.ts";

type KnowledgeDocument = components["schemas"]["KnowledgeDocument"];
type DocumentSummary = components["schemas"]["DocumentSummary"];
type DocumentDetail = components["schemas"]["DocumentDetail"];

export interface UploadedFile {
  originalname: string;
  buffer: Buffer;
}

const iso = (date: Date | null) => (date ? date.toISOString() : null);

export function toSummary(row: DocumentRow): DocumentSummary {
  return {
    id: row.id,
    filename: row.filename,
    size_bytes: row.size_bytes,
    chunk_count: row.chunk_count,
    status: row.status,
    created_at: row.created_at.toISOString(),
  };
}

export const toDocument = (row: DocumentRow): KnowledgeDocument => ({ ...toSummary(row), persona_id: row.persona_id });

export function toDetail(row: DocumentRow): DocumentDetail {
  return {
    ...toDocument(row),
    error: row.error,
    processing: { started_at: iso(row.started_at), completed_at: iso(row.completed_at), duration_ms: row.duration_ms },
  };
}

/**
 * Accepts a document for one of the caller's personas: type and size are checked before anything
 * is written; the plan's quota is counted under the user's row lock in the transaction that stores
 * the document, its bytes and its processing job, so concurrent uploads cannot overshoot it.
 */
export async function uploadDocument(services: Services, userId: string, personaId: string, file: UploadedFile): Promise<DocumentRow> {
  await requireOwnPersona(services, userId, personaId);
  const filename = cleanFilename(file.originalname);
  const kind = checkUpload(filename, file.buffer);
  const row = { id: uuidv7(), persona_id: personaId, user_id: userId, filename, kind, size_bytes: file.buffer.length, created_at: services.now() };
  return services.db.knex.transaction(async (trx) => {
    await assertUnderCountLimit(trx, userId, "knowledgeDocs", () => countUserDocuments(trx, userId));
    return insertDocumentWithJob(trx, row, file.buffer, { task: KNOWLEDGE_PROCESS_TASK, maxAttempts: KNOWLEDGE_PROCESS_MAX_ATTEMPTS });
  });
}

export async function listDocuments(services: Services, userId: string, personaId: string, page: { limit: number; offset: number }) {
  await requireOwnPersona(services, userId, personaId);
  return listPersonaDocuments(services.db.knex, personaId, page);
}

export async function getDocument(services: Services, userId: string, personaId: string, documentId: string): Promise<DocumentRow> {
  await requireOwnPersona(services, userId, personaId);
  const row = isUuid(documentId) ? await findPersonaDocument(services.db.knex, personaId, documentId) : undefined;
  if (!row) throw notFound("Document");
  return row;
}

/** Deletes a document in any status; a job still processing it finds it gone and stores nothing. */
export async function deleteDocument(services: Services, userId: string, personaId: string, documentId: string): Promise<void> {
  await requireOwnPersona(services, userId, personaId);
  const deleted = isUuid(documentId) && (await deletePersonaDocument(services.db.knex, personaId, documentId));
  if (!deleted) throw notFound("Document");
}

export async function queryKnowledge(services: Services, userId: string, personaId: string, query: string, limit: number): Promise<RetrievedChunk[]> {
  await requireOwnPersona(services, userId, personaId);
  try {
    return await searchKnowledge(services, { userId, personaId, query, limit });
  } catch (error) {
    throw embeddingsFailure(error);
  }
}

