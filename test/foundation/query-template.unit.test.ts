import knexFactory from "knex";
import { describe, expect, it } from "vitest";
import { queryTemplate } from "../../server/toolkit/db/query-template.ts";

// A knex of the PostgreSQL dialect that never connects: compiling needs none.
const knex = knexFactory({ client: "pg" });

describe("queryTemplate", () => {
  const rule = queryTemplate(["viewer", "handle"], (k, slot) =>
    k("personas as p").where("p.handle", slot.handle).andWhere((q) => q.where("p.creator_id", slot.viewer).orWhere("p.is_public", true)).select("p.id"));

  it("compiles the builder's text once and fills each call's values where the slots were, keeping the rule's constants", () => {
    const a = rule(knex, { viewer: "u1", handle: "h1" });
    const b = rule(knex, { viewer: "u2", handle: "h2" });
    expect(a.sql).toBe(b.sql);
    expect(a.sql).toBe(knex("personas as p").where("p.handle", "x").andWhere((q) => q.where("p.creator_id", "y").orWhere("p.is_public", true)).select("p.id").toSQL().sql);
    expect(a.bindings).toEqual(["h1", "u1", true]);
    expect(b.bindings).toEqual(["h2", "u2", true]);
  });

  it("refuses a builder that does not bind a slot as it was given (it would become a constant)", () => {
    const lowered = queryTemplate(["name"], (k, slot) => k("users").where("username", slot.name.toUpperCase()));
    expect(() => lowered(knex, { name: "Ann" })).toThrow(/slot "name"/);
  });
});
