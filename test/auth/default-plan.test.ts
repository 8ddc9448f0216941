import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

// A self-hosted server without billing can start every new account on another plan (issue 13, item 6).
describe("DEFAULT_PLAN", () => {
  let service: TestService;

  beforeAll(async () => {
    service = await startTestService({ env: { DEFAULT_PLAN: "pro" } });
  });

  afterAll(async () => {
    await service?.close();
  });

  it("puts new accounts on that plan, and its limits apply", async () => {
    const user = await registerUser(service);
    const me = await (await service.fetch("/v1/auth/me", { headers: user.auth })).json();
    expect(me.plan).toBe("pro");
    for (let i = 0; i < 4; i++) {
      const created = await service.clientFor(user).POST("/v1/personas", { body: { name: `Pro ${i}`, instructions: "Be brief." } });
      expect(created.response.status).toBe(201);
    }
  });
});
