import { randomBytes } from "node:crypto";
import { chmod, mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { DEFAULT_PROFILE } from "./settings.ts";

/**
 * The stored logins: one JSON file in the user's config directory, readable by the user only (file
 * 0600, directory 0700), since it holds refresh tokens and API keys. Logins are kept by profile and,
 * within a profile, by server (normalized base URL), as `gh` keeps one login per host and the Stripe
 * CLI one set of keys per profile: logging in to a second server keeps the first, and a second
 * profile holds another account on the same server. Each profile also remembers the server it last
 * logged in to, the one its commands talk to when neither --base-url nor PERSONA_BASE_URL says.
 */
export type StoredAuth =
  | { type: "session"; access_token: string; refresh_token: string }
  | { type: "api_key"; api_key: string };

export type StoredUser = { id: string; email: string; username: string };

/** One login: a profile's credentials for one server. */
export interface StoredLogin {
  base_url: string;
  auth: StoredAuth;
  user: StoredUser | null;
  updated_at: string;
}

interface StoredProfile {
  /** The server this profile's commands talk to by default: the one it last logged in to. */
  server: string;
  logins: Record<string, Omit<StoredLogin, "base_url">>;
}

export interface Credentials {
  version: 2;
  profiles: Record<string, StoredProfile>;
}

/** The file before logins were kept per server: one login, for one server. */
interface CredentialsV1 {
  version: 1;
  base_url: string;
  auth: StoredAuth;
  user: StoredUser | null;
  updated_at: string;
}

export const CREDENTIALS_FILE = "credentials.json";

export function credentialsPath(configDir: string): string {
  return join(configDir, CREDENTIALS_FILE);
}

const isAuth = (auth: Partial<StoredAuth> | undefined): auth is StoredAuth =>
  auth?.type === "session"
    ? typeof auth.access_token === "string" && typeof auth.refresh_token === "string"
    : auth?.type === "api_key" && typeof auth.api_key === "string";

function isCredentials(value: unknown): value is Credentials {
  const v = value as Partial<Credentials> | null;
  if (!v || v.version !== 2 || typeof v.profiles !== "object" || v.profiles === null) return false;
  return Object.values(v.profiles).every(
    (profile) =>
      typeof profile?.server === "string" &&
      typeof profile.logins === "object" &&
      profile.logins !== null &&
      Object.values(profile.logins).every((login) => isAuth(login?.auth)),
  );
}

function isCredentialsV1(value: unknown): value is CredentialsV1 {
  const v = value as Partial<CredentialsV1> | null;
  return Boolean(v && v.version === 1 && typeof v.base_url === "string" && isAuth(v.auth));
}

/** An old single-login file becomes the default profile's login for its server; written in the new form on the next change. */
function fromV1(old: CredentialsV1): Credentials {
  const { base_url, auth, user, updated_at } = old;
  return { version: 2, profiles: { [DEFAULT_PROFILE]: { server: base_url, logins: { [base_url]: { auth, user: user ?? null, updated_at } } } } };
}

const empty = (): Credentials => ({ version: 2, profiles: {} });

/** Every stored login (none when there is no file; a damaged file counts as none, with a warning). */
export async function loadCredentials(configDir: string): Promise<Credentials> {
  let text: string;
  try {
    text = await readFile(credentialsPath(configDir), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return empty();
    throw error;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (isCredentials(parsed)) return parsed;
    if (isCredentialsV1(parsed)) return fromV1(parsed);
  } catch {
    // fall through: treated like a missing file
  }
  process.stderr.write(`persona: ignoring unreadable ${credentialsPath(configDir)}; run \`persona login\` again\n`);
  return empty();
}

/** The server `profile` talks to by default, if it has logged in anywhere. */
export function profileServer(credentials: Credentials, profile: string): string | undefined {
  return credentials.profiles[profile]?.server;
}

/** `profile`'s login for the server at `baseUrl` (normalized), if any. */
export function findLogin(credentials: Credentials, profile: string, baseUrl: string): StoredLogin | undefined {
  const login = credentials.profiles[profile]?.logins[baseUrl];
  return login && { base_url: baseUrl, ...login };
}

/** Every login, profile by profile, each with whether it is its profile's default server. */
export function listLogins(credentials: Credentials): (StoredLogin & { profile: string; default: boolean })[] {
  return Object.entries(credentials.profiles).flatMap(([profile, { server, logins }]) =>
    Object.entries(logins).map(([base_url, login]) => ({ profile, base_url, ...login, default: base_url === server })),
  );
}

/**
 * Changes the file by `change`, reading it again first: two commands running at once (a token
 * refresh for one server, a login to another) each keep the other's change unless they write in
 * the same instant. An emptied file is removed.
 */
async function update(configDir: string, change: (credentials: Credentials) => void): Promise<Credentials> {
  const credentials = await loadCredentials(configDir);
  change(credentials);
  for (const [name, profile] of Object.entries(credentials.profiles)) if (Object.keys(profile.logins).length === 0) delete credentials.profiles[name];
  if (Object.keys(credentials.profiles).length === 0) await rm(credentialsPath(configDir), { force: true });
  else await writeAtomically(configDir, credentials);
  return credentials;
}

/** Stores `login` as `profile`'s login for its server, which becomes the profile's default server. */
export async function saveLogin(configDir: string, profile: string, login: Omit<StoredLogin, "updated_at">): Promise<StoredLogin> {
  const { base_url, ...rest } = login;
  const stored = { ...rest, updated_at: new Date().toISOString() };
  await update(configDir, (credentials) => {
    const entry = (credentials.profiles[profile] ??= { server: base_url, logins: {} });
    entry.logins[base_url] = stored;
    entry.server = base_url;
  });
  return { base_url, ...stored };
}

/**
 * Keeps a refreshed token pair: refresh tokens are single-use, so the new pair must be on disk
 * before the next command runs. A login removed meanwhile (a logout) stays removed.
 */
export async function saveTokens(configDir: string, profile: string, baseUrl: string, auth: StoredAuth): Promise<void> {
  await update(configDir, (credentials) => {
    const login = credentials.profiles[profile]?.logins[baseUrl];
    if (login) Object.assign(login, { auth, updated_at: new Date().toISOString() });
  });
}

/**
 * Removes `profile`'s login for `baseUrl` (every login of the profile when `baseUrl` is undefined);
 * answers the servers logged out of. A profile whose default server was logged out of falls back to
 * the one of its other logins it used last.
 */
export async function removeLogin(configDir: string, profile: string, baseUrl: string | undefined): Promise<string[]> {
  let removed: string[] = [];
  await update(configDir, (credentials) => {
    const entry = credentials.profiles[profile];
    if (!entry) return;
    removed = baseUrl === undefined ? Object.keys(entry.logins) : baseUrl in entry.logins ? [baseUrl] : [];
    for (const server of removed) delete entry.logins[server];
    if (!(entry.server in entry.logins)) {
      const latest = Object.entries(entry.logins).sort(([, a], [, b]) => b.updated_at.localeCompare(a.updated_at))[0];
      if (latest) entry.server = latest[0];
    }
  });
  return removed;
}

/**
 * Writes the file atomically: a temp file created with mode 0600 (never briefly world-readable),
 * then renamed over the old one, so a crash or a concurrent reader never sees half a file.
 */
async function writeAtomically(configDir: string, credentials: Credentials): Promise<void> {
  await mkdir(configDir, { recursive: true, mode: 0o700 });
  // mkdir leaves an existing directory's mode alone; ours must not be readable by others.
  await chmod(configDir, 0o700);
  const target = credentialsPath(configDir);
  const temp = `${target}.${randomBytes(6).toString("hex")}.tmp`;
  try {
    await writeFile(temp, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600, flag: "wx" });
    await rename(temp, target);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}
