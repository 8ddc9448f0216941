import type { TestService } from "./service.ts";

/**
 * A JSON request the contract cannot type, sent on purpose: a body with a wrong type or an unknown
 * field, a hostile value, a header the client would not send. Every other JSON operation goes
 * through the typed client (`service.clientFor(user)`), as the lint rule on tests holds.
 */
export function sendRaw(
  service: Pick<TestService, "fetch">,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Response> {
  return service.fetch(path, {
    method,
    headers: { "content-type": "application/json", ...options.headers },
    ...(options.body === undefined ? {} : { body: typeof options.body === "string" ? options.body : JSON.stringify(options.body) }),
  });
}
