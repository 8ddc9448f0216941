import type { Knex } from "knex";
import { v7 as uuidv7 } from "uuid";
import { assertUnderCountLimit } from "../../quota/usage.ts";
import { notFound } from "../../toolkit/http/error-catalogue.ts";
import type { PageWindow } from "../../toolkit/http/paging.ts";
import { isUuid } from "../../toolkit/http/text.ts";
import { requireOwnPersona } from "../personas/index.ts";
import type { Services } from "../../toolkit/services.ts";
import { checkUpload, cleanFilename } from "./files.ts";
import { KNOWLEDGE_PROCESS_MAX_ATTEMPTS, KNOWLEDGE_PROCESS_TASK } from "./jobs.ts";
import { embeddingsFailure, searchKnowledge, type RetrievedChunk } from "./search.ts";
import {
  countUserDocuments,
  deletePersonaDocument,
  findPersonaDocument,
  insertDocumentWithJob,
  listPersonaDocuments,
  type DocumentRow,
} from "./store.ts";

export interface UploadedFile {
  originalname: string;
  buffer: Buffer;
}

/** The knowledge documents counted against the plan's limit: the upload's 402 check and `GET /v1/billing/usage` both count with this. */
export function countPlanDocuments(knex: Knex, userId: string): Promise<number> {
  return countUserDocuments(knex, userId);
}

/**
 * Accepts a document for one of the caller's personas: type and size are checked before anything
 * is written; the plan's quota is counted under the user's row lock in the transaction that stores
 * the document, its bytes and its processing job, so concurrent uploads cannot overshoot it.
 */
export async function uploadDocument(services: Services, userId: string, personaId: string, file: UploadedFile): Promise<DocumentRow> {
  await requireOwnPersona(services, userId, personaId);
  const filename = cleanFilename(file.originalname);
  const kind = await checkUpload(filename, file.buffer);
  const row = { id: uuidv7(), persona_id: personaId, user_id: userId, filename, kind, size_bytes: file.buffer.length, created_at: services.now() };
  return services.db.knex.transaction(async (trx) => {
    await assertUnderCountLimit(trx, userId, "knowledgeDocs", () => countPlanDocuments(trx, userId));
    return insertDocumentWithJob(trx, row, file.buffer, { task: KNOWLEDGE_PROCESS_TASK, maxAttempts: KNOWLEDGE_PROCESS_MAX_ATTEMPTS });
  });
}

/** One page of the persona's documents, newest first. */
export async function listDocuments(services: Services, userId: string, personaId: string, window: PageWindow) {
  await requireOwnPersona(services, userId, personaId);
  return listPersonaDocuments(services.db.knex, personaId, window);
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

