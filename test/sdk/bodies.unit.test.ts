// Request bodies (uploads, text-to-speech) through a fetch double, and page iteration over a fake list.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { createClient, errorFromResponse, PageIterator } from "../../sdk/src/index.ts";
import * as errors from "../../sdk/src/errors.ts";
import { nextPageQuery } from "../../sdk/src/pagination.ts";

const PERSONA = "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01";

/** A client whose fetch records each request and answers with `answer`. */
function recording(answer: (request: Request) => Response | Promise<Response>) {
  const requests: Request[] = [];
  const client = createClient({ baseUrl: "http://persona.test/", apiKey: "pk_x" }, {
    fetch: async (request) => {
      requests.push(request.clone());
      return answer(request);
    },
  });
  return { client, requests };
}

const accepted = () => Response.json({ id: "d1", persona_id: PERSONA, filename: "f", status: "processing" }, { status: 202 });

describe("uploads", () => {
  test("Blob, File, Buffer, Uint8Array and a path all become one multipart `file` part", async () => {
    const dir = await mkdtemp(join(tmpdir(), "sdk-upload-"));
    const path = join(dir, "guide.md");
    await writeFile(path, "# From disk");
    try {
      const { client, requests } = recording(accepted);
      await client.knowledge.upload(PERSONA, new Blob(["blob body"], { type: "text/plain" }), { filename: "a.txt" });
      await client.knowledge.upload(PERSONA, new File(["file body"], "b.csv", { type: "text/csv" }));
      await client.knowledge.upload(PERSONA, Buffer.from("buffer body"), { filename: "c.json", contentType: "application/json" });
      await client.knowledge.upload(PERSONA, new TextEncoder().encode("bytes body"), { filename: "d.txt" });
      await client.knowledge.upload(PERSONA, path);

      const parts = [];
      for (const request of requests) {
        expect(request.method).toBe("POST");
        expect(new URL(request.url).pathname).toBe(`/v1/knowledge/${PERSONA}/documents`);
        expect(request.headers.get("content-type")).toMatch(/^multipart\/form-data; boundary=/);
        expect(request.headers.get("idempotency-key")).toBeTruthy();
        const file = (await request.formData()).get("file") as File;
        parts.push([file.name, file.type, await file.text()]);
      }
      expect(parts).toEqual([
        ["a.txt", "text/plain", "blob body"],
        ["b.csv", "text/csv", "file body"],
        ["c.json", "application/json", "buffer body"],
        ["d.txt", "application/octet-stream", "bytes body"],
        ["guide.md", "application/octet-stream", "# From disk"],
      ]);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  test("a refused upload throws its typed error", async () => {
    const { client } = recording(() => Response.json({ error: { code: "unsupported_media_type", message: "no .exe" } }, { status: 415 }));
    await expect(client.knowledge.upload(PERSONA, new Blob(["MZ"]), { filename: "x.exe" })).rejects.toBeInstanceOf(errors.UnsupportedMediaTypeError);
  });

  test("the core imports nothing from node: statically (the path variant loads node:fs lazily)", async () => {
    const { readdir, readFile } = await import("node:fs/promises");
    const root = new URL("../../sdk/src/", import.meta.url);
    const files = (await readdir(root, { recursive: true })).filter((file) => file.endsWith(".ts"));
    for (const file of files) {
      // Comments may mention Node (JSDoc examples do); code may not.
      const source = (await readFile(new URL(file, root), "utf8")).replace(/\/\*[\s\S]*?\*\//g, "").replace(/\/\/.*$/gm, "");
      expect(source, file).not.toMatch(/from\s+["']node:|require\(["']node:|\bprocess\.|\bBuffer\b/);
    }
  });
});

describe("text to speech", () => {
  const mp3 = new Uint8Array([0x49, 0x44, 0x33, 1, 2, 3]);
  test("bytes by default, a ReadableStream on request", async () => {
    const { client, requests } = recording(() => new Response(mp3, { headers: { "content-type": "audio/mpeg" } }));
    const bytes = await client.voice.tts({ text: "Hello", voice_id: "nova" });
    expect(bytes).toBeInstanceOf(Uint8Array);
    expect([...bytes]).toEqual([...mp3]);
    const stream = await client.voice.tts({ text: "Hello" }, { stream: true });
    expect([...new Uint8Array(await new Response(stream).arrayBuffer())]).toEqual([...mp3]);
    expect(await requests[0]!.json()).toEqual({ text: "Hello", voice_id: "nova" });
  });
});

describe("pages", () => {
  const items = Array.from({ length: 7 }, (_, i) => ({ id: `i${i}` }));

  test("limit/offset lists follow `total`; has_more lists follow `has_more`; before-lists follow the last id", async () => {
    const { client, requests } = recording((request) => {
      const url = new URL(request.url);
      const limit = Number(url.searchParams.get("limit") ?? 3);
      const offset = Number(url.searchParams.get("offset") ?? 0);
      if (url.pathname === "/v1/billing/invoices") return Response.json({ data: items.slice(offset, offset + limit), total: items.length, limit, offset });
      if (url.pathname === "/v1/personas") return Response.json({ data: items.slice(0, limit) });
      if (url.pathname === "/v1/conversations") return Response.json({ data: items.slice(offset, offset + limit), has_more: offset + limit < items.length, total: items.length });
      const before = url.searchParams.get("before");
      const start = before ? items.findIndex((item) => item.id === before) + 1 : 0;
      return Response.json({ data: items.slice(start, start + limit), has_more: start + limit < items.length });
    });
    const ids = async (iterator: AsyncIterable<{ id: string }>) => {
      const out = [];
      for await (const item of iterator) out.push(item.id);
      return out;
    };
    const all = items.map((item) => item.id);
    expect(await ids(client.paginate("/v1/billing/invoices", { params: { query: { limit: 3 } } }))).toEqual(all);
    expect(await ids(client.conversations.list({ limit: 3 }))).toEqual(all);
    expect(await ids(client.conversations.messages.list("c1", { limit: 3 }))).toEqual(all);
    const queries = requests.map((r) => new URL(r.url).search);
    expect(queries).toEqual([
      "?limit=3", "?limit=3&offset=3", "?limit=3&offset=6",
      "?limit=3", "?limit=3&offset=3", "?limit=3&offset=6",
      "?limit=3", "?limit=3&before=i2", "?limit=3&before=i5",
    ]);
    const pages = [];
    for await (const page of client.personas.list({ limit: 3 }).pages()) pages.push(page);
    expect(pages).toHaveLength(1); // an answer with neither `has_more` nor `offset` is one page
  });

  test("awaiting a list gives its first page only, fetched once", async () => {
    let calls = 0;
    const iterator = new PageIterator<{ id: string }>(async () => (calls++, { data: [{ id: "a" }], total: 5, limit: 1, offset: 0 }));
    expect((await iterator).data).toEqual([{ id: "a" }]);
    expect(calls).toBe(1);
  });

  test("nextPageQuery stops on empty pages, has_more false, a reached total, and unpaged lists", () => {
    expect(nextPageQuery({ data: [] }, {}, "offset")).toBeUndefined();
    expect(nextPageQuery({ data: [1], has_more: false }, {}, "offset")).toBeUndefined();
    expect(nextPageQuery({ data: [1, 2], total: 4, limit: 2, offset: 2 }, { offset: 2 }, "offset")).toBeUndefined();
    expect(nextPageQuery({ data: [1], total: 3 }, {}, "offset")).toBeUndefined(); // {data,total}: unpaged
    expect(nextPageQuery({ data: [1, 2], total: 4, limit: 2, offset: 0 }, { limit: 2 }, "offset")).toEqual({ limit: 2, offset: 2 });
    expect(nextPageQuery({ data: [{ id: "x" }], has_more: true }, { offset: 5, limit: 1 }, "before")).toEqual({ limit: 1, before: "x" });
  });
});

describe("errors", () => {
  test("each status has its class; unreadable bodies still give a usable error", () => {
    const cases: [number, unknown][] = [
      [400, errors.BadRequestError], [401, errors.AuthenticationError], [402, errors.PlanLimitError],
      [403, errors.PermissionDeniedError], [404, errors.NotFoundError], [409, errors.ConflictError],
      [413, errors.PayloadTooLargeError], [415, errors.UnsupportedMediaTypeError], [429, errors.RateLimitError],
      [500, errors.InternalServerError], [501, errors.NotImplementedError], [502, errors.UpstreamError],
      [503, errors.ProviderUnavailableError], [504, errors.InternalServerError], [418, errors.PersonaError],
    ];
    for (const [status, Class] of cases) {
      const error = errorFromResponse(new Response(null, { status, headers: { "x-request-id": "rid" } }), { error: { code: "c", message: "m" } });
      expect(error.constructor, String(status)).toBe(Class);
      expect([error.status, error.code, error.message, error.requestId]).toEqual([status, "c", "m", "rid"]);
    }
    for (const status of [501, 502, 503]) expect(errorFromResponse(new Response(null, { status }), undefined)).toBeInstanceOf(errors.InternalServerError);
    const opaque = errorFromResponse(new Response(null, { status: 502, statusText: "Bad Gateway" }), "<html>proxy</html>");
    expect([opaque.code, opaque.message]).toEqual(["http_502", "HTTP 502 Bad Gateway"]);
    const limited = errorFromResponse(new Response(null, { status: 429, headers: { "retry-after": "7" } }), undefined) as errors.RateLimitError;
    expect(limited.retryAfter).toBe(7);
  });
});
