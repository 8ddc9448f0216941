import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createConversation, createPersona } from "../support/chat.ts";
import { startTestService, testDatabaseUrl, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

// DATABASE_PREPARED_STATEMENTS=false (set by DATABASE_POOLER=transaction): behind PgBouncer before
// 1.21 a named statement prepared in one transaction is unknown to the server connection of the
// next, so none may leave the process, whoever names it (the chat path's prepared statements,
// a library). The same send on a service with them on names some: the check sees names.

/** The names of the statements every pg client of this process sends while `watch` runs. */
function watchNames(): { names: string[]; stop: () => void } {
  const names: string[] = [];
  const original = pg.Client.prototype.query;
  pg.Client.prototype.query = function named(this: pg.Client, ...args: unknown[]) {
    const first = args[0] as { name?: unknown } | undefined;
    if (typeof first === "object" && first !== null && typeof first.name === "string") names.push(first.name);
    return (original as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof original;
  return { names, stop: () => void (pg.Client.prototype.query = original) };
}

async function namesOfASend(service: TestService): Promise<string[]> {
  const user = await registerUser(service);
  const persona = await createPersona(service, user);
  const conversation = await createConversation(service, user, persona.id, "unnamed");
  const watch = watchNames();
  try {
    const sent = await service.clientFor(user).POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content: "Hello" } });
    expect(sent.response.status).toBe(201);
    return watch.names;
  } finally {
    watch.stop();
  }
}

describe.runIf(testDatabaseUrl)("prepared statements switched off", () => {
  let off: TestService;
  let on: TestService;
  beforeAll(async () => {
    off = await startTestService({ env: { DATABASE_PREPARED_STATEMENTS: "false" }, fresh: true });
    on = await startTestService({ fresh: true });
  });
  afterAll(async () => {
    await off?.close();
    await on?.close();
  });

  it("sends no named statement, where the same send with them on names its statements", async () => {
    expect(await namesOfASend(off)).toEqual([]);
    expect((await namesOfASend(on)).length).toBeGreaterThan(0);
  });
});
