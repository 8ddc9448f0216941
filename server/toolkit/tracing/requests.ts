import type { IncomingMessage } from "node:http";
import type { Span } from "@opentelemetry/api";
import type { HttpInstrumentationConfig } from "@opentelemetry/instrumentation-http";

/** Probes and scrapes: asked every few seconds by machines, each would be a trace of its own. */
const UNTRACED = new Set(["/healthz", "/readyz", "/metrics"]);

/** What the service's first route stage (http/validator.ts `identifyOperation`) put on the request. */
interface Routed {
  openapi?: { schema?: { operationId?: string }; expressRoute?: string };
  id?: string;
}

/**
 * A request's span is named by its operation, the contract's operationId (`conversations_stream_message`),
 * with its route (`http.route`, the route's Express form) and the request id the response carries
 * (`X-Request-Id`), once the response ends: the route is known only after the router matched it. A
 * request no route matched keeps the instrumentation's name (its method).
 */
function nameByOperation(span: Span, request: unknown): void {
  const routed = request as Routed;
  const operation = routed.openapi?.schema?.operationId;
  if (operation) {
    span.updateName(operation);
    span.setAttribute("persona.operation", operation);
    if (routed.openapi?.expressRoute) span.setAttribute("http.route", routed.openapi.expressRoute);
  }
  if (typeof routed.id === "string") span.setAttribute("persona.request_id", routed.id);
}

/**
 * The HTTP instrumentation's settings: incoming requests (their `traceparent` accepted by the W3C
 * propagator) are named by operation, probes are not traced, and outgoing calls are traced only
 * inside a span (a request, a job): the chat platforms' long polls and gateways outside any are not.
 */
export const httpTracing: HttpInstrumentationConfig = {
  ignoreIncomingRequestHook: (request: IncomingMessage) => UNTRACED.has((request.url ?? "").split("?", 1)[0]!),
  applyCustomAttributesOnSpan: (span, request) => nameByOperation(span, request),
  requireParentforOutgoingSpans: true,
};
