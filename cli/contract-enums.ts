import { readFileSync } from "node:fs";
import { Option } from "commander";
import type { Schemas } from "../sdk/src/index.ts";
import { contractFile } from "./api/contract.ts";

// The values a command accepts for a contract enum (plans, voices, categories, sort orders…) are
// read from the contract at run time, as `persona api` reads its operations: a value added in
// spec/ reaches every option without an edit here.

/** The contract's named schemas that are enums of strings. */
export type EnumName = { [N in keyof Schemas]: Schemas[N] extends string ? (string extends Schemas[N] ? never : N) : never }[keyof Schemas];

let schemas: Record<string, { enum?: unknown[] } | undefined> | undefined;

/** The values of the contract's enum `name`, in the contract's order. */
export function contractEnum<N extends EnumName>(name: N): Schemas[N][] {
  schemas ??= (JSON.parse(readFileSync(contractFile, "utf8")) as { components: { schemas: typeof schemas } }).components.schemas;
  const values = schemas?.[name]?.enum;
  if (!values?.every((value) => typeof value === "string")) throw new Error(`generated/openapi.json has no enum ${name}`);
  return values as Schemas[N][];
}

// Which enum each option's choices came from, so that a test can hold every option to its enum.
const sources = new WeakMap<Option, EnumName>();

/** An option whose value must be one of the contract's enum `name`. */
export function enumOption(flags: string, description: string, name: EnumName): Option {
  const option = new Option(flags, description).choices(contractEnum(name));
  sources.set(option, name);
  return option;
}

/** The contract enum an option's choices were taken from, if it was built by `enumOption`. */
export function enumOfOption(option: Option): EnumName | undefined {
  return sources.get(option);
}
