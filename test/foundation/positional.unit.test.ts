import knexOf from "knex";
import { describe, expect, it } from "vitest";
import { positional } from "../../server/toolkit/db/positional.ts";

// The chat path's statements skip knex (server/toolkit/db/positional.ts): their placeholders must be
// numbered exactly as knex's PostgreSQL dialect numbers them.
const knex = knexOf({ client: "pg" });

describe("positional placeholders", () => {
  it.each([
    "SELECT ?",
    "WITH a AS (INSERT INTO t (x, y) VALUES (?, ?), (?, ?)) SELECT 1, pg_notify(?, ?)",
    "SELECT ?::uuid[] = ANY(?::uuid[])",
    "SELECT '\\\\?' AS literal, ?",
    "SELECT 1",
  ])("numbers %s as knex does", (sql) => {
    const expected = (knex.client as { positionBindings(sql: string): string }).positionBindings(sql);
    expect(positional(sql)).toBe(expected);
  });
});
