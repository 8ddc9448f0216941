import envPaths from "env-paths";

/**
 * The CLI's own settings (not the server's: those live in server/toolkit/config.ts). These are the only
 * environment variables the client side of the CLI reads.
 */
export const DEFAULT_BASE_URL = "http://127.0.0.1:3000";

export interface CliEnv {
  /** PERSONA_BASE_URL: the server to talk to, unless --base-url says otherwise. */
  baseUrl: string | undefined;
  /** PERSONA_API_KEY: a key to use instead of the stored login, unless --api-key says otherwise. */
  apiKey: string | undefined;
  /** PERSONA_CONFIG_DIR, else the platform's config directory for "persona". */
  configDir: string;
}

export function readCliEnv(env: Record<string, string | undefined> = process.env): CliEnv {
  const nonEmpty = (value: string | undefined) => (value && value.trim() ? value.trim() : undefined);
  return {
    baseUrl: nonEmpty(env.PERSONA_BASE_URL),
    apiKey: nonEmpty(env.PERSONA_API_KEY),
    // No "-nodejs" suffix: this is the product's own directory (~/.config/persona on Linux).
    configDir: nonEmpty(env.PERSONA_CONFIG_DIR) ?? envPaths("persona", { suffix: "" }).config,
  };
}

/** One spelling per server, so that a stored login matches however the URL was typed. */
export function normalizeBaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TypeError(`invalid base URL ${JSON.stringify(raw)}: expected e.g. ${DEFAULT_BASE_URL}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`invalid base URL ${JSON.stringify(raw)}: must be http:// or https://`);
  }
  return `${url.origin}${url.pathname.replace(/(?<!\/)\/+$/, "")}`;
}
