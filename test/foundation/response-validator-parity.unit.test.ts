import type { AddressInfo } from "node:net";
import { sample } from "@stoplight/json-schema-sampler";
import express, { type RequestHandler } from "express";
import * as OpenApiValidator from "express-openapi-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadContract, routeOrder } from "../../server/toolkit/contract.ts";
import { errorHandler } from "../../server/toolkit/http/error-handler.ts";
import { responseValidator } from "../../server/toolkit/http/response-validator.ts";
import { identifyOperation } from "../../server/toolkit/http/validator.ts";

// The response validators `npm run gen` compiles (generated/response-validators.js) against
// express-openapi-validator's response check as tests had it, which compiled them as operations
// first answered: for every operation, status and JSON media type of the contract, a body drawn
// from its schema, an empty object and a body of the wrong kind must get the same verdict (status
// and body) from both. No database: each app answers what the case says.

type Case = { method: string; path: string; status: number; body: unknown };
const cases: Case[] = [];
const servers: { close: () => void }[] = [];

const answer: RequestHandler = (req, res) => {
  const c = cases[Number(req.headers["x-case"])]!;
  res.status(c.status).json(c.body);
};

function listen(app: express.Express): Promise<string> {
  return new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
    servers.push(server);
  });
}

async function reference(): Promise<string> {
  const stages = OpenApiValidator.middleware({
    apiSpec: await loadContract(),
    validateRequests: false,
    validateResponses: { removeAdditional: false },
    validateSecurity: false,
    validateFormats: true,
    ajvFormats: { mode: "full" },
    formats: { password: () => true },
    ignoreUndocumented: false,
  }) as RequestHandler[];
  const named = (name: string) => stages.find((fn) => fn.name === name)!;
  const app = express();
  app.use(named("pathParamsMiddleware"), named("metadataMiddleware"), named("responseMiddleware"));
  for (const op of routeOrder) app.route(op.expressRoute)[op.method.toLowerCase() as "get"](answer);
  app.use(errorHandler);
  return listen(app);
}

async function compiled(): Promise<string> {
  const app = express();
  app.use(...(await responseValidator({ validateResponses: true })));
  for (const op of routeOrder) app.route(op.expressRoute)[op.method.toLowerCase() as "get"](identifyOperation(op), answer);
  app.use(errorHandler);
  return listen(app);
}

/** A status the response key stands for: itself, a `4XX` range's first, `default` as a 4xx. */
const statusOf = (key: string) => (key === "default" ? 422 : key.endsWith("XX") ? Number(key[0]) * 100 + 9 : Number(key));

async function corpus(): Promise<void> {
  const document = (await loadContract()) as unknown as { paths: Record<string, Record<string, { responses?: Record<string, { $ref?: string; content?: Record<string, { schema?: object }> }> }>>; components: { responses: Record<string, { content?: Record<string, { schema?: object }> }> } };
  for (const op of routeOrder) {
    const path = op.expressRoute.replace(/:([a-z_]+)/g, "abc");
    const operation = document.paths[op.path]![op.method.toLowerCase()]!;
    for (const [key, value] of Object.entries(operation.responses ?? {})) {
      const status = statusOf(key);
      if (status >= 500) continue;
      const response = value.$ref ? document.components.responses[value.$ref.split("/").pop()!]! : value;
      const json = Object.entries(response.content ?? {}).find(([type]) => /[/+]json\b/.test(type));
      if (!response.content) {
        cases.push({ method: op.method, path, status, body: { unexpected: true } });
        continue;
      }
      if (!json?.[1].schema) continue;
      const drawn = sample(json[1].schema, { skipReadOnly: false }, document) as unknown;
      cases.push({ method: op.method, path, status, body: drawn }, { method: op.method, path, status, body: {} }, { method: op.method, path, status, body: wrongKind(drawn) });
    }
  }
}

/** The body with its first field of the wrong kind (or a list where an object belongs). */
function wrongKind(body: unknown): unknown {
  if (!body || typeof body !== "object" || Array.isArray(body)) return [body];
  const [first] = Object.keys(body);
  return first ? { ...body, [first]: [[7]] } : [1];
}

let before: string;
let now: string;
beforeAll(async () => {
  await corpus();
  [before, now] = await Promise.all([reference(), compiled()]);
});
afterAll(() => {
  for (const server of servers.splice(0)) server.close();
});

const verdict = async (url: string, c: Case, index: number) => {
  const response = await fetch(url + c.path, { method: c.method, headers: { "x-case": String(index) } });
  return `${response.status} ${await response.text()}`;
};

describe("compiled response validators", () => {
  it("give every response of the corpus the verdict express-openapi-validator gave", async () => {
    const differences: string[] = [];
    let refused = 0;
    for (const [index, c] of cases.entries()) {
      const [was, is] = await Promise.all([verdict(before, c, index), verdict(now, c, index)]);
      if (was !== is) differences.push(`${c.method} ${c.path} ${c.status} ${JSON.stringify(c.body).slice(0, 200)}\n  before: ${was.slice(0, 400)}\n  now:    ${is.slice(0, 400)}`);
      if (is.startsWith("500 ")) refused++;
    }
    expect(differences.slice(0, 10).join("\n")).toBe("");
    // The corpus holds both verdicts, in number.
    expect(cases.length).toBeGreaterThan(1000);
    expect(refused).toBeGreaterThan(cases.length / 4);
    expect(refused).toBeLessThan(cases.length);
  }, 300_000);
});
