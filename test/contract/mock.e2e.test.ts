import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startProcess, type RunningProcess } from "../support/processes.ts";
import { freePort } from "../support/ports.ts";

// The static Prism mock is what frontend teams build against (`npm run mock`), so it must answer
// the contract's examples, enforce the security requirement and reject invalid bodies.
let prism: RunningProcess;

beforeAll(async () => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  prism = await startProcess({ bin: "prism", args: ["mock", "generated/openapi.yaml", "--host", "127.0.0.1", "--port", String(port)], url, probe: `${url}/healthz` });
}, 90_000);

afterAll(async () => {
  await prism?.stop();
});

const call = (path: string, init: RequestInit = {}) => fetch(`${prism.url}${path}`, init);
const json = { "content-type": "application/json" };

describe("the Prism mock of the contract", () => {
  it("answers a credential-free list endpoint with its example page", async () => {
    const response = await call("/v1/marketplace");
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body.data.length).toBeGreaterThan(0);
    expect(body).toMatchObject({ limit: 20, offset: 0 });
    expect(typeof body.data[0].name).toBe("string");
    expect(body.data[0].name).not.toBe("string");
  });

  it("answers a bearer-token call with the example and refuses the call without credentials", async () => {
    const id = "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01";
    const ok = await call(`/v1/personas/${id}`, { headers: { authorization: "Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig" } });
    expect(ok.status).toBe(200);
    expect((await ok.json()).name).toBe("Captain Nova");
    expect(ok.headers.get("x-ratelimit-limit")).not.toBeNull();

    const refused = await call(`/v1/personas/${id}`);
    expect(refused.status).toBe(401);
  });

  it("accepts an API key in X-API-Key", async () => {
    const response = await call("/v1/conversations", { headers: { "x-api-key": "pk_test" } });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toHaveProperty("has_more");
    expect(Array.isArray(body.data)).toBe(true);
  });

  it("accepts an OAuth 2.0 access token for a scoped operation", async () => {
    const response = await call("/v1/voice/tts", {
      method: "POST",
      headers: { ...json, authorization: "Bearer oauth-access-token" },
      body: JSON.stringify({ text: "Hello there", voice_id: "nova" }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("audio/mpeg");
  });

  it("rejects a body that breaks the contract with a 4xx", async () => {
    const response = await call("/v1/personas", {
      method: "POST",
      headers: { ...json, "x-api-key": "pk_test" },
      body: JSON.stringify({ name: "", instructions: 42 }),
    });
    expect(response.status).toBeGreaterThanOrEqual(400);
    expect(response.status).toBeLessThan(500);
  });

  it("streams the example server-sent events of a chat reply", async () => {
    const response = await call("/v1/conversations/0193a6c4-0000-7000-8000-000000000001/messages/stream", {
      method: "POST",
      headers: { ...json, "x-api-key": "pk_test" },
      body: JSON.stringify({ content: "Hi!" }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const text = await response.text();
    expect(text).toMatch(/^event: delta\ndata: \{/m);
    expect(text).toMatch(/^event: done\ndata: \{"message_id":/m);
  });
});
