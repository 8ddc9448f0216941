// What the SDK gained so that the CLI needs nothing of its own over HTTP (issue 13, item 20): the
// alternative (`read`/`chat`) key form, the data export, and the multipart form of a path upload.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { BadRequestError, createClient, PermissionDeniedError, uploadForm } from "../../sdk/src/index.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

let service: TestService;
beforeAll(async () => {
  service = await startTestService();
});
afterAll(async () => {
  await service?.close();
});

/** A client whose fetch records each request and answers with `answer`. */
function recording(answer: (request: Request) => Response) {
  const requests: Request[] = [];
  const client = createClient({ baseUrl: "http://persona.test", apiKey: "pk_x" }, {
    fetch: async (request) => {
      requests.push(request.clone());
      return answer(request);
    },
  });
  return { client, requests };
}

describe("alternative API keys", () => {
  test("createSimple posts to /v1/api-keys with a key of its own; the key reads but does not write", async () => {
    const { client: fake, requests } = recording(() => Response.json({ id: "k", name: "n", key: "pk_y", scopes: ["read"], created_at: "", expires_at: null }, { status: 201 }));
    await fake.auth.apiKeys.createSimple({ name: "nightly", scopes: ["read"], expires_in_days: 30 });
    expect(requests[0]!.method).toBe("POST");
    expect(new URL(requests[0]!.url).pathname).toBe("/v1/api-keys");
    expect(requests[0]!.headers.get("idempotency-key")).toBeTruthy();
    expect(await requests[0]!.json()).toEqual({ name: "nightly", scopes: ["read"], expires_in_days: 30 });

    const user = await registerUser(service);
    const session = createClient({ baseUrl: service.url, accessToken: user.accessToken, refreshToken: user.refreshToken });
    const created = await session.auth.apiKeys.createSimple({ name: "reader", scopes: ["read"] });
    expect(created).toMatchObject({ key: expect.stringMatching(/^pk_/), scopes: ["read"], expires_at: null });
    const reader = createClient({ baseUrl: service.url, apiKey: created.key });
    expect((await reader.personas.list()).data).toEqual([]);
    await expect(reader.personas.create({ name: "Nova", instructions: "Be brief." })).rejects.toBeInstanceOf(PermissionDeniedError);
    // Listed and revoked like a key of the other form.
    expect((await session.auth.apiKeys.list()).data.map((key) => key.id)).toContain(created.id);
    await expect(session.auth.apiKeys.createSimple({ name: "bad", scopes: ["personas:read" as never] })).rejects.toBeInstanceOf(BadRequestError);
  });
});

describe("data export", () => {
  test("exportData starts an export; asking again while it runs answers the same one", async () => {
    const user = await registerUser(service);
    const client = createClient({ baseUrl: service.url, accessToken: user.accessToken, refreshToken: user.refreshToken });
    const first = await client.auth.exportData();
    expect(first).toMatchObject({ export_id: expect.any(String), status: expect.stringMatching(/^(processing|ready)$/), message: expect.any(String) });
    const again = await client.auth.exportData();
    if (again.status === "processing") expect(again.export_id).toBe(first.export_id);

    const other = await registerUser(service);
    const otherClient = createClient({ baseUrl: service.url, accessToken: other.accessToken, refreshToken: other.refreshToken });
    expect((await otherClient.auth.exportData()).export_id).not.toBe(first.export_id);
  });
});

describe("uploads from a path", () => {
  test("uploadForm reads a path into a named part; other fields can be added to the form", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sdk-form-"));
    try {
      await writeFile(join(dir, "question.wav"), "RIFF....WAVE");
      const form = await uploadForm(join(dir, "question.wav"), {}, "audio");
      form.append("note", "extra");
      const part = form.get("audio") as File;
      expect([part.name, await part.text(), form.get("note")]).toEqual(["question.wav", "RIFF....WAVE", "extra"]);
      const named = (await uploadForm(new Uint8Array([1, 2]), { filename: "a.bin", contentType: "application/pdf" })).get("file") as File;
      expect([named.name, named.type, named.size]).toEqual(["a.bin", "application/pdf", 2]);
      await expect(uploadForm(join(dir, "missing.md"))).rejects.toMatchObject({ code: "ENOENT" });
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  test("where node:fs cannot load (a browser), a path is refused with a message that says so", async () => {
    vi.resetModules();
    vi.doMock("node:fs/promises", () => {
      throw new Error("Failed to resolve module specifier 'node:fs/promises'");
    });
    try {
      const { uploadForm: isolated } = await import("../../sdk/src/upload.ts");
      const refused = await isolated("./notes.md").catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(TypeError);
      expect((refused as Error).message).toMatch(/"\.\/notes\.md".*only in Node\.js; pass a Blob, a File or bytes/);
    } finally {
      vi.doUnmock("node:fs/promises");
      vi.resetModules();
    }
  });
});
