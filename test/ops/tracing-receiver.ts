import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * An OTLP/HTTP trace receiver on loopback, for a service started with
 * `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`: it takes `POST /v1/traces` (an
 * ExportTraceServiceRequest in OTLP's JSON encoding) and keeps every span, flattened.
 */

/** OTLP's span kinds (opentelemetry-proto, trace.proto). */
export const SpanKind = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const;

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  links: { traceId: string; spanId: string }[];
  /** 0 unset, 1 ok, 2 error. */
  status: number;
  /** The resource's `service.name`. */
  service: unknown;
}

export interface TraceReceiver {
  /** The base the exporter appends `/v1/traces` to (OTEL_EXPORTER_OTLP_ENDPOINT). */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests that could not be read (a test fails on any). */
  rejected: string[];
  close: () => Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: number | string;
  doubleValue?: number;
  arrayValue?: { values?: OtlpValue[] };
}
interface OtlpKeyValue {
  key: string;
  value?: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind?: number;
  attributes?: OtlpKeyValue[];
  events?: { name: string; attributes?: OtlpKeyValue[] }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number };
}
interface ExportRequest {
  resourceSpans?: { resource?: { attributes?: OtlpKeyValue[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

function valueOf(value: OtlpValue | undefined): unknown {
  if (!value) return undefined;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(valueOf);
  if (value.intValue !== undefined) return Number(value.intValue);
  return value.stringValue ?? value.boolValue ?? value.doubleValue;
}

const attributesOf = (list: OtlpKeyValue[] | undefined) => Object.fromEntries((list ?? []).map((entry) => [entry.key, valueOf(entry.value)]));

/** OTLP/JSON writes ids as hex; a base64 one (protobuf's JSON mapping) is turned into hex. */
const hexId = (id: string | undefined) => (!id ? "" : /^[\da-f]+$/i.test(id) ? id.toLowerCase() : Buffer.from(id, "base64").toString("hex"));

export async function startTraceReceiver(): Promise<TraceReceiver> {
  const spans: ReceivedSpan[] = [];
  const rejected: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as ExportRequest;
        for (const resourceSpans of body.resourceSpans ?? []) {
          const service = attributesOf(resourceSpans.resource?.attributes)["service.name"];
          for (const scope of resourceSpans.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              spans.push({
                traceId: hexId(span.traceId),
                spanId: hexId(span.spanId),
                parentSpanId: hexId(span.parentSpanId),
                name: span.name,
                kind: span.kind ?? 0,
                attributes: attributesOf(span.attributes),
                events: (span.events ?? []).map((event) => ({ name: event.name, attributes: attributesOf(event.attributes) })),
                links: (span.links ?? []).map((link) => ({ traceId: hexId(link.traceId), spanId: hexId(link.spanId) })),
                status: span.status?.code ?? 0,
                service,
              });
            }
          }
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      } catch (error) {
        rejected.push(`${req.headers["content-type"]}: ${(error as Error).message}`);
        res.writeHead(400).end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    rejected,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Whether `span` is `ancestor` or below it, following parents within one trace. */
export function descendsFrom(spans: readonly ReceivedSpan[], span: ReceivedSpan, ancestor: ReceivedSpan): boolean {
  const byId = new Map(spans.filter((candidate) => candidate.traceId === span.traceId).map((candidate) => [candidate.spanId, candidate]));
  for (let current: ReceivedSpan | undefined = span, hops = 0; current && hops < 100; current = byId.get(current.parentSpanId), hops++) {
    if (current.spanId === ancestor.spanId && current.traceId === ancestor.traceId) return true;
  }
  return false;
}

/** The trace and parent span ids a `traceparent` header names. */
export function parseTraceparent(header: unknown): { traceId: string; spanId: string } | undefined {
  const parts = typeof header === "string" ? /^00-([\da-f]{32})-([\da-f]{16})-[\da-f]{2}$/.exec(header) : null;
  return parts ? { traceId: parts[1]!, spanId: parts[2]! } : undefined;
}
