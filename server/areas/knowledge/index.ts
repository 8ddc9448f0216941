// The knowledge area's public surface: knowledge bases, their documents, and retrieval for replies.
import { defineArea } from "../../toolkit/area.ts";
import { knowledgeAccountData } from "./account-data.ts";
import { handlers } from "./handlers.ts";
import { knowledgeTasks } from "./jobs.ts";

export { retrieveForChat, type RetrievedChunk } from "./retrieval.ts";
export { countPlanDocuments } from "./service.ts";
export { hasKnowledgeSql } from "./store.ts";

export const area = defineArea({ name: "knowledge", handlers, tasks: knowledgeTasks, accountData: knowledgeAccountData, tables: ["knowledge_documents", "knowledge_chunks", "knowledge_files"] });
