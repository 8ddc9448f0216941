import type { AddressInfo } from "node:net";
import express, { type RequestHandler } from "express";
import * as OpenApiValidator from "express-openapi-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadContract, operations, routeOrder } from "../../server/toolkit/contract.ts";
import { errorHandler, unknownRoute } from "../../server/toolkit/http/error-handler.ts";
import { ApiError } from "../../server/toolkit/http/errors.ts";
import { MAX_UPLOAD_BYTES, readBody } from "../../server/toolkit/http/body.ts";
import { bodyValidation, identifyOperation, requestValidation } from "../../server/toolkit/http/validator.ts";
import { refuseIllFormedText, refuseMalformedUrlOrMissingBody, verifyUtf8Body, verifyUtf8Form } from "../../server/toolkit/http/well-formed.ts";

// The compiled per-operation validators against express-openapi-validator configured as the
// service had it before (its request checks at run time): for a corpus of requests, every answer
// (status and body: the error envelope, or the path, query and body a handler would get) must be
// byte for byte the same. No database: both apps end in a handler that echoes what it was given.

type App = { url: string; close: () => void };
const apps: App[] = [];

function listen(app: express.Express): Promise<App> {
  return new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => {
      const app = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => server.close() };
      apps.push(app);
      resolve(app);
    });
  });
}

const echo: RequestHandler = (req, res) => {
  const openapi = (req as typeof req & { openapi?: { schema?: { operationId?: string }; pathParams?: unknown } }).openapi;
  res.status(200).json({ operationId: openapi?.schema?.operationId, params: openapi?.pathParams, query: req.query, body: req.body ?? null });
};

function base(): express.Express {
  const app = express();
  app.set("etag", false);
  app.use(express.json({ limit: 1024 * 1024, verify: verifyUtf8Body }));
  app.use(express.urlencoded({ extended: false, limit: 1024 * 1024, verify: verifyUtf8Form }));
  return app;
}

/** The service's validator before: express-openapi-validator's stages with the shared checks between them. */
async function reference(): Promise<App> {
  const hasBearer = (req: { headers: Record<string, string | string[] | undefined> }) => typeof req.headers.authorization === "string" && /^Bearer \S+$/i.test(req.headers.authorization);
  const stages = OpenApiValidator.middleware({
    apiSpec: await loadContract(),
    validateRequests: { allowUnknownQueryParameters: false, coerceTypes: false, allErrors: true },
    validateResponses: false,
    validateSecurity: { handlers: { BearerAuth: async (req) => hasBearer(req), ApiKeyAuth: async (req) => Boolean(req.headers["x-api-key"]), OAuth2Auth: async (req) => hasBearer(req) } },
    validateFormats: true,
    ajvFormats: { mode: "full" },
    formats: { password: () => true },
    fileUploader: { limits: { fileSize: MAX_UPLOAD_BYTES, files: 1 }, defParamCharset: "utf8" },
    ignoreUndocumented: false,
  }) as RequestHandler[];
  const named = (name: string) => stages.find((fn) => fn.name === name)!;
  const multipart: RequestHandler = (req, res, next) =>
    named("multipartMiddleware")(req, res, (error?: unknown) => {
      const status = (error as { status?: number } | undefined)?.status;
      if (error && (status === undefined || status >= 500)) {
        const reason = (error as Error).message || "unreadable";
        return next(new ApiError(400, "invalid_request", `The multipart body is malformed: ${reason}`, { errors: [{ path: "/body", message: reason }] }));
      }
      next(error as Error | undefined);
    });
  const app = base();
  app.use(named("pathParamsMiddleware"), named("metadataMiddleware"), refuseMalformedUrlOrMissingBody, named("securityMiddleware"), multipart, refuseIllFormedText, named("requestMiddleware"), echo);
  app.use(errorHandler);
  return listen(app);
}

const settings = { bodyLimitBytes: 1024 * 1024, bodyTimeoutMs: 30_000, uploadIdleTimeoutMs: 30_000 };

/** The service's validator now: one route per operation with its compiled checks around its body reader. */
function compiled(): Promise<App> {
  const app = base();
  for (const op of routeOrder) {
    app.route(op.expressRoute)[op.method.toLowerCase() as "get"]((req, _res, next) => next(req.method === op.method ? undefined : "route"), identifyOperation(op), ...requestValidation(op), readBody(op, settings), ...bodyValidation(op), echo);
  }
  app.use(unknownRoute);
  app.use(errorHandler);
  return listen(app);
}

let before: App;
let now: App;
beforeAll(async () => {
  [before, now] = await Promise.all([reference(), compiled()]);
});
afterAll(() => {
  for (const app of apps.splice(0)) app.close();
});

interface Case {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | FormData;
}

const auth = { authorization: "Bearer some.token.value" };
const json = { ...auth, "content-type": "application/json" };
const uuid = "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01";

/** Requests that fail, and some that pass, each kind of check, for every operation of the contract. */
function corpus(): Case[] {
  const cases: Case[] = [];
  for (const op of operations) {
    const path = op.expressRoute.replace(/:([a-z_]+)/g, (_m, name: string) => (name.endsWith("id") ? uuid : "abc"));
    const method = op.method;
    cases.push({ method, path }, { method, path, headers: { "x-api-key": "pk_x" } });
    cases.push({ method, path: `${path}?unknown=1`, headers: auth }, { method, path: `${path}?limit=abc&offset=-1`, headers: auth });
    cases.push({ method, path: `${path}?limit=1000`, headers: auth }, { method, path: `${path}?q=a%2Bb+c(d)'&limit=5`, headers: auth });
    cases.push({ method, path: `${path}?sort=trending&category=fantasy&limit=`, headers: auth }, { method, path: `${path}?limit=3&offset=2`, headers: auth });
    if (op.requestBody) {
      cases.push({ method, path, headers: json, body: "{}" }, { method, path, headers: json, body: '{"name":1,"extra":true,"email":"nope","content":""}' });
      cases.push({ method, path, headers: { ...auth, "content-type": "text/plain" }, body: "hi" }, { method, path, headers: auth, body: "x=1" });
      cases.push({ method, path, headers: json, body: '{"name":"A\\u0000","instructions":"\\ud800","content":"Hello","persona_id":"nope"}' });
      cases.push({ method, path, headers: json, body: '{"email":"a@example.com","password":"Correct-horse-9","username":"ab","name":"Nova","instructions":"Be."}' });
      cases.push({ method, path, headers: { ...auth, "content-type": "application/x-www-form-urlencoded" }, body: "a=1&b=%E2%82%AC" });
      cases.push({ method, path, headers: { ...auth, "content-type": "application/json; charset=latin1" }, body: '{"content":"x"}' });
      if (op.multipart) {
        const form = new FormData();
        form.append("file", new Blob(["hello"], { type: "text/plain" }), "notes.txt");
        cases.push({ method, path, headers: auth, body: form });
        const other = new FormData();
        other.append("unexpected", new Blob(["x"]), "x.txt");
        other.append("language", "en");
        cases.push({ method, path, headers: auth, body: other });
      }
    }
  }
  cases.push({ method: "HEAD", path: "/healthz" }, { method: "OPTIONS", path: "/v1/personas", headers: auth });
  cases.push({ method: "GET", path: "/v1/nothing-here" }, { method: "DELETE", path: "/healthz" }, { method: "GET", path: `/v1/personas/%E0%A4%A` , headers: auth });
  cases.push({ method: "GET", path: "/v1/conversations/search?q=%FF", headers: auth }, { method: "GET", path: "/v1/personas?limit=2&limit=3", headers: auth });
  return cases;
}

/**
 * The one deliberate difference (docs/adr/0032-an-integer-parameter-is-a-plain-decimal-integer.md, "Plain decimal integers"): an integer
 * parameter must be written as a plain decimal integer, where express-openapi-validator took any
 * text `Number()` reads (`0x10` as 16). Each case: what the compiled validators answer now.
 */
const notDecimal = (name: string) => `400 application/json; charset=utf-8 ${JSON.stringify({ error: { code: "invalid_request", message: `Invalid request: query.${name} must be integer`, details: { errors: [{ path: `/query/${name}`, message: "must be integer" }] } } })}`;
const exceptions: { case: Case; before: RegExp; now: string }[] = [
  { case: { method: "GET", path: "/v1/personas?offset=0x10", headers: auth }, before: /^200 /, now: notDecimal("offset") },
  { case: { method: "GET", path: "/v1/personas?limit=1e1", headers: auth }, before: /^200 /, now: notDecimal("limit") },
  { case: { method: "GET", path: "/v1/conversations?offset=%2B5", headers: auth }, before: /^200 /, now: notDecimal("offset") },
  { case: { method: "GET", path: "/v1/personas?limit=2.0", headers: auth }, before: /^200 /, now: notDecimal("limit") },
];

async function answer(url: string, c: Case): Promise<string> {
  const response = await fetch(url + c.path, { method: c.method, headers: c.headers, body: c.body ?? null });
  return `${response.status} ${response.headers.get("content-type")} ${await response.text()}`;
}

describe("compiled request validators", () => {
  it("answer every request of the corpus exactly as express-openapi-validator did", async () => {
    const cases = corpus();
    const differences: string[] = [];
    for (const c of cases) {
      const [was, is] = await Promise.all([answer(before.url, c), answer(now.url, c)]);
      if (was !== is) differences.push(`${c.method} ${c.path} ${JSON.stringify(c.headers ?? {})}\n  before: ${was}\n  now:    ${is}`);
    }
    expect(differences.join("\n")).toBe("");
    expect(cases.length).toBeGreaterThan(500);
  }, 120_000);

  it("differ only where documented: an integer parameter not written in plain decimal is refused now", async () => {
    for (const exception of exceptions) {
      const [was, is] = await Promise.all([answer(before.url, exception.case), answer(now.url, exception.case)]);
      expect(was, exception.case.path).toMatch(exception.before);
      expect(is, exception.case.path).toBe(exception.now);
    }
  });
});
