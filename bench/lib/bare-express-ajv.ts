// Express 5 with its JSON body parser and Ajv (with ajv-formats) checking `POST /v1/auth/login`'s
// body against the contract's own schema, answering a refusal in the service's error envelope:
// the baseline issue 37 sets the validated 400 against (`npm run bench:http`).
import type { AddressInfo } from "node:net";
import { readFileSync } from "node:fs";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import express from "express";

const document = JSON.parse(readFileSync(new URL("../../generated/openapi.json", import.meta.url), "utf8")) as { components: Record<string, unknown> };
const ajv = new Ajv({ allErrors: true, strict: false });
addFormats.default(ajv);
ajv.addSchema({ $id: "api", components: document.components });
const validate = ajv.compile({ $ref: "api#/components/schemas/LoginRequest" });

const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.use(express.json());
app.get("/healthz", (_req, res) => void res.json({ status: "ok" }));
app.post("/v1/auth/login", (req, res) => {
  if (validate(req.body)) return void res.status(401).json({ error: { code: "unauthorized", message: "Invalid email or password" } });
  const errors = (validate.errors ?? []).map((error) => ({ path: `/body${error.instancePath}`, message: error.message ?? "invalid" }));
  res.status(400).json({ error: { code: "invalid_request", message: `Invalid request: ${errors.map((e) => `${e.path} ${e.message}`).join(", ")}`, details: { errors } } });
});
const server = app.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
  process.stdout.write(`listening on ${(server.address() as AddressInfo).port}\n`);
});
server.keepAliveTimeout = 5_000;
process.on("SIGTERM", () => server.close(() => process.exit(0)));
