import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_DOCUMENT_BYTES } from "../../server/areas/knowledge/files.ts";
import { KNOWLEDGE_PROCESS_MAX_ATTEMPTS, processDocument } from "../../server/areas/knowledge/jobs.ts";
import { documentJobKey } from "../../server/areas/knowledge/store.ts";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { expectApiError, expectError, expectOk } from "../support/assertions.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { chunkCount, deleteDocument, detail, documentsPath, insertPersona, upload, uploaded } from "./helpers.ts";

// Upload limits and the processing job's failure rules, with no worker running: the tests call the
// job themselves, so that nothing races them.
let fake: FakeOpenAI;
let service: TestService;
let alice: TestUser;
let personaId: string;

beforeAll(async () => {
  fake = await startFakeOpenAI();
  service = await startTestService({
    env: {
      WORKER_ENABLED: "false",
      LLM_PROVIDER: "openai",
      EMBEDDINGS_PROVIDER: "openai",
      OPENAI_BASE_URL: fake.baseUrl,
      OPENAI_API_KEY: "test",
      LLM_MAX_RETRIES: "0",
    },
  });
  alice = await registerUser(service);
  await service.services.db.knex("users").where({ id: alice.id }).update({ plan: "creator" });
  personaId = await insertPersona(service, alice);
});

afterAll(async () => {
  await service?.close();
  await fake?.close();
});

describe("size", () => {
  it("accepts exactly 10,485,760 bytes and refuses one more with 413", async () => {
    expect(MAX_DOCUMENT_BYTES).toBe(10_485_760);
    const exact = Buffer.alloc(MAX_DOCUMENT_BYTES, "a");
    for (let i = 79; i < exact.length; i += 80) exact[i] = 0x0a;
    const body = await expectOk(upload(service, alice, personaId, "exact.txt", exact), 202);
    expect(body.size_bytes).toBe(MAX_DOCUMENT_BYTES);
    const over = Buffer.concat([exact, Buffer.from("a")]);
    await expectError(await upload(service, alice, personaId, "over.txt", over), 413, "payload_too_large");
  });

  it("refuses a body over the multipart cap with 413 too", async () => {
    const huge = Buffer.alloc(26 * 1024 * 1024, "a");
    const { response } = await upload(service, alice, personaId, "huge.txt", huge);
    expect(response.status).toBe(413);
  });
});

describe("type, by extension and content", () => {
  const cases: [string, string | Uint8Array][] = [
    ["program.exe", "MZ not a document"],
    ["no-extension", "plain words"],
    ["image.png", "\x89PNG"],
    ["fake.pdf", "This is plain text named .pdf"],
    ["binary.txt", new Uint8Array([0x68, 0x69, 0x00, 0x01])],
    ["latin1.md", new Uint8Array([0x63, 0x61, 0x66, 0xe9])],
    ["broken.json", '{"a": '],
    ["broken.csv", 'name,quote\nAda,"unterminated\n'],
    ["stray-quote.csv", 'name\nA"da\n'],
  ];
  it.each(cases)("refuses %s with 415", async (filename, content) => {
    await expectError(await upload(service, alice, personaId, filename, content), 415, "unsupported_media_type");
  });

  it("accepts the five kinds whatever the case of the extension", async () => {
    for (const [filename, content] of [["A.TXT", "text"], ["b.Md", "# md"], ["c.csv", "a,b\n1,2"], ["d.json", "[1, 2]"], ["e.PDF", "%PDF-1.7\n"]] as const) {
      const { response } = await upload(service, alice, personaId, filename, content);
      expect(response.status, filename).toBe(202);
    }
  });

  it("answers 400 without the file part", async () => {
    const form = new FormData();
    form.append("other", "x");
    const response = await service.fetch(documentsPath(personaId), { method: "POST", headers: alice.auth, body: form });
    expect(response.status).toBe(400);
  });
});

describe("the processing job", () => {
  it("stays processing for a retry while the embeddings provider fails, and fails on the last attempt", async () => {
    const { id } = await uploaded(service, alice, personaId, "tides.md", "# Tides\n\nSpring tides follow the new and full moon.");
    fake.embeddings.next({ status: 503 });
    await expect(processDocument(service.services, id, false)).rejects.toThrow(/The embeddings provider answered 503/);
    expect(await detail(service, alice, personaId, id)).toMatchObject({ status: "processing", chunk_count: null, error: null });
    expect((await detail(service, alice, personaId, id)).processing.started_at).not.toBeNull();
    expect(await chunkCount(service, id)).toBe(0);

    fake.embeddings.next({ status: 503 });
    expect(await processDocument(service.services, id, true)).toBe("failed");
    const failed = await detail(service, alice, personaId, id);
    expect(failed).toMatchObject({ status: "failed", chunk_count: null });
    expect(failed.error).toMatch(/The embeddings provider answered 503/);
    expect(await chunkCount(service, id)).toBe(0);
  });

  it("succeeds on a retry after a failed attempt", async () => {
    const { id } = await uploaded(service, alice, personaId, "retry.md", "Neap tides come at the quarter moons.");
    fake.embeddings.next({ status: 429 });
    await expect(processDocument(service.services, id, false)).rejects.toThrow();
    expect(await processDocument(service.services, id, false)).toBe("ready");
    const done = await detail(service, alice, personaId, id);
    expect(done).toMatchObject({ status: "ready", chunk_count: 1, error: null });
  });

  it("does not retry a broken file: it fails at once", async () => {
    const { id } = await uploaded(service, alice, personaId, "broken.pdf", "%PDF-1.7\ngarbage, not an object graph");
    expect(await processDocument(service.services, id, false)).toBe("failed");
    expect((await detail(service, alice, personaId, id)).error).toBeTruthy();
  });

  it("refuses an empty or blank file at upload with 400, and counts nothing (issue 13, item 16)", async () => {
    const before = await service.services.db.knex("knowledge_documents").where({ persona_id: personaId }).count<{ count: number }[]>({ count: "*" });
    for (const [filename, content] of [["empty.txt", ""], ["blank.md", "   \n\n  "], ["empty.pdf", ""]] as const) {
      const body = await expectApiError(upload(service, alice, personaId, filename, content), 400, "invalid_request");
      expect(body.error.details?.errors?.[0]?.path).toBe("/body/file");
    }
    expect(await service.services.db.knex("knowledge_documents").where({ persona_id: personaId }).count<{ count: number }[]>({ count: "*" })).toEqual(before);
  });

  it("keeps a non-ASCII file name as UTF-8 (issue 13, item 16)", async () => {
    const name = "Notizen über Gezeiten – 潮汐.md";
    const created = await uploaded(service, alice, personaId, name, "Springtiden kommen bei Neumond.");
    expect(created.filename).toBe(name);
    expect((await detail(service, alice, personaId, created.id)).filename).toBe(name);
  });

  it("stores nothing for a document deleted before its job ran", async () => {
    const { id } = await uploaded(service, alice, personaId, "gone.md", "Ephemeral");
    await expectOk(deleteDocument(service, alice, personaId, id));
    expect(await processDocument(service.services, id, true)).toBe("gone");
    expect(await chunkCount(service, id)).toBe(0);
  });

  it("queues one job per upload, in the upload's transaction", async () => {
    const { id } = await uploaded(service, alice, personaId, "queued.md", "Queued");
    const jobs = await service.services.db.knex.raw<{ rows: { max_attempts: number }[] }>(
      "SELECT max_attempts FROM graphile_worker.jobs WHERE task_identifier = 'knowledge_process' AND key = ?",
      [documentJobKey(id)],
    );
    expect(jobs.rows).toEqual([{ max_attempts: KNOWLEDGE_PROCESS_MAX_ATTEMPTS }]);
  });
});
