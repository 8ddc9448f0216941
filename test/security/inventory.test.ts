import { describe, expect, it } from "vitest";
import { createApp } from "../../server/app.ts";
import { handlers } from "../../server/areas.ts";
import { operations } from "../fuzz/contract.ts";
import { send } from "../fuzz/send.ts";
import { useTestService } from "../support/fixtures.ts";

// API9 Improper Inventory Management (issue 23 item 2): every route the server answers is in the
// contract. The handler map is the contract's operations exactly; the Express app's router stack
// holds no route outside the contract and nothing that serves files; and methods and paths the
// contract does not have are 404 in the envelope. (test/contract/operations.unit.test.ts holds the
// contract against the specification's endpoint list and the documented extensions.)
const fixture = useTestService();

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"];
const templateOf = (expressPath: string) => expressPath.replace(/:(\w+)/g, "{$1}");

interface Layer {
  name?: string;
  route?: { path: string; methods: Record<string, boolean> };
}

describe("API9: inventory", () => {
  it("has a handler for every operation of the contract and for nothing else", () => {
    const contract = operations.map((op) => op.operationId).sort();
    expect(Object.keys(handlers).sort()).toEqual(contract);
  });

  it("registers no Express route outside the contract, and no file-serving middleware", async () => {
    const app = await createApp(fixture.service.services);
    const stack = (app as unknown as { router: { stack: Layer[] } }).router.stack;
    const declared = new Set(operations.map((op) => `${op.method} ${op.path}`));
    const routes = stack.filter((layer) => layer.route).flatMap((layer) => Object.keys(layer.route!.methods).map((method) => `${method.toUpperCase()} ${templateOf(layer.route!.path)}`));
    expect(routes.filter((route) => !declared.has(route) && !route.startsWith("_ALL"))).toEqual([]);
    // With one route per operation (the compiled validators), every operation has its route.
    if (routes.length) expect([...declared].filter((op) => !routes.includes(op))).toEqual([]);
    expect(stack.map((layer) => layer.name).filter((name) => /static|serveIndex|directory/i.test(name ?? ""))).toEqual([]);
  });

  it("answers 404 in the envelope for every method a contract path does not have", async () => {
    const { service, alice } = fixture;
    const byPath = new Map<string, string[]>();
    for (const op of operations) byPath.set(op.path, [...(byPath.get(op.path) ?? []), op.method]);
    const wrong: string[] = [];
    for (const [template, methods] of byPath) {
      const path = template.replace(/\{[^}]+\}/g, "0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01");
      for (const method of METHODS.filter((m) => !methods.includes(m))) {
        const response = await service.fetch(path, { method, headers: { ...alice.auth, "content-type": "application/json" }, body: method === "GET" ? undefined : "{}" });
        const body = await response.text();
        if (response.status !== 404 || !body.includes('"not_found"')) wrong.push(`${method} ${template} -> ${response.status} ${body.slice(0, 120)}`);
      }
    }
    expect(wrong).toEqual([]);
  }, 120_000);

  it("answers 404 in the envelope for paths outside the contract: admin, debug, files, other versions", async () => {
    const { service, alice } = fixture;
    // Paths the contract has (the documentation routes `/`, `/docs`, `/openapi.json`...) are left out.
    const served = operations.map((op) => new RegExp(`^${op.path.replace(/\{[^}]+\}/g, "[^/]+")}$`));
    const paths = ["/", "/v1", "/v1/", "/v2/personas", "/v1/admin", "/v1/users", "/admin", "/debug", "/metrics", "/.env", "/.git/config", "/server/config.ts", "/package.json", "/generated/openapi.yaml", "/openapi.json", "/docs", "/v1/personas/../../package.json", "/%2e%2e/package.json", "/v1/personas/explore/extra", "/healthz/extra"].filter(
      (path) => !served.some((pattern) => pattern.test(path)),
    );
    const wrong: string[] = [];
    for (const path of paths) {
      for (const method of ["GET", "OPTIONS", "TRACE"]) {
        const answer = await send(service.url, { method, path, headers: alice.auth, body: undefined, note: "" });
        if (answer.status !== 404 || !answer.text.includes('"not_found"')) wrong.push(`${method} ${path} -> ${answer.status} ${answer.text.slice(0, 120)}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("answers OPTIONS and TRACE on a contract path with 404, not an Allow list or an echo", async () => {
    const { service, alice } = fixture;
    for (const method of ["OPTIONS", "TRACE"]) {
      const answer = await send(service.url, { method, path: "/v1/personas", headers: { ...alice.auth, origin: "https://evil.example" }, body: undefined, note: "" });
      expect(answer.headers.get("allow")).toBeNull();
      expect(`${answer.status} ${answer.text}`).toMatch(/^404 .*"not_found"/);
    }
  });
});
