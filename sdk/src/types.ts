// Contract types. They come from generated/openapi.d.ts (openapi-typescript); the build bundles
// them into the package's .d.ts, so the published package needs nothing outside itself.
import type { components, operations, paths } from "../../generated/openapi.d.ts";

export type { components, operations, paths };

/** Every named schema of the contract, e.g. `Schemas["Persona"]`. */
export type Schemas = components["schemas"];

/** The error codes the service answers with (a closed enum in the contract). */
export type ErrorCode = Schemas["ErrorCode"];

export type OperationId = keyof operations;

/** The JSON request body of an operation. */
export type RequestBody<Id extends OperationId> = operations[Id] extends {
  requestBody?: { content: { "application/json": infer Body } };
}
  ? Body
  : never;

/** The query parameters of an operation (an empty object when it has none). */
export type QueryOf<Id extends OperationId> = operations[Id] extends { parameters: { query?: infer Query } }
  ? NonNullable<Query>
  : never;

type SuccessStatus = 200 | 201 | 202;

/** The JSON body of an operation's success answer. */
export type ResponseOf<Id extends OperationId> = {
  [Status in keyof operations[Id]["responses"]]: Status extends SuccessStatus
    ? operations[Id]["responses"][Status] extends { content: { "application/json": infer Body } }
      ? Body
      : never
    : never;
}[keyof operations[Id]["responses"]];

/** The fetch the client sends its requests through (globalThis.fetch, or one the caller gives). */
export type Fetch = (input: Request) => Promise<Response>;

/** Options every helper accepts. */
export interface RequestOptions {
  /** Cancels the request (and its retries); the call then rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Extra headers for this call. */
  headers?: Record<string, string>;
}

/** Options of helpers whose operation accepts an `Idempotency-Key` (the SDK makes one up otherwise). */
export interface IdempotentRequestOptions extends RequestOptions {
  /** Reuse a key to make a retry of your own answer the first result instead of acting twice. */
  idempotencyKey?: string;
}
