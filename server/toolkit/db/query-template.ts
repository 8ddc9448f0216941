import { randomUUID } from "node:crypto";
import type { Knex } from "knex";

/** SQL with knex's `?` placeholders and their values in order: a piece another statement embeds. */
export interface SqlFragment {
  sql: string;
  bindings: readonly Knex.Value[];
}

/**
 * A knex query compiled once and filled with each call's values: for queries on the hot path whose
 * shape never changes but whose values do (issue 37: compiling the persona rule's builder into the
 * chat turn cost a tenth of a millisecond or more on every send). `build` gets a slot per name, a
 * unique marker string to use where the value goes; the compiled bindings that are a slot take the
 * call's value, the others (constants of the rule) stay as compiled. The text is the same for every
 * knex instance of the PostgreSQL dialect, so the template is compiled once per process.
 */
export function queryTemplate<Name extends string>(
  names: readonly Name[],
  build: (knex: Knex, slot: Readonly<Record<Name, string>>) => Knex.QueryBuilder,
): (knex: Knex, values: Readonly<Record<Name, Knex.Value>>) => SqlFragment {
  let compiled: { sql: string; slots: (Name | undefined)[]; constants: Knex.Value[] } | undefined;
  return (knex, values) => {
    if (compiled === undefined) {
      const marker = randomUUID();
      const slot = Object.fromEntries(names.map((name) => [name, `slot:${name}:${marker}`])) as Record<Name, string>;
      const bySlot = new Map<unknown, Name>(names.map((name) => [slot[name], name]));
      const { sql, bindings } = build(knex, slot).toSQL();
      const slots = bindings.map((binding) => bySlot.get(binding));
      // A slot the builder transformed (or dropped) would silently become a constant of the rule.
      for (const name of names) if (!slots.includes(name)) throw new Error(`queryTemplate: slot "${name}" is not among the compiled bindings`);
      compiled = { sql, slots, constants: [...bindings] as Knex.Value[] };
    }
    const { sql, slots, constants } = compiled;
    return { sql, bindings: slots.map((name, i) => (name === undefined ? constants[i]! : values[name])) };
  };
}
