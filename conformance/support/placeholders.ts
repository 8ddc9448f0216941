// When a resource a call needs could not be made (its area is not live yet), the call still goes
// out with a placeholder id, so that its own area is judged: 501 while not live, else some declared
// status. The client recognises placeholders and does not insist on the success status then.
const MARK = "c0ffee00";

/** A syntactically valid UUID that no server will have issued. */
export const PLACEHOLDER_ID = `0193a6c4-0000-7000-8000-${MARK}0000`;

export function isPlaceholder(value: unknown): boolean {
  return JSON.stringify(value ?? null).includes(MARK);
}

export function idOr(id: string | undefined): string {
  return id ?? PLACEHOLDER_ID;
}
