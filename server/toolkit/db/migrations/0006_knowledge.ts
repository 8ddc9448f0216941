import type { Knex } from "knex";

/**
 * Knowledge base: documents per persona, their uploaded bytes until a worker has processed them,
 * and their chunks with a `vector(1536)` embedding (HNSW, cosine) and a full-text vector (GIN).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable("knowledge_documents", (table) => {
    table.uuid("id").primary();
    table.uuid("persona_id").notNullable().references("personas.id").onDelete("CASCADE");
    // The persona's owner at upload: plan limits count per user, retrieval never crosses owners.
    table.uuid("user_id").notNullable().references("users.id").onDelete("CASCADE");
    table.text("filename").notNullable();
    table.text("kind").notNullable();
    table.integer("size_bytes").notNullable();
    table.text("status").notNullable();
    table.integer("chunk_count");
    table.text("error");
    table.timestamp("created_at", { useTz: true }).notNullable();
    table.timestamp("started_at", { useTz: true });
    table.timestamp("completed_at", { useTz: true });
    table.integer("duration_ms");
    table.index(["user_id"]);
  });
  await knex.raw("ALTER TABLE knowledge_documents ADD CONSTRAINT knowledge_documents_status CHECK (status IN ('processing', 'ready', 'failed'))");
  await knex.raw("ALTER TABLE knowledge_documents ADD CONSTRAINT knowledge_documents_kind CHECK (kind IN ('txt', 'md', 'csv', 'json', 'pdf'))");
  await knex.raw("CREATE INDEX knowledge_documents_persona ON knowledge_documents (persona_id, created_at DESC, id DESC)");

  // The upload itself, kept only until the document is ready or failed, so that any worker
  // process (not just the one that received it) can process it.
  await knex.schema.createTable("knowledge_files", (table) => {
    table.uuid("document_id").primary().references("knowledge_documents.id").onDelete("CASCADE");
    table.binary("content").notNullable();
  });

  // Chunks exist only for ready documents: they are written in the transaction that marks the
  // document ready, so searches need no join on the document's status.
  await knex.schema.createTable("knowledge_chunks", (table) => {
    table.uuid("id").primary();
    table.uuid("document_id").notNullable().references("knowledge_documents.id").onDelete("CASCADE");
    // Denormalised from the document so that a search filters on the chunk row alone.
    table.uuid("persona_id").notNullable();
    table.uuid("user_id").notNullable();
    table.integer("chunk_index").notNullable();
    table.text("content").notNullable();
    table.integer("token_count").notNullable();
    table.unique(["document_id", "chunk_index"]);
    table.index(["persona_id"]);
  });
  await knex.raw("ALTER TABLE knowledge_chunks ADD COLUMN embedding vector(1536) NOT NULL");
  await knex.raw("ALTER TABLE knowledge_chunks ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED");
  // m and ef_construction as measured by `npm run bench:knowledge` (recall@10 against an exact scan).
  await knex.raw("CREATE INDEX knowledge_chunks_embedding ON knowledge_chunks USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)");
  await knex.raw("CREATE INDEX knowledge_chunks_search ON knowledge_chunks USING gin (search)");
}

export async function down(knex: Knex): Promise<void> {
  for (const name of ["knowledge_chunks", "knowledge_files", "knowledge_documents"]) await knex.schema.dropTable(name);
}
