import { readdirSync, readFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import * as catalogue from "../../server/toolkit/http/error-catalogue.ts";
import { ApiError } from "../../server/toolkit/http/errors.ts";
import { ProviderUnavailableError, UpstreamError } from "../../server/toolkit/providers/errors.ts";

// The error catalogue is the one place refusals are built: each factory fixes the status of a
// contract error code, and nothing else in server/ constructs an ApiError (issue 32).

const root = resolve(import.meta.dirname, "../..");
const contract = JSON.parse(readFileSync(join(root, "generated", "openapi.json"), "utf8")) as {
  components: { schemas: Record<string, { enum?: string[] }> };
};
const errorCodes = contract.components.schemas.ErrorCode!.enum!;
const streamErrorCodes = contract.components.schemas.ChatStreamErrorCode!.enum!;

// One call of each factory; a factory added to the catalogue must be added here (checked below).
const factories: Record<string, () => ApiError> = {
  invalidRequest: () => catalogue.invalidRequest("m"),
  invalidField: () => catalogue.invalidField("/body/x", "is wrong"),
  invalidFields: () => catalogue.invalidFields("m", [{ path: "/body/x", message: "is wrong" }]),
  validationFailed: () => catalogue.validationFailed([{ path: "/body/x", message: "is wrong" }]),
  missingMultipartField: () => catalogue.missingMultipartField("file"),
  requestTimeout: () => catalogue.requestTimeout("m"),
  headersTooLarge: () => catalogue.headersTooLarge("m"),
  unauthorized: () => catalogue.unauthorized(),
  planLimit: () => catalogue.planLimit("m", { limit: 3, used: 3, plan: "free" }),
  forbidden: () => catalogue.forbidden("m"),
  missingScope: () => catalogue.missingScope("m", "conversations:write", ["conversations:write", "chat", "admin"]),
  accountPendingDeletion: () => catalogue.accountPendingDeletion("m", { restorable: true }),
  accountSuspended: () => catalogue.accountSuspended("m", { reason: "r" }),
  contentFlagged: () => catalogue.contentFlagged("m", { categories: ["spam"], provider: "wordlist" }),
  notFound: () => catalogue.notFound("Persona"),
  notFoundExplained: () => catalogue.notFoundExplained("m"),
  noSuchRoute: () => catalogue.noSuchRoute(),
  conflict: () => catalogue.conflict("m"),
  payloadTooLarge: () => catalogue.payloadTooLarge("m"),
  unsupportedMediaType: () => catalogue.unsupportedMediaType("m"),
  rateLimited: () => catalogue.rateLimited("m", 7),
  internalError: () => catalogue.internalError(),
  notImplemented: () => catalogue.notImplemented("m"),
  upstreamFailed: () => catalogue.upstreamFailed("m"),
  replyFlagged: () => catalogue.replyFlagged("m", { categories: ["spam"], provider: "wordlist" }),
  providerUnavailable: () => catalogue.providerUnavailable("m"),
  serviceUnavailable: () => catalogue.serviceUnavailable("m", 5),
  withDetails: () => catalogue.withDetails(catalogue.upstreamFailed("m"), { message: {} }),
  reworded: () => catalogue.reworded(catalogue.invalidRequest("m"), "in other words", { param: "input" }),
};
// Exports that build no ApiError of their own code.
const notFactories = new Set(["summarize", "providerFailure", "streamError"]);

describe("the error catalogue", () => {
  it("has a call above for every factory it exports", () => {
    const exported = Object.entries(catalogue).filter(([, value]) => typeof value === "function").map(([name]) => name);
    expect(exported.filter((name) => !notFactories.has(name)).sort()).toEqual(Object.keys(factories).sort());
  });

  it.each(Object.entries(factories))("%s answers a code of the contract's ErrorCode enum", (_name, make) => {
    const error = make();
    expect(error).toBeInstanceOf(ApiError);
    expect(errorCodes).toContain(error.code);
    expect(error.status).toBeGreaterThanOrEqual(400);
    expect(error.status).toBeLessThan(600);
  });

  it("fixes one status per code, except invalid_request's refusals of the exchange (408, 431)", () => {
    const statuses = new Map<string, Set<number>>();
    for (const make of Object.values(factories)) {
      const { code, status } = make();
      statuses.set(code, (statuses.get(code) ?? new Set()).add(status));
    }
    for (const [code, seen] of statuses) {
      if (code === "invalid_request") expect([...seen].sort()).toEqual([400, 408, 431]);
      else expect(seen.size, code).toBe(1);
    }
  });

  it("says when to retry a 429 and a 503 in the body and the headers", () => {
    const limited = catalogue.rateLimited("m", 7);
    expect(limited.details).toEqual({ retry_after: 7 });
    expect(limited.headers).toEqual({ "Retry-After": "7" });
    expect(catalogue.serviceUnavailable("m", 5).headers).toEqual({ "Retry-After": "5" });
  });

  it("maps provider failures to HTTP once, with per-call overrides", () => {
    const upstream = catalogue.providerFailure(new UpstreamError("The model provider failed", 500));
    expect(upstream).toMatchObject({ status: 502, code: "upstream_error", message: "The model provider failed" });
    const unavailable = catalogue.providerFailure(new ProviderUnavailableError("No image provider"));
    expect(unavailable).toMatchObject({ status: 503, code: "provider_unavailable", message: "No image provider" });
    const other = new Error("something else");
    expect(catalogue.providerFailure(other)).toBe(other);
    const overridden = catalogue.providerFailure(new UpstreamError("down"), { upstream: (failure) => catalogue.internalError(`later: ${failure.message}`) });
    expect(overridden).toMatchObject({ status: 500, code: "internal_error", message: "later: down" });
  });

  it("gives a stream's error event only codes of the contract's ChatStreamErrorCode enum", () => {
    for (const code of streamErrorCodes) {
      if (!errorCodes.includes(code)) continue;
      expect(catalogue.streamError(new ApiError(500, code as ApiError["code"], "m")).code).toBe(code);
    }
    expect(catalogue.streamError(catalogue.providerUnavailable("m"))).toEqual({ code: "internal_error", message: "m" });
    expect(streamErrorCodes).toContain("generation_lost");
  });
});

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

describe("errors are built from the catalogue only", () => {
  // All of server/, the live-event files of conversations and rooms included (converted in their own change).
  it("leaves no inline `new ApiError(` outside the catalogue", () => {
    const catalogueFile = join("server", "toolkit", "http", "error-catalogue.ts");
    const offenders = sources(join(root, "server"))
      .map((path) => relative(root, path))
      .filter((path) => path !== catalogueFile && readFileSync(join(root, path), "utf8").includes("new ApiError("));
    expect(offenders).toEqual([]);
  });

  it("keeps one summary of field errors and one home for provider errors", () => {
    const files = sources(join(root, "server")).map((path) => ({ path: relative(root, path), text: readFileSync(path, "utf8") }));
    expect(files.filter((file) => /function summarize\b|const summarize\b/.test(file.text)).map((file) => file.path)).toEqual([
      join("server", "toolkit", "http", "error-catalogue.ts"),
    ]);
    expect(files.filter((file) => /class (UpstreamError|ProviderUnavailableError)\b/.test(file.text)).map((file) => file.path)).toEqual([
      join("server", "toolkit", "providers", "errors.ts"),
    ]);
  });
});
