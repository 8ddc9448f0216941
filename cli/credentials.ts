import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * The stored login: one JSON file in the user's config directory, readable by the user only
 * (file 0600, directory 0700), since it holds a refresh token or an API key.
 */
export type StoredAuth =
  | { type: "session"; access_token: string; refresh_token: string }
  | { type: "api_key"; api_key: string };

export interface StoredLogin {
  version: 1;
  base_url: string;
  auth: StoredAuth;
  user: { id: string; email: string; username: string } | null;
  updated_at: string;
}

export const CREDENTIALS_FILE = "credentials.json";

export function credentialsPath(configDir: string): string {
  return join(configDir, CREDENTIALS_FILE);
}

function isStoredLogin(value: unknown): value is StoredLogin {
  const v = value as Partial<StoredLogin> | null;
  if (!v || v.version !== 1 || typeof v.base_url !== "string" || !v.auth) return false;
  if (v.auth.type === "session") return typeof v.auth.access_token === "string" && typeof v.auth.refresh_token === "string";
  return v.auth.type === "api_key" && typeof v.auth.api_key === "string";
}

/** The stored login, or undefined when there is none (a damaged file counts as none, with a warning). */
export async function loadLogin(configDir: string): Promise<StoredLogin | undefined> {
  let text: string;
  try {
    text = await readFile(credentialsPath(configDir), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (isStoredLogin(parsed)) return parsed;
  } catch {
    // fall through: treated like a missing login
  }
  process.stderr.write(`persona: ignoring unreadable ${credentialsPath(configDir)}; run \`persona login\` again\n`);
  return undefined;
}

/**
 * Writes the login atomically: a temp file created with mode 0600 (never briefly world-readable),
 * then renamed over the old one, so a crash or a concurrent reader never sees half a file.
 */
export async function saveLogin(configDir: string, login: Omit<StoredLogin, "version" | "updated_at">): Promise<StoredLogin> {
  const stored: StoredLogin = { version: 1, ...login, updated_at: new Date().toISOString() };
  await mkdir(configDir, { recursive: true, mode: 0o700 });
  // mkdir leaves an existing directory's mode alone; ours must not be readable by others.
  await chmod(configDir, 0o700);
  const target = credentialsPath(configDir);
  const temp = `${target}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(temp, `${JSON.stringify(stored, null, 2)}\n`, { mode: 0o600, flag: "wx" });
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  return stored;
}

/** Removes the stored login; answers whether there was one. */
export async function removeLogin(configDir: string): Promise<boolean> {
  try {
    await rm(credentialsPath(configDir));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw error;
  }
}
