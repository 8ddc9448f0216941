import { archiveRows, type AccountDataSection } from "../../toolkit/account-data.ts";

export const knowledgeAccountData: AccountDataSection[] = [
  { key: "knowledge_documents", tables: ["knowledge_documents"], exportRows: ({ knex, userId }) => archiveRows(knex, "knowledge_documents", "user_id", [userId]) },
  {
    key: "knowledge_content",
    tables: ["knowledge_files", "knowledge_chunks"],
    withheld: "The uploaded files are the user's own copies (bytes do not fit a JSON archive); chunks and embeddings are derived from them.",
  },
];
