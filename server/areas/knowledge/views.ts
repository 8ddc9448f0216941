import type { components } from "../../../generated/openapi.d.ts";
import type { RetrievedChunk } from "./search.ts";
import type { DocumentRow } from "./store.ts";

// Knowledge documents and search hits as the contract shows them.

type Schemas = components["schemas"];

const iso = (date: Date | null) => (date ? date.toISOString() : null);

export function toSummary(row: DocumentRow): Schemas["DocumentSummary"] {
  return {
    id: row.id,
    filename: row.filename,
    size_bytes: row.size_bytes,
    chunk_count: row.chunk_count,
    truncated: row.truncation !== null,
    status: row.status,
    created_at: row.created_at.toISOString(),
  };
}

export const toDocument = (row: DocumentRow): Schemas["KnowledgeDocument"] => ({ ...toSummary(row), persona_id: row.persona_id });

export function toDetail(row: DocumentRow): Schemas["DocumentDetail"] {
  return {
    ...toDocument(row),
    truncation: row.truncation,
    error: row.error,
    processing: { started_at: iso(row.started_at), completed_at: iso(row.completed_at), duration_ms: row.duration_ms },
  };
}

/** A hit as the query endpoint answers it: only the contract's fields, whatever retrieval adds later. */
export function toQueryResult({ chunk_id, document_id, filename, content, similarity, chunk_index }: RetrievedChunk): Schemas["KnowledgeQueryResult"] {
  return { chunk_id, document_id, filename, content, similarity, chunk_index };
}
