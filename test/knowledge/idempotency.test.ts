import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { components } from "../../generated/openapi.d.ts";
import { multipart } from "../support/api.ts";
import { expectApiError, expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { insertPersona } from "./helpers.ts";

// An upload's Idempotency-Key covers the file: a retry replays the first 202, another file is a conflict.
let service: TestService;
let user: TestUser;
let personaId: string;

beforeAll(async () => {
  service = await startTestService();
  user = await registerUser(service);
  personaId = await insertPersona(service, user);
});

afterAll(async () => {
  await service?.close();
});

function upload(filename: string, text: string, key: string) {
  const form = new FormData();
  form.append("file", new Blob([text], { type: "text/plain" }), filename);
  return service.clientFor(user).POST("/v1/knowledge/{persona_id}/documents", {
    params: { path: { persona_id: personaId }, header: { "Idempotency-Key": key } },
    body: multipart<components["schemas"]["DocumentUploadForm"]>(form),
  });
}

describe("uploads with an Idempotency-Key", () => {
  it("replay the first document for the same file and refuse another file", async () => {
    const first = await expectOk(upload("notes.txt", "Saturn has rings.", "upload-1"), 202);
    const retry = await upload("notes.txt", "Saturn has rings.", "upload-1");
    expect(retry.response.status).toBe(202);
    expect(retry.response.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.data?.id).toBe(first.id);
    await expectApiError(upload("notes.txt", "Jupiter has storms.", "upload-1"), 409, "conflict");
    const count = await service.services.db.knex("knowledge_documents").where({ persona_id: personaId }).count({ n: "*" }).first();
    expect(Number(count?.n)).toBe(1);
  });
});
