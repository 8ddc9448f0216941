// Every SDK method against the Prism mock of the contract (`npm run mock`): what a frontend team
// builds against must answer each helper with data of the contract's shape. The operations come
// from generated/operations.json, their arguments from the contract's examples; a method whose
// arguments cannot be built from them needs an entry in ARGUMENTS below, or this file fails.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { operations as operationList, type OperationInfo } from "../../server/toolkit/contract.ts";
import { APIPromise, ChatStream, createClient, PageIterator, RoomEventStream, type PersonaClient } from "../../sdk/src/index.ts";
import { operation as contractOperation, type JsonSchema, type Operation } from "../support/contract.ts";
import { freePort } from "../support/ports.ts";
import { startProcess, type RunningProcess } from "../support/processes.ts";
import { schemaErrors } from "../support/schema.ts";

let prism: RunningProcess;
let client: PersonaClient;

beforeAll(async () => {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  prism = await startProcess({ bin: "prism", args: ["mock", "generated/openapi.yaml", "--host", "127.0.0.1", "--port", String(port)], url, probe: `${url}/healthz` });
  // No retries: a mock that answers an error must fail the call at once, not after backoff.
  client = createClient({ baseUrl: url, apiKey: "pk_mock" }, { maxRetries: 0, timeout: 30_000 });
}, 90_000);

afterAll(async () => {
  await prism?.stop();
});

// ------------------------------------------------------------------ arguments from the contract

type Example = Record<string, unknown>;

/** The example of a path or query parameter. */
function parameterExample(op: Operation, name: string, where: "path" | "query"): unknown {
  const parameter = op.parameters.find((p) => p.in === where && p.name === name);
  const example = parameter?.example ?? (parameter?.schema as { example?: unknown } | undefined)?.example;
  if (example === undefined) throw new Error(`${op.operationId}: the ${where} parameter ${name} has no example`);
  return example;
}

/** The path parameters' examples, in the order the path names them (the order of the SDK's arguments). */
function pathArguments(op: Operation): unknown[] {
  return [...op.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => parameterExample(op, name!, "path"));
}

/** The JSON request body's example; undefined when the operation takes no JSON body. */
function bodyExample(op: Operation): Example | undefined {
  const media = op.requestBody?.content["application/json"];
  if (!media) return undefined;
  const example = media.example ?? Object.values(media.examples ?? {})[0]?.value;
  if (example === undefined) throw new Error(`${op.operationId}: its JSON body has no example`);
  return example as Example;
}

/** The required query parameters with their examples; undefined when the operation has no query. */
function queryExample(op: Operation): Example | undefined {
  const query = op.parameters.filter((p) => p.in === "query");
  if (query.length === 0) return undefined;
  return Object.fromEntries(query.filter((p) => (p as { required?: boolean }).required).map((p) => [p.name, parameterExample(op, p.name, "query")]));
}

/**
 * The arguments of a helper whose signature follows the rule: the path parameters in order, then
 * the JSON body, then the query. A reason instead when the contract alone cannot give them.
 */
function genericArguments(op: Operation): unknown[] | { reason: string } {
  const media = Object.keys(op.requestBody?.content ?? {});
  if (media.some((type) => type !== "application/json")) return { reason: `its body is ${media.join(", ")}` };
  try {
    const body = bodyExample(op);
    const query = queryExample(op);
    return [...pathArguments(op), ...(body ? [body] : []), ...(query ? [query] : [])];
  } catch (error) {
    return { reason: (error as Error).message };
  }
}

// A 44-byte WAV header with no samples: enough for a multipart part the mock checks by schema.
const WAV = new Uint8Array([82, 73, 70, 70, 36, 0, 0, 0, 87, 65, 86, 69, 102, 109, 116, 32, 16, 0, 0, 0, 1, 0, 1, 0, 64, 31, 0, 0, 128, 62, 0, 0, 2, 0, 16, 0, 100, 97, 116, 97, 0, 0, 0, 0]);

/**
 * Helpers whose signature departs from the rule (a body field as an argument, a file, a URL), by
 * SDK method: their arguments, still taken from the contract's examples where it has them.
 */
const ARGUMENTS: Record<string, (op: Operation) => unknown[]> = {
  "billing.changePlan": (op) => [bodyExample(op)!.plan],
  "rooms.addMember": (op) => [...pathArguments(op), bodyExample(op)!.user_id],
  "rooms.addPersona": (op) => [...pathArguments(op), bodyExample(op)!.persona_id],
  "social.search": (op) => [queryExample(op)!.q],
  // The format is the helper's choice (exportCardPng asks for the PNG), not an argument.
  "personas.exportCard": (op) => pathArguments(op),
  "images.download": (op) => [`https://images.example/v1/images/files/${String(pathArguments(op)[0])}`],
  "knowledge.upload": (op) => [...pathArguments(op), new Blob(["# Field guide\n\nVenus sets in the west."], { type: "text/markdown" }), { filename: "guide.md" }],
  "personas.importCard": () => [
    new Blob([JSON.stringify({ spec: "chara_card_v3", spec_version: "3.0", data: { name: "Nova", description: "A captain." } })], { type: "application/json" }),
    { filename: "nova.json" },
  ],
  "voice.stt": () => [WAV, { filename: "question.wav", contentType: "audio/wav" }],
};

// ------------------------------------------------------------------ what the answers must be

/** The JSON schema of the operation's answer with this status, if it answers JSON. */
function jsonSchemaFor(op: Operation, status: number): JsonSchema | undefined {
  return op.responses[String(status)]?.content?.["application/json"]?.schema;
}

function expectConforms(info: OperationInfo, op: Operation, status: number, data: unknown): void {
  expect(status, `${op.operationId} answered ${status}`).toBeGreaterThanOrEqual(200);
  expect(status).toBeLessThan(300);
  const schema = jsonSchemaFor(op, status);
  if (!info.answersJson || status === 204) return;
  expect(schema, `${op.operationId}: the contract's JSON schema of its ${status} answer`).toBeDefined();
  if (!schema) return;
  expect(data, `${op.operationId}: JSON data`).toBeTypeOf("object");
  expect(data).not.toBeNull();
  expect(schemaErrors(schema, data), `${op.operationId}: the data matches the contract's ${status} answer`).toEqual([]);
}

/** Reads a chat stream to its end, or at most `bound` events (a stream that loops fails, not hangs). */
async function readChat(stream: ChatStream, bound: number): Promise<string[]> {
  const types: string[] = [];
  for await (const event of stream) {
    types.push(event.type);
    if (types.length >= bound) break;
  }
  return types;
}

const withMethod = operationList.filter((op): op is OperationInfo & { sdk: string } => op.sdk !== undefined);

/** The helper at a dotted path on the client, bound to its resource. */
function helper(path: string): (...args: unknown[]) => unknown {
  let holder: unknown;
  let value: unknown = client;
  for (const part of path.split(".")) {
    holder = value;
    value = (value as Record<string, unknown> | undefined)?.[part];
  }
  if (typeof value !== "function") throw new Error(`client.${path} is not a method`);
  return (value as (...args: unknown[]) => unknown).bind(holder);
}

// ------------------------------------------------------------------ the tests

describe("every SDK method against the Prism mock", () => {
  it("has arguments for every operation with an SDK method, and no entry for a method that is gone", () => {
    const missing = withMethod.flatMap((op) => {
      const generic = genericArguments(contractOperation(op.operationId));
      return ARGUMENTS[op.sdk] || Array.isArray(generic) ? [] : [`client.${op.sdk} (${op.operationId}): ${generic.reason}; add it to ARGUMENTS`];
    });
    expect(missing).toEqual([]);
    const methods = new Set(withMethod.map((op) => op.sdk));
    expect(Object.keys(ARGUMENTS).filter((name) => !methods.has(name))).toEqual([]);
    expect(withMethod.length).toBeGreaterThan(50);
  });

  it.each(withMethod.map((op) => [op.sdk, op] as const))("client.%s", async (sdk, info) => {
    const op = contractOperation(info.operationId);
    const generic = genericArguments(op);
    const args = ARGUMENTS[sdk]?.(op) ?? (Array.isArray(generic) ? generic : undefined);
    // The test above names what is missing; here it only must not pass quietly.
    expect(args, `arguments for client.${sdk}`).toBeDefined();
    const result = helper(sdk)(...args!);

    if (result instanceof ChatStream) {
      const { data: stream, response } = await result.withResponse();
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toContain("text/event-stream");
      const types = await readChat(stream, 20);
      stream.abort();
      expect(types.length, `client.${sdk} yields events`).toBeGreaterThan(0);
      expect(types.every((type) => ["delta", "done", "error"].includes(type))).toBe(true);
      // The mock's streams end as the service's do (test/sdk/mock-streams.e2e.test.ts).
      expect(types.at(-1), `client.${sdk} ends with done`).toBe("done");
      expect(stream.finalMessageId).toBeDefined();
      return;
    }
    if (result instanceof RoomEventStream) {
      // A room's stream has no end by design: read its first event, then close it.
      for await (const event of result) {
        expect(["message", "delta", "member_joined", "member_left", "persona_added", "persona_removed", "closed"]).toContain(event.type);
        break;
      }
      result.close();
      return;
    }
    if (result instanceof PageIterator) {
      const { data: page, response } = await result.withResponse();
      expectConforms(info, op, response.status, page);
      // Iterating yields the first page's items (the mock answers every page alike, so stop there).
      const first = await (async () => {
        for await (const item of result) return item;
        return undefined;
      })();
      expect(first).toEqual((page as { data: unknown[] }).data[0]);
      return;
    }
    expect(result, `client.${sdk} returns an APIPromise`).toBeInstanceOf(APIPromise);
    const { data, response, rateLimit } = await (result as APIPromise<unknown>).withResponse();
    expectConforms(info, op, response.status, data);
    if (!info.answersJson) {
      if (response.status === 204) expect(data).toBeUndefined();
      else expect(data instanceof Uint8Array || data instanceof ReadableStream, `client.${sdk} gives bytes`).toBe(true);
    }
    // The mock answers the contract's example headers, rate-limit state among them.
    if (op.responses[String(response.status)]?.headers?.["X-RateLimit-Limit"]) expect(rateLimit?.limit).toBeGreaterThan(0);
  });
});
