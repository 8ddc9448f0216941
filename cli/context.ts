import type { Command } from "commander";
import { createClient, type PersonaClient } from "../sdk/src/index.ts";
import { findLogin, loadCredentials, profileServer, saveTokens } from "./credentials.ts";
import { notLoggedIn, usageError } from "./errors.ts";
import { createOutput, type Output } from "./output.ts";
import { checkProfileName, DEFAULT_BASE_URL, DEFAULT_PROFILE, normalizeBaseUrl, readCliEnv, type CliEnv } from "./settings.ts";

/** The options every command accepts (declared once on the program). */
export interface GlobalOptions {
  baseUrl?: string;
  apiKey?: string;
  profile?: string;
  json?: boolean;
}

/** What a command needs to run: where the server is, how to print, and credentials on demand. */
export interface Context {
  out: Output;
  env: CliEnv;
  baseUrl: string;
  /** The stored profile the command uses (its logins, its default server). */
  profile: string;
  /** A client with the caller's credentials; throws "not logged in" (exit 3) when there are none. */
  client: () => PersonaClient;
  /** A client without credentials (login and register). */
  anonymousClient: () => PersonaClient;
  /** The caller's client when there are credentials, else an anonymous one (credential-free operations). */
  clientIfAny: () => PersonaClient;
}

/**
 * Profile: --profile, else PERSONA_PROFILE, else "default".
 * Base URL: --base-url, else PERSONA_BASE_URL, else the server the profile last logged in to, else
 * the local default.
 * Credentials: --api-key, else PERSONA_API_KEY, else the profile's stored login for that base URL:
 * logins are kept per server, and tokens for one server are never sent to another.
 */
export async function contextOf(command: Command): Promise<Context> {
  const options = command.optsWithGlobals<GlobalOptions>();
  const env = readCliEnv();
  const out = createOutput(Boolean(options.json));
  let profile: string;
  let baseUrl: string;
  const credentials = await loadCredentials(env.configDir);
  try {
    profile = checkProfileName(options.profile ?? env.profile ?? DEFAULT_PROFILE);
    baseUrl = normalizeBaseUrl(options.baseUrl ?? env.baseUrl ?? profileServer(credentials, profile) ?? DEFAULT_BASE_URL);
  } catch (error) {
    throw usageError((error as Error).message);
  }
  const apiKey = options.apiKey ?? env.apiKey;
  const stored = findLogin(credentials, profile, baseUrl);

  const client = (): PersonaClient => {
    if (apiKey) return createClient({ baseUrl, apiKey });
    if (!stored) throw notLoggedIn(baseUrl, profile);
    if (stored.auth.type === "api_key") return createClient({ baseUrl, apiKey: stored.auth.api_key });
    return createClient({
      baseUrl,
      accessToken: stored.auth.access_token,
      refreshToken: stored.auth.refresh_token,
      // Refresh tokens are single-use: the new pair must be on disk before the next command runs.
      onTokens: (tokens) => saveTokens(env.configDir, profile, baseUrl, { type: "session", access_token: tokens.accessToken, refresh_token: tokens.refreshToken }),
    });
  };
  const anonymousClient = () => createClient({ baseUrl });
  const clientIfAny = () => (apiKey || stored ? client() : anonymousClient());
  return { out, env, baseUrl, profile, client, anonymousClient, clientIfAny };
}
