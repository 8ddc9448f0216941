import { hash, verify, type Algorithm } from "@node-rs/argon2";

// OWASP's argon2id parameters (DECISIONS: m=19 MiB, t=2, p=1).
// `algorithm: 2` is Algorithm.Argon2id (a const enum, which type stripping cannot inline).
const OPTIONS = { algorithm: 2 as Algorithm, memoryCost: 19456, timeCost: 2, parallelism: 1 };

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

// A real hash to verify against when the account does not exist, so that a login for an unknown
// e-mail costs the same time as one with a wrong password.
let decoy: Promise<string> | undefined;

export async function verifyPassword(passwordHash: string | undefined, password: string): Promise<boolean> {
  if (!passwordHash) {
    await verify(await (decoy ??= hashPassword("decoy-password-0")), password).catch(() => false);
    return false;
  }
  return verify(passwordHash, password).catch(() => false);
}
