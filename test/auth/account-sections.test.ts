import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AccountDataSection } from "../../server/toolkit/account-data.ts";
import { accountDataSections } from "../../server/areas.ts";
import { purgeAccounts } from "../../server/areas/auth/account/jobs.ts";
import { tablesOfSchema, userOwnedTables } from "../../server/toolkit/db/rows.ts";
import { archiveOf } from "../support/account-data.ts";
import { expectOk } from "../support/assertions.ts";
import { contract } from "../support/contract.ts";
import { databaseKind, startTestService, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";

// Every area answers for its tables in the data export and the account purge. The list of tables
// that belong to users comes from the catalog, so an area that adds one and forgets to register a
// section fails here, not in a user's incomplete archive.
let service: TestService;
beforeAll(async () => {
  service = await startTestService({ env: { WEBHOOKS_ALLOW_PRIVATE_URLS: "true" } });
});
afterAll(async () => {
  await service?.close();
});

const claimed = (sections: readonly AccountDataSection[]) => sections.flatMap((section) => [...section.tables]);

describe(`account data sections (${databaseKind})`, () => {
  it("claim every user-owned table of the catalog, each exactly once", async () => {
    const owned = await userOwnedTables(service.services.db.knex);
    expect(owned).toContain("messages"); // through conversations: the catalog walk goes deep
    const tables = claimed(accountDataSections);
    expect(owned.filter((table) => !tables.includes(table))).toEqual([]);
    expect(tables.filter((table, index) => tables.indexOf(table) !== index)).toEqual([]);
  });

  it("claim only tables that exist", async () => {
    const existing = await tablesOfSchema(service.services.db.knex);
    expect(claimed(accountDataSections).filter((table) => !existing.includes(table))).toEqual([]);
  });

  it("either export their rows or say why they are withheld, under distinct keys", () => {
    for (const section of accountDataSections) expect([section.key, Boolean(section.exportRows)]).toEqual([section.key, !section.withheld]);
    const keys = accountDataSections.map((section) => section.key);
    expect(keys.filter((key, index) => keys.indexOf(key) !== index)).toEqual([]);
  });

  it("fill every key the contract's archive requires", () => {
    const schema = (contract as unknown as { components: { schemas: Record<string, { required: string[] }> } }).components.schemas.DataExportArchive!;
    const exported = new Set(["format_version", "exported_at", "user", ...accountDataSections.filter((s) => s.exportRows).map((s) => s.key)]);
    expect(schema.required.filter((key) => !exported.has(key))).toEqual([]);
  });

  it("would catch a new user-owned table that no section claims", async () => {
    const { knex } = service.services.db;
    const rollback = new Error("rollback");
    const unclaimed = await knex
      .transaction(async (trx) => {
        await trx.raw("CREATE TABLE scratch_notes (id uuid PRIMARY KEY, user_id uuid NOT NULL REFERENCES users(id) ON DELETE CASCADE)");
        await trx.raw("CREATE TABLE scratch_note_tags (note_id uuid NOT NULL REFERENCES scratch_notes(id) ON DELETE CASCADE)");
        const owned = await userOwnedTables(trx);
        throw Object.assign(rollback, { owned: owned.filter((table) => !claimed(accountDataSections).includes(table)) });
      })
      .catch((error: Error & { owned?: string[] }) => {
        if (error !== rollback) throw error;
        return error.owned;
      });
    expect(unclaimed).toEqual(["scratch_note_tags", "scratch_notes"]);
  });

  it("export the user's own rows of every area and no one else's, without secrets", async () => {
    const alice = await registerUser(service);
    const bob = await registerUser(service);
    const asAlice = service.clientFor(alice);
    const asBob = service.clientFor(bob);
    const persona = await expectOk(asAlice.POST("/v1/personas", { body: { name: "Nova", instructions: "You are Nova, a patient astronomy guide." } }), 201);
    const theirs = await expectOk(asBob.POST("/v1/personas", { body: { name: "Bob's secret persona", instructions: "Secret instructions of Bob." } }), 201);
    const conversation = await expectOk(asAlice.POST("/v1/conversations", { body: { persona_id: persona.id } }), 201);
    await expectOk(asAlice.POST("/v1/conversations/{id}/messages", { params: { path: { id: conversation.id } }, body: { content: "Which star is closest?" } }), 201);
    await expectOk(asBob.POST("/v1/conversations", { body: { persona_id: theirs.id } }), 201);
    await expectOk(asAlice.POST("/v1/webhooks", { body: { url: "http://127.0.0.1:9/persona", events: ["message.created"] } }), 201);
    await expectOk(asAlice.POST("/v1/social/follow/{user_id}", { params: { path: { user_id: bob.id } } }));
    await expectOk(asAlice.POST("/v1/auth/api-keys", { body: { name: "laptop", scopes: ["personas:read"] } }), 201);

    const archive = (await archiveOf(service.services, alice.id)) as unknown as Record<string, Record<string, unknown>[]>;
    expect(archive.personas!.map((row) => row.id)).toEqual([persona.id]);
    expect(archive.instruction_versions!.map((row) => row.persona_id)).toEqual([persona.id]);
    expect(archive.conversations!.map((row) => row.id)).toEqual([conversation.id]);
    expect((archive.conversations![0]!.messages as { role: string }[]).map((row) => row.role)).toEqual(expect.arrayContaining(["user", "assistant"]));
    expect(archive.webhooks).toEqual([expect.objectContaining({ url: "http://127.0.0.1:9/persona" })]);
    expect(archive.follows).toEqual([expect.objectContaining({ follower_id: alice.id, following_id: bob.id })]);
    expect(archive.api_keys).toEqual([expect.objectContaining({ name: "laptop" })]);
    const text = JSON.stringify(archive);
    for (const leaked of ["Bob's secret persona", "Secret instructions of Bob", theirs.id]) expect(text).not.toContain(leaked);
    for (const column of ["secret_encrypted", "key_hash", "password_hash", "token_hash", "search"]) expect(text).not.toContain(`"${column}"`);
  });

  it("purge after every section cleaned up, even when one fails", async () => {
    const { knex } = service.services.db;
    const carol = await registerUser(service);
    await knex("users").where({ id: carol.id }).update({ deleted_at: new Date(Date.now() - 31 * 24 * 60 * 60 * 1000) });
    const seen: string[][] = [];
    const sections: AccountDataSection[] = [
      { key: "failing", tables: [], withheld: "test", beforePurge: async () => Promise.reject(new Error("provider down")) },
      { key: "recording", tables: [], withheld: "test", beforePurge: async (_services, ids) => void seen.push([...ids]) },
    ];
    const result = await purgeAccounts(service.services, sections);
    expect(seen).toEqual([[carol.id]]);
    expect(result.users).toBe(1);
    expect(await knex("users").where({ id: carol.id })).toEqual([]);
  });
});
