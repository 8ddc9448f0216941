import type { Command } from "commander";
import { createClient, type PersonaClient } from "../sdk/src/index.ts";
import { loadLogin, saveLogin, type StoredLogin } from "./credentials.ts";
import { notLoggedIn, usageError } from "./errors.ts";
import { createOutput, type Output } from "./output.ts";
import { DEFAULT_BASE_URL, normalizeBaseUrl, readCliEnv, type CliEnv } from "./settings.ts";

/** The options every command accepts (declared once on the program). */
export interface GlobalOptions {
  baseUrl?: string;
  apiKey?: string;
  json?: boolean;
}

/** What a command needs to run: where the server is, how to print, and credentials on demand. */
export interface Context {
  out: Output;
  env: CliEnv;
  baseUrl: string;
  /** The stored login, whatever server it is for. */
  login: StoredLogin | undefined;
  /** A client with the caller's credentials; throws "not logged in" (exit 3) when there are none. */
  client: () => PersonaClient;
  /** A client without credentials (login and register). */
  anonymousClient: () => PersonaClient;
  /** The caller's client when there are credentials, else an anonymous one (credential-free operations). */
  clientIfAny: () => PersonaClient;
}

/**
 * Base URL: --base-url, else PERSONA_BASE_URL, else the stored login's, else the local default.
 * Credentials: --api-key, else PERSONA_API_KEY, else the stored login, but only when it was made
 * against this same base URL: tokens for one server are never sent to another.
 */
export async function contextOf(command: Command): Promise<Context> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const env = readCliEnv();
  const out = createOutput(Boolean(options.json));
  const login = await loadLogin(env.configDir);
  let baseUrl: string;
  try {
    baseUrl = normalizeBaseUrl(options.baseUrl ?? env.baseUrl ?? login?.base_url ?? DEFAULT_BASE_URL);
  } catch (error) {
    throw usageError((error as Error).message);
  }
  const apiKey = options.apiKey ?? env.apiKey;
  const stored = login && login.base_url === baseUrl ? login : undefined;

  const client = (): PersonaClient => {
    if (apiKey) return createClient({ baseUrl, apiKey });
    if (!stored) throw notLoggedIn(baseUrl);
    if (stored.auth.type === "api_key") return createClient({ baseUrl, apiKey: stored.auth.api_key });
    return createClient({
      baseUrl,
      accessToken: stored.auth.access_token,
      refreshToken: stored.auth.refresh_token,
      // Refresh tokens are single-use: the new pair must be on disk before the next command runs.
      onTokens: (tokens) =>
        saveLogin(env.configDir, { ...stored, auth: { type: "session", access_token: tokens.accessToken, refresh_token: tokens.refreshToken } }).then(
          () => undefined,
        ),
    });
  };
  const anonymousClient = () => createClient({ baseUrl });
  const clientIfAny = () => (apiKey || stored ? client() : anonymousClient());
  return { out, env, baseUrl, login, client, anonymousClient, clientIfAny };
}
