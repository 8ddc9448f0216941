import { readFile } from "node:fs/promises";
import { Writable } from "node:stream";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { errorFromResponse, StreamError, uploadForm, type PersonaClient } from "../../sdk/src/index.ts";
import { usageError } from "../errors.ts";
import { binarySink } from "../sink.ts";
import type { ApiContract, ApiOperation } from "./contract.ts";
import type { ParsedCall } from "./flags.ts";
import { answersBinary, isBinary } from "./flags.ts";
import { fieldsOf } from "./schema.ts";

/** The raw client's generic entry: any method and path of the contract, untyped. */
type RawRequest = (
  method: string,
  path: string,
  init: Record<string, unknown>,
) => Promise<{ data?: unknown; error?: unknown; response: Response }>;

async function readData(data: string): Promise<string> {
  if (data === "@-") {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString("utf8");
  }
  return data.startsWith("@") ? readFile(data.slice(1), "utf8") : data;
}

async function parseData(data: string | undefined): Promise<unknown> {
  if (data === undefined) return undefined;
  const text = await readData(data);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw usageError(`--data is not JSON: ${(error as Error).message}`);
  }
}

/** The body and its serializer for the operation's content type. */
async function bodyOf(op: ApiOperation, contract: ApiContract, call: ParsedCall): Promise<Record<string, unknown>> {
  const value = await parseData(call.data);
  const type = op.body?.contentType;
  const isObject = value !== null && typeof value === "object" && !Array.isArray(value);
  if (type === "multipart/form-data") {
    if (value !== undefined && !isObject) throw usageError("--data of an upload must be a JSON object of its other parts");
    const field = op.fileFields[0];
    const form = call.file && field ? await uploadForm(call.file, {}, field) : new FormData();
    const known = new Set(fieldsOf(op.body!.schema, contract).map((f) => f.name));
    for (const [name, part] of Object.entries((value ?? {}) as Record<string, unknown>)) {
      if (!known.has(name)) throw usageError(`--data: the upload has no part "${name}"`);
      form.append(name, typeof part === "string" ? part : JSON.stringify(part));
    }
    return { body: form, bodySerializer: (body: unknown) => body };
  }
  if (value === undefined) return {};
  if (type === "application/x-www-form-urlencoded") {
    if (!isObject) throw usageError("--data of a form must be a JSON object of its fields");
    const form = new URLSearchParams(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]));
    return { body: form.toString(), bodySerializer: (body: unknown) => body, headers: { "content-type": type } };
  }
  return { body: value };
}

/**
 * Sends one operation through the SDK (credentials, token refresh, retries, Idempotency-Key, typed
 * errors) and prints its answer: JSON pretty (one line with --json), a stream as one JSON line per
 * event, text as it is, bytes to --output or a non-terminal stdout, a redirect as its Location.
 */
export async function callOperation(client: PersonaClient, op: ApiOperation, contract: ApiContract, call: ParsedCall, json: boolean): Promise<void> {
  // Refused before anything is sent: a terminal cannot take the bytes.
  const sink = answersBinary(op) ? binarySink(call.output, "The answer") : undefined;
  const request = (client.raw as unknown as { request: RawRequest }).request;
  const { error, response } = await request(op.method.toLowerCase(), op.path, {
    params: { path: call.path, query: call.query, header: call.header },
    ...(await bodyOf(op, contract, call)),
    parseAs: "stream",
    // A redirect (a share link) is the answer itself, not something to follow.
    redirect: "manual",
  });
  const print = (value: unknown) => process.stdout.write(`${json ? JSON.stringify(value) : JSON.stringify(value, null, 2)}\n`);
  if (response.status >= 300 && response.status < 400) {
    print({ status: response.status, location: response.headers.get("location") });
    return;
  }
  if (!response.ok) throw errorFromResponse(response, error);
  const type = response.headers.get("content-type")?.split(";")[0]?.trim() ?? "";
  if (!response.body || response.status === 204) return;
  if (type === "text/event-stream") return printEvents(response.body);
  if (!isBinary(type) && type) {
    const text = await response.text();
    if (type.startsWith("text/")) process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
    else if (text) print(JSON.parse(text));
    return;
  }
  const out = sink ?? binarySink(call.output, "The answer");
  await response.body.pipeTo(Writable.toWeb(out), { preventClose: out === process.stdout });
  if (call.output) process.stderr.write(`Wrote ${call.output}\n`);
}

/** One JSON line per server-sent event, as it arrives; an `error` event makes the command fail. */
async function printEvents(body: ReadableStream<Uint8Array>): Promise<void> {
  let failure: { code?: string; message?: string } | undefined;
  const parser = createParser({
    onEvent: (message: EventSourceMessage) => {
      let data: unknown = message.data;
      try {
        data = JSON.parse(message.data);
      } catch {
        // not JSON: printed as the text it is
      }
      const event = message.event ?? "message";
      if (event === "error") failure = (data ?? {}) as typeof failure;
      process.stdout.write(`${JSON.stringify({ event, ...(message.id ? { id: message.id } : {}), data })}\n`);
    },
  });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) parser.feed(decoder.decode(chunk.value, { stream: true }));
  parser.feed(decoder.decode());
  if (failure) throw new StreamError({ code: failure.code ?? "stream_error", message: failure.message ?? "The stream ended with an error event" });
}
