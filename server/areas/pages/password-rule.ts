import { readFileSync } from "node:fs";

/**
 * The password rule the API holds a new password to, read from the contract (`Password` in
 * spec/auth.tsp, compiled into generated/openapi.json) so that the reset page states and checks
 * exactly what `POST /v1/auth/reset-password` would: the page reports a weak password next to its
 * field instead of sending it to the service to be refused.
 */
interface PasswordSchema {
  minLength: number;
  maxLength: number;
  pattern: string;
  description: string;
}

const schema = (
  JSON.parse(readFileSync(new URL("../../../generated/openapi.json", import.meta.url), "utf8")) as { components: { schemas: { Password: PasswordSchema } } }
).components.schemas.Password;

const pattern = new RegExp(schema.pattern, "u");

/** The rule as a person reads it: "8 to 128 characters with at least one digit and one uppercase letter." */
export const PASSWORD_RULE_TEXT = schema.description.replace(/^A new account password: /, "").replace(/^./, (first) => first.toUpperCase());

export const PASSWORD_MAX_LENGTH = schema.maxLength;
export const PASSWORD_MIN_LENGTH = schema.minLength;

/** Why the password breaks the rule, as a sentence, or undefined when it keeps it. */
export function passwordProblem(password: string): string | undefined {
  const length = [...password].length;
  if (length < schema.minLength) return `Use at least ${schema.minLength} characters (this one has ${length}).`;
  if (length > schema.maxLength) return `Use at most ${schema.maxLength} characters.`;
  if (!pattern.test(password)) return `Too weak: the password needs ${PASSWORD_RULE_TEXT.replace(/^\d+ to \d+ characters with /, "").replace(/\.$/, "")}.`;
  return undefined;
}
