import fc from "fast-check";
import { FilePart, flatten, valid, type GenContext } from "./arbitrary.ts";
import type { FuzzOperation, Parameter, Schema } from "./contract.ts";
import { BOUNDARY, describe, encodeBody, Raw, wtf8 } from "./wire.ts";

// One fuzz case of one operation: a request built from the operation's schemas, valid, or valid
// but for one mutation. Every mutation is named in `note`, so a report says what was sent.

export interface FuzzRequest {
  method: string;
  /** Path and query as sent on the request line (already percent-encoded). */
  path: string;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
  note: string;
}

/** Credentials the fuzzer can present, made through the API by the fixtures. */
export interface Credentials {
  /** The acting user's headers (session token). */
  own: Record<string, string>;
  /** Another user's session headers. */
  other: Record<string, string>;
  /** A key of the acting user that has been revoked. */
  revokedKey: string;
  /** The acting user's claims, unsigned (alg: none). */
  unsignedJwt: string;
  /** The acting user's claims signed with a secret that is not the server's. */
  foreignJwt: string;
}

export interface CaseContext {
  /** Values of the acting user's fixtures. */
  own: GenContext;
  /** Values of another user's fixtures: sending them is the "another user's id" mutation. */
  other: GenContext;
  credentials: Credentials;
  /** The service's JSON/form body limit in bytes. */
  bodyLimitBytes: number;
}

/**
 * The fixture name of a path parameter: `id` is named by the collection before it (`/v1/rooms/{id}`
 * -> rooms); the persona right after `embed` (`/embed/{id}`, `/v1/embed/{persona_id}/…`) is the
 * world's embedded one, `embed`.
 */
export function fixtureKey(path: string, name: string): string {
  const segments = path.split("/");
  const before = segments[segments.indexOf(`{${name}}`) - 1];
  if (before === "embed") return "embed";
  if (name !== "id") return name;
  return before ?? name;
}

interface Parts {
  path: Record<string, string>;
  query: [string, string][];
  headers: Record<string, string>;
  /** The body value and the content type it is sent as; undefined for no body. */
  body: { contentType: string; value: unknown } | undefined;
  /** Replaces the encoded body when a mutation writes bytes itself. */
  rawBody?: { bytes: Uint8Array; contentType: string | undefined };
  notes: string[];
}

const enc = (value: string) => encodeURIComponent(value);
const stringify = (value: unknown): string => (Array.isArray(value) ? value.map(stringify).join(",") : typeof value === "string" ? value : JSON.stringify(value));

function parameterArb(op: FuzzOperation, p: Parameter, ctx: GenContext): fc.Arbitrary<string> {
  const key = p.in === "path" ? fixtureKey(op.path, p.name) : p.name;
  const known = ctx.valuesFor(key);
  if (p.in === "path" && known?.length) return fc.constantFrom(...known).map(enc);
  return valid(p.schema, ctx, key).map((v) => enc(stringify(v)));
}

function validParts(op: FuzzOperation, c: CaseContext, contentType?: string): fc.Arbitrary<Parts> {
  const path = fc.record(Object.fromEntries(op.parameters.filter((p) => p.in === "path").map((p) => [p.name, parameterArb(op, p, c.own)])));
  const query = fc.tuple(
    ...op.parameters
      .filter((p) => p.in === "query")
      .map((p) => (p.required ? parameterArb(op, p, c.own).map((v) => [[p.name, v]]) : fc.option(parameterArb(op, p, c.own).map((v) => [[p.name, v]]), { nil: [], freq: 2 }))),
  ).map((lists) => lists.flat() as [string, string][]);
  const idempotent = op.parameters.some((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key");
  // Unbiased: fast-check's small-value bias would give many cases the same key, and a reused key is its own mutation.
  const headers = fc.record({ key: idempotent ? fc.option(fc.noBias(fc.uuid()), { nil: undefined }) : fc.constant(undefined) }).map(({ key }) => ({
    ...(op.scope ? c.credentials.own : {}),
    ...(key ? { "idempotency-key": key } : {}),
  }));
  const body = op.body
    ? fc.record({ contentType: contentType ? fc.constant(contentType) : fc.constantFrom(...op.body.alternatives), value: valid(op.body.schema, c.own) })
    : fc.constant(undefined);
  return fc.record({ path, query, headers, body }).map((parts) => ({ ...parts, notes: [] }));
}

// ---- mutations of a body field --------------------------------------------------------------

interface Point {
  at: (string | number)[];
  schema: Schema;
  value: unknown;
}

function pointsOf(schemaIn: Schema | undefined, value: unknown, at: (string | number)[] = [], depth = 0): Point[] {
  const schema = flatten(schemaIn);
  const here: Point = { at, schema, value };
  if (depth > 5) return [here];
  if (Array.isArray(value)) return [here, ...(value.length ? pointsOf(schema.items as Schema, value[0], [...at, 0], depth + 1) : [])];
  if (value && typeof value === "object" && !(value instanceof FilePart)) {
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    return [here, ...Object.entries(value).flatMap(([key, item]) => pointsOf(properties[key], item, [...at, key], depth + 1))];
  }
  return [here];
}

function setAt(root: unknown, at: (string | number)[], next: unknown, remove = false): unknown {
  if (!at.length) return next;
  const copy = (Array.isArray(root) ? [...root] : { ...(root as object) }) as Record<string | number, unknown>;
  const [head, ...rest] = at;
  if (remove && !rest.length) delete copy[head!];
  else copy[head!] = setAt(copy[head!], rest, next, remove);
  return copy;
}

const quote = new TextEncoder().encode('"');
const rawString = (label: string, ...middle: Uint8Array[]) => new Raw(label, new Uint8Array([...quote, ...middle.flatMap((m) => [...m]), ...quote]));

const UNICODE: [string, unknown][] = [
  ["right-to-left override", "\u202Eevil\u202Cgood"],
  ["Arabic and Hebrew", "مرحبا שלום"],
  ["emoji with joiners", "👩‍👩‍👧‍👦🏳️‍🌈"],
  ["combining marks", `e${"\u0301\u0302\u0303\u0308".repeat(50)}`],
  ["NUL", "a\u0000b"],
  ["lone high surrogate, escaped", "a\ud800b"],
  ["lone low surrogate, escaped", "\udfff"],
  ["reversed surrogate pair, escaped", "\udc00\ud800"],
  ["lone high surrogate, raw bytes", rawString("lone surrogate bytes", wtf8(0xd800))],
  ["lone low surrogate, raw bytes", rawString("lone surrogate bytes", new TextEncoder().encode("x"), wtf8(0xdc00))],
  ["invalid UTF-8", rawString("invalid UTF-8", new Uint8Array([0xc3, 0x28]))],
  ["overlong UTF-8 slash", rawString("overlong UTF-8", new Uint8Array([0xc0, 0xaf]))],
  ["byte order mark", "\ufeffname"],
  ["zero-width characters", "a\u200b\u200c\u200d\u2060b"],
  ["line and paragraph separators", "a\u2028b\u2029c"],
  ["control characters", "\u0001\u0007\u001b[31m\u007f"],
  ["noncharacters", "\uffff\ufffe\u{10ffff}"],
  ["astral plane", "𝕳𝖊𝖑𝖑𝖔 𓀀"],
  ["SQL", "'; DROP TABLE users; --"],
  ["HTML", '<script>alert(1)</script><img src=x onerror=alert(1)>'],
  ["path traversal", "../../../../etc/passwd"],
  ["template", "${7*7}{{7*7}}%s%n"],
  ["whitespace only", " \t\n "],
];

function lengthsFor(schema: Schema): number[] {
  const min = schema.minLength as number | undefined;
  const max = schema.maxLength as number | undefined;
  return [...new Set([0, ...(min !== undefined ? [min - 1, min] : []), ...(max !== undefined ? [max, max + 1] : [1000]), 100_000])].filter((n) => n >= 0);
}

function numbersFor(schema: Schema): unknown[] {
  const min = schema.minimum as number | undefined;
  const max = schema.maximum as number | undefined;
  return [
    ...(min !== undefined ? [min, min - 1] : []),
    ...(max !== undefined ? [max, max + 1] : []),
    new Raw("-0", "-0"),
    new Raw("1e309", "1e309"),
    new Raw("-1e309", "-1e309"),
    new Raw("1e-400", "1e-400"),
    new Raw("2^53+1", "9007199254740993"),
    new Raw("30 digits", "123456789012345678901234567890"),
    new Raw("1.0", "1.0"),
    new Raw("1E2", "1E2"),
    0.5,
    -1,
    2 ** 31,
    -(2 ** 31) - 1,
  ];
}

const WRONG_TYPES: Record<string, unknown[]> = {
  string: [12345, true, {}, ["x"], 0],
  integer: ["12", "abc", true, {}, [1], 1.5],
  number: ["1.5", "abc", false, {}, [1]],
  boolean: ["true", 1, 0, "yes", {}],
  array: ["x", {}, 1, [[[[]]]]],
  object: ["x", [], 1, true],
};

const FORMAT_BAD: Record<string, unknown[]> = {
  uuid: ["not-a-uuid", "00000000-0000-0000-0000-000000000000", "{0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01}", "0193A6C4-7B1E-7C2A-9D4F-2F1E8C5B6A01", "0193a6c47b1e7c2a9d4f2f1e8c5b6a01"],
  email: ["a@", "@b", "a@b", `${"a".repeat(300)}@example.com`, "ünï@exämple.com", "a b@example.com", "a@example.com\r\nBcc: x@example.com"],
  "date-time": ["2024-02-30T00:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z", "yesterday", "2024-01-01"],
  date: ["2024-13-01", "0000-00-00", "tomorrow"],
  uri: [
    "javascript:alert(1)",
    "http://169.254.169.254/latest/meta-data/",
    "https://169.254.169.254/latest/meta-data/",
    "https://127.0.0.1:1/",
    "https://[::1]/",
    "https://[::ffff:127.0.0.1]/",
    "file:///etc/passwd",
    "https://user:pass@127.0.0.1/",
    "gopher://127.0.0.1:25/",
    "https://0x7f.1/",
    "https://2130706433/",
    "https://localhost%00.example.com/",
    "https://",
  ],
};

function leafMutations(point: Point): fc.Arbitrary<[string, unknown]> {
  const s = point.schema;
  const type = String(s.type ?? (s.properties ? "object" : "unknown"));
  const options: fc.Arbitrary<[string, unknown]>[] = [];
  const wrong = (WRONG_TYPES[type] ?? ["x", 1]).concat(s.nullable ? [] : [null]);
  options.push(fc.constantFrom(...wrong).map((v) => [`wrong type ${describe(v, 40)}`, v]));
  if (Array.isArray(s.enum)) options.push(fc.constantFrom("NOT_IN_ENUM", "", String(s.enum[0]).toUpperCase(), `${String(s.enum[0])} `).map((v) => [`not in enum ${describe(v)}`, v]));
  if (type === "string" && s.format !== "binary") {
    const current = typeof point.value === "string" ? point.value : "";
    options.push(
      fc.tuple(fc.constantFrom(...lengthsFor(s)), fc.constantFrom("a", "é", "😀", " ")).map(([n, ch]) => [`length ${n} of ${JSON.stringify(ch)}`, ch.repeat(n)]),
      fc.tuple(fc.constantFrom(...UNICODE), fc.boolean()).map(([[label, sample], append]) => {
        if (!append) return [`unicode: ${label}`, sample];
        if (sample instanceof Raw) {
          const prefix = new TextEncoder().encode(JSON.stringify(current).slice(0, -1));
          return [`unicode appended: ${label}`, new Raw(sample.label, new Uint8Array([...prefix, ...sample.bytes.slice(1)]))];
        }
        return [`unicode appended: ${label}`, `${current}${String(sample)}`];
      }),
    );
    const bad = FORMAT_BAD[String(s.format)];
    if (bad) options.push(fc.constantFrom(...bad).map((v) => [`bad ${String(s.format)} ${describe(v, 60)}`, v]));
  }
  if (type === "integer" || type === "number") options.push(fc.constantFrom(...numbersFor(s)).map((v) => [`number ${describe(v)}`, v]));
  if (type === "array") {
    const max = (s.maxItems as number | undefined) ?? 100;
    const first = Array.isArray(point.value) && point.value.length ? point.value[0] : "x";
    options.push(
      fc.constantFrom<[string, unknown]>(
        ["empty array", []],
        [`${max + 1} items`, Array.from({ length: max + 1 }, () => first)],
        ["duplicate items", [first, first]],
        ["10,000 items", Array.from({ length: 10_000 }, () => first)],
      ),
    );
  }
  return fc.oneof(...options);
}

const EXTRA_NAMES = ["id", "user_id", "creator_id", "is_admin", "plan", "role", "__proto__", "constructor", "", "x".repeat(1000), "a\u0000b"];

function objectMutations(point: Point): fc.Arbitrary<[string, unknown]> {
  const value = point.value as Record<string, unknown>;
  const required = ((point.schema.required as string[] | undefined) ?? []).filter((key) => key in value);
  const options: fc.Arbitrary<[string, unknown]>[] = [
    fc.tuple(fc.constantFrom(...EXTRA_NAMES), fc.constantFrom<unknown>(true, "admin", 1, { is_admin: true }, null)).map(([name, extra]) => {
      const copy = { ...value };
      Object.defineProperty(copy, name, { value: extra, enumerable: true, configurable: true, writable: true });
      return [`extra property ${JSON.stringify(name.slice(0, 20))}`, copy];
    }),
    fc.constantFrom<[string, unknown]>(["empty object", {}], ["null instead of an object", null], ["array instead of an object", [value]], ["string instead of an object", "x"]),
  ];
  if (required.length) {
    options.push(
      fc.constantFrom(...required).map((key) => {
        const { [key]: _gone, ...rest } = value;
        return [`missing required ${key}`, rest];
      }),
    );
  }
  return fc.oneof(...options);
}

function bodyFieldMutation(op: FuzzOperation, parts: Parts): fc.Arbitrary<Parts> | undefined {
  if (!op.body || !parts.body) return undefined;
  const points = pointsOf(op.body.schema, parts.body.value);
  if (!points.length) return undefined;
  return fc.constantFrom(...points).chain((point) =>
    (point.value && typeof point.value === "object" && !Array.isArray(point.value) && !(point.value instanceof FilePart) ? objectMutations(point) : leafMutations(point)).map(
      ([note, next]) => ({
        ...parts,
        body: { ...parts.body!, value: setAt(parts.body!.value, point.at, next) },
        notes: [`body /${point.at.join("/")}: ${note}`],
      }),
    ),
  );
}

// ---- mutations of the transport ---------------------------------------------------------------

/** An arbitrary whose one value is built only when it is drawn (large bodies are not made for nothing). */
const lazy = <T>(make: () => T): fc.Arbitrary<T> => fc.constant(0).map(make);

function bytes(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function bodyTransportMutation(op: FuzzOperation, parts: Parts, c: CaseContext): fc.Arbitrary<Parts> | undefined {
  if (!op.body || !parts.body) return undefined;
  const encoded = encodeBody(parts.body.contentType, parts.body.value);
  const json = parts.body.contentType === "application/json";
  const raw = (note: string, body: Uint8Array, contentType: string | undefined = encoded.header): Parts => ({ ...parts, rawBody: { bytes: body, contentType }, notes: [note] });
  const malformed: [string, () => string][] = (
    [
    ["truncated JSON", new TextDecoder().decode(encoded.bytes).slice(0, Math.max(1, Math.floor(encoded.bytes.length / 2)))],
    ["lone brace", "{"],
    ["missing value", '{"a":}'],
    ["single quotes", "{'a': 1}"],
    ["trailing comma", '{"a": 1,}'],
    ["trailing garbage", '{}x'],
    ["byte order mark", `\ufeff${new TextDecoder().decode(encoded.bytes)}`],
    ["empty body", ""],
    ["JSON null", "null"],
    ["JSON array", "[]"],
    ["JSON string", '"text"'],
    ["JSON number", "1"],
    ["100,000 nested arrays", () => `${"[".repeat(100_000)}${"]".repeat(100_000)}`],
    ["10,000 nested objects", () => `${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}`],
    ["duplicate keys", `{"__proto__": {"is_admin": true}, "constructor": {"prototype": {"is_admin": true}}, ${new TextDecoder().decode(encoded.bytes).replace(/^\{/, "").replace(/\}$/, "") || '"a": 1'}}`],
  ] as [string, string | (() => string)][]
  ).map(([note, text]) => [note, typeof text === "string" ? () => text : text]);
  const wrongTypes = ["text/plain", "application/xml", "application/x-www-form-urlencoded", "multipart/form-data", "application/json; charset=utf-16", "application/json; charset=latin1", "APPLICATION/JSON", "application/vnd.api+json", "application/octet-stream", "*/*", ";;;", undefined];
  const options: fc.Arbitrary<Parts>[] = [
    fc.constantFrom(...wrongTypes).map((type) => raw(`content type ${type ?? "(none)"}`, encoded.bytes, type)),
    lazy(() => raw(`oversized body (limit ${c.bodyLimitBytes} + 1 KiB)`, bytes(`{"x":"${"a".repeat(c.bodyLimitBytes + 1024)}"}`))),
    fc.constant(raw("no body at all", new Uint8Array(0), undefined)),
    fc.constantFrom("gzip", "deflate", "br", "compress").map((coding) => ({ ...raw(`Content-Encoding ${coding} on a plain body`, encoded.bytes), headers: { ...parts.headers, "content-encoding": coding } })),
  ];
  if (json) options.push(fc.constantFrom(...malformed).map(([note, text]) => raw(`JSON text: ${note}`, bytes(text()), "application/json")));
  if (parts.body.contentType === "multipart/form-data") {
    options.push(
      fc.constantFrom<[string, string]>(
        ["no boundary in the content type", "multipart/form-data"],
        ["another boundary", "multipart/form-data; boundary=nothere"],
      ).map(([note, type]) => raw(note, encoded.bytes, type)),
      fc.constant(raw("body cut mid-part", encoded.bytes.slice(0, Math.floor(encoded.bytes.length * 0.6)))),
      lazy(() => {
        const field = Object.keys(parts.body!.value as object)[0] ?? "file";
        const head = bytes(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${field}"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n`);
        return raw("file of 26 MB", Buffer.concat([head, Buffer.alloc(26 * 1024 * 1024, 97), bytes(`\r\n--${BOUNDARY}--\r\n`)]));
      }),
    );
  }
  return fc.oneof(...options);
}

function queryMutation(op: FuzzOperation, parts: Parts): fc.Arbitrary<Parts> | undefined {
  const params = op.parameters.filter((p) => p.in === "query");
  const others = (name: string) => parts.query.filter(([n]) => n !== name);
  const targeted = params.length
    ? fc.constantFrom(...params).chain((p) => {
        const s = flatten(p.schema);
        const values: string[] = ["", "abc", "1.5", "1e309", "-0", "0x10", "%00", "%ED%A0%80", "%FF", "%E0%A4%A", "%", "a%20b", enc("\u202Eevil"), enc("👩‍👩‍👧‍👦"), "x".repeat(5000)];
        if (s.minimum !== undefined) values.push(String(Number(s.minimum) - 1), String(s.minimum));
        if (s.maximum !== undefined) values.push(String(Number(s.maximum) + 1), String(s.maximum));
        if (s.maxLength !== undefined) values.push("a".repeat(Number(s.maxLength) + 1), "a".repeat(Number(s.maxLength)));
        values.push(String(2 ** 31), String(-(2 ** 31) - 1), "99999999999999999999");
        return fc.oneof(
          fc.constantFrom(...values).map((v): Parts => ({ ...parts, query: [...others(p.name), [p.name, v] as [string, string]], notes: [`query ${p.name}=${v.slice(0, 40)}`] })),
          fc.constant<Parts>({ ...parts, query: [...others(p.name), [p.name, "1"], [p.name, "2"]], notes: [`query ${p.name} repeated`] }),
        );
      })
    : undefined;
  const unknown = fc.constantFrom("zzz", "__proto__", "limit[]", "").map((name) => ({ ...parts, query: [...parts.query, [name, "1"] as [string, string]], notes: [`unknown query parameter ${JSON.stringify(name)}`] }));
  return targeted ? fc.oneof(targeted, unknown) : unknown;
}

function pathMutation(op: FuzzOperation, parts: Parts, c: CaseContext): fc.Arbitrary<Parts> | undefined {
  const params = op.parameters.filter((p) => p.in === "path");
  if (!params.length) return undefined;
  return fc.constantFrom(...params).chain((p) => {
    const current = decodeURIComponent(parts.path[p.name]!);
    const other = c.other.valuesFor(fixtureKey(op.path, p.name)) ?? [];
    const values: [string, string][] = [
      ["not a uuid", "not-a-uuid"],
      ["a uuid nobody has", "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01"],
      ["the nil uuid", "00000000-0000-0000-0000-000000000000"],
      ["upper case", enc(current.toUpperCase())],
      ["one character more", enc(`${current}x`)],
      ["dot dot", "%2E%2E"],
      ["encoded slash", "a%2Fb"],
      ["NUL", "%00"],
      ["lone surrogate bytes", "%ED%A0%80"],
      ["invalid UTF-8", "%FF"],
      ["broken percent-encoding", "%E0%A4%A"],
      ["2,000 characters", "x".repeat(2000)],
      ["SQL", enc("1' OR '1'='1")],
      ["right-to-left override", enc("\u202E1")],
      ...other.map((v): [string, string] => ["another user's id", enc(v)]),
    ];
    return fc.constantFrom(...values).map(([note, v]) => ({ ...parts, path: { ...parts.path, [p.name]: v }, notes: [`path ${p.name}: ${note}`] }));
  });
}

function credentialMutation(op: FuzzOperation, parts: Parts, c: CaseContext): fc.Arbitrary<Parts> {
  const own = c.credentials.own.authorization ?? "";
  const { authorization: _a, "x-api-key": _k, ...rest } = parts.headers;
  const variants: [string, Record<string, string>][] = [
    ["no credentials", {}],
    ["Bearer with nothing", { authorization: "Bearer" }],
    ["garbage bearer", { authorization: "Bearer garbage" }],
    ["Basic auth", { authorization: "Basic dXNlcjpwYXNz" }],
    ["another user's session", c.credentials.other],
    ["unsigned token (alg: none)", { authorization: `Bearer ${c.credentials.unsignedJwt}` }],
    ["token signed with another secret", { authorization: `Bearer ${c.credentials.foreignJwt}` }],
    ["tampered token", { authorization: `${own}x` }],
    ["garbage API key", { "x-api-key": "pk_garbage" }],
    ["revoked API key", { "x-api-key": c.credentials.revokedKey }],
    ["8,000-character bearer", { authorization: `Bearer ${"a".repeat(8000)}` }],
  ];
  return fc.constantFrom(...variants).map(([note, headers]) => ({ ...parts, headers: { ...rest, ...headers }, notes: [`credentials: ${note}`] }));
}

function headerMutation(op: FuzzOperation, parts: Parts): fc.Arbitrary<Parts> {
  const idempotent = op.parameters.some((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key");
  const variants: [string, Record<string, string>][] = [
    ["Accept: application/xml", { accept: "application/xml" }],
    ["Accept: text/html", { accept: "text/html" }],
    ["long X-Request-Id", { "x-request-id": "r".repeat(4000) }],
    ["X-Request-Id with odd bytes", { "x-request-id": "\u00ff\u00fe<script>" }],
    ["X-Forwarded-For spoofed", { "x-forwarded-for": "127.0.0.1, 10.0.0.1" }],
  ];
  if (idempotent) {
    variants.push(
      ["empty Idempotency-Key", { "idempotency-key": "" }],
      ["256-character Idempotency-Key", { "idempotency-key": "k".repeat(256) }],
      ["latin-1 Idempotency-Key", { "idempotency-key": "cl\u00e9" }],
      ["reused Idempotency-Key", { "idempotency-key": "fuzz-reused-key" }],
    );
  }
  return fc.constantFrom(...variants).map(([note, headers]) => ({ ...parts, headers: { ...parts.headers, ...headers }, notes: [`header: ${note}`] }));
}

function unexpectedBody(op: FuzzOperation, parts: Parts): fc.Arbitrary<Parts> | undefined {
  if (op.body) return undefined;
  return fc.constantFrom<[string, string]>(["JSON object", '{"is_admin": true}'], ["malformed JSON", "{"], ["text", "hello"]).map(([note, text]) => ({
    ...parts,
    rawBody: { bytes: bytes(text), contentType: note === "text" ? "text/plain" : "application/json" },
    notes: [`a body on an operation without one: ${note}`],
  }));
}

function render(op: FuzzOperation, parts: Parts): FuzzRequest {
  const path = op.path.replace(/\{([^}]+)\}/g, (_, name: string) => parts.path[name] ?? "");
  const query = parts.query.map(([k, v]) => `${enc(k)}=${v}`).join("&");
  const headers: Record<string, string> = { ...parts.headers };
  let body: Uint8Array | undefined;
  if (parts.rawBody) {
    body = parts.rawBody.bytes;
    if (parts.rawBody.contentType !== undefined) headers["content-type"] = parts.rawBody.contentType;
  } else if (parts.body) {
    const encoded = encodeBody(parts.body.contentType, parts.body.value);
    body = encoded.bytes;
    headers["content-type"] = encoded.header;
  }
  const note = parts.notes.length ? parts.notes.join("; ") : "valid";
  return { method: op.method, path: query ? `${path}?${query}` : path, headers, body, note: parts.body && !parts.rawBody ? `${note}; body ${describe(parts.body.value)}` : note };
}

/** The requests of one operation: about a third valid, the rest valid but for one mutation. */
export function casesOf(op: FuzzOperation, c: CaseContext): fc.Arbitrary<FuzzRequest> {
  return validParts(op, c)
    .chain((parts) => {
      const mutations = [
        bodyFieldMutation(op, parts),
        bodyFieldMutation(op, parts),
        bodyTransportMutation(op, parts, c),
        queryMutation(op, parts),
        pathMutation(op, parts, c),
        credentialMutation(op, parts, c),
        headerMutation(op, parts),
        unexpectedBody(op, parts),
      ].filter((m): m is fc.Arbitrary<Parts> => m !== undefined);
      return fc.oneof({ weight: 3, arbitrary: fc.constant(parts) }, { weight: 7, arbitrary: fc.oneof(...mutations) });
    })
    .map((parts) => render(op, parts));
}

/** Only the valid requests of one operation (with a body of `contentType` when given). */
export function validCasesOf(op: FuzzOperation, c: CaseContext, contentType?: string): fc.Arbitrary<FuzzRequest> {
  return validParts(op, c, contentType).map((parts) => render(op, parts));
}
