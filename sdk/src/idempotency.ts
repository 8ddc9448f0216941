import type { Middleware } from "openapi-fetch";
import { KEYED_ROUTES } from "./generated/keyed-routes.ts";
import { randomKey } from "./signal.ts";
import type { paths } from "./types.ts";

type Method = "get" | "put" | "post" | "delete" | "patch";

/** `METHOD /path` of every operation whose contract declares an `Idempotency-Key` header. */
type KeyedRoute = {
  [Path in keyof paths]: {
    [M in Method]: paths[Path][M] extends { parameters: { header?: infer Header } }
      ? // keyof never is every key, so operations without headers are ruled out first.
        [NonNullable<Header>] extends [never]
        ? never
        : "Idempotency-Key" extends keyof NonNullable<Header>
          ? `${Uppercase<M>} ${Path}`
          : never
      : never;
  }[Method];
}[keyof paths];

// The list is generated from the contract (sdk/src/generated/keyed-routes.ts, `npm run gen`): the
// SDK ships no OpenAPI document. It must be exactly the routes the contract's types declare a key for.
const listed: readonly KeyedRoute[] = KEYED_ROUTES;
void listed;

type Missing = Exclude<KeyedRoute, (typeof KEYED_ROUTES)[number]>;
// Fails to compile, naming the route, when the contract declares a keyed operation the list lacks.
const everyKeyedRouteListed: [Missing] extends [never] ? true : Missing = true;
void everyKeyedRouteListed;

const keyed: ReadonlySet<string> = new Set(KEYED_ROUTES);

/** Whether the contract lets `method` on `schemaPath` (e.g. `/v1/personas/{id}`) carry an Idempotency-Key. */
export function acceptsIdempotencyKey(method: string, schemaPath: string): boolean {
  return keyed.has(`${method.toUpperCase()} ${schemaPath}`);
}

/**
 * Gives every keyed request without a key a random one, before the transport sees it, so that all
 * attempts of one call share the key and the service acts at most once.
 */
export const idempotencyMiddleware: Middleware = {
  onRequest({ request, schemaPath }) {
    if (acceptsIdempotencyKey(request.method, schemaPath)) {
      if (!request.headers.has("idempotency-key")) request.headers.set("Idempotency-Key", randomKey());
      deduplicated.add(request);
    }
    return request;
  },
};

// Requests of operations the service de-duplicates by their key. The header alone proves nothing:
// a caller can send one to an operation that ignores it, and a retry of that would act twice.
const deduplicated = new WeakSet<Request>();

/** Whether the service answers a repeat of `request` with the first result (a keyed operation). */
export function isDeduplicated(request: Request): boolean {
  return deduplicated.has(request);
}
