import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { databaseKind } from "../support/service.ts";
import { call, freshStore, register, sleep, startPersona, type Proc, type Store } from "./support.ts";

// The embedded data dir killed (SIGKILL) in the middle of writes: after a restart on the same dir,
// everything the service acknowledged (2xx) is there. PGlite runs PostgreSQL with fsync off
// (`-F`), but its Node file system writes through to the OS on every commit, so a process crash
// loses nothing acknowledged; an OS crash or power loss may (docs/operations.md).

let store: Store;
const procs: Proc[] = [];

beforeAll(async () => {
  store = await freshStore();
});
afterAll(async () => {
  for (const proc of procs) await proc.kill9();
  await store?.drop();
});

describe.skipIf(databaseKind !== "embedded")("the embedded data dir killed during writes", () => {
  it("keeps every acknowledged write", { timeout: 180_000 }, async () => {
    const first = await startPersona(["serve"], store.env);
    procs.push(first);
    const user = await register(first.url);
    const persona = await call(first.url, user.auth, "POST", "/v1/personas", { name: "Ledger", instructions: "You keep records." });
    expect(persona.status).toBe(201);

    const acknowledged: string[] = [];
    let writing = true;
    const writers = Array.from({ length: 4 }, async () => {
      while (writing) {
        const created = await call(first.url, user.auth, "POST", "/v1/conversations", { persona_id: persona.body.id }).catch(() => undefined);
        if (created?.status === 201) acknowledged.push(created.body.id as string);
      }
    });
    while (acknowledged.length < 40) await sleep(20);
    await first.kill9();
    writing = false;
    await Promise.all(writers);

    const second = await startPersona(["serve"], store.env, { port: Number(new URL(first.url).port) });
    procs.push(second);
    const missing: string[] = [];
    for (const id of acknowledged) {
      const got = await call(second.url, user.auth, "GET", `/v1/conversations/${id}`);
      if (got.status !== 200) missing.push(`${id}: ${got.status}`);
    }
    expect(missing, `${missing.length} of ${acknowledged.length} acknowledged writes lost`).toEqual([]);
    // Still writable after the crash.
    const after = await call(second.url, user.auth, "POST", "/v1/conversations", { persona_id: persona.body.id });
    expect(after.status).toBe(201);
  });
});
