import { InvalidArgumentError } from "commander";

/**
 * Option parsers for commander: a bad value becomes commander's own "invalid argument" error,
 * which exits with the usage code like any other mistake on the command line.
 */
export function positiveInt(raw: string): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) throw new InvalidArgumentError("must be a whole number of at least 1");
  return value;
}

export function nonNegativeInt(raw: string): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new InvalidArgumentError("must be a whole number of at least 0");
  return value;
}

export function booleanValue(raw: string): boolean {
  if (/^(true|yes|1)$/i.test(raw)) return true;
  if (/^(false|no|0)$/i.test(raw)) return false;
  throw new InvalidArgumentError("must be true or false");
}

/** Collects a repeatable option into a list (`--scope a --scope b`), also splitting on commas. */
export function collect(raw: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), ...raw.split(",").map((s) => s.trim()).filter(Boolean)];
}
