import envPaths from "env-paths";

/**
 * The CLI's own settings (not the server's: those live in server/toolkit/config.ts). These are the only
 * environment variables the client side of the CLI reads.
 */
export const DEFAULT_BASE_URL = "http://127.0.0.1:3000";
/** The profile used when neither --profile nor PERSONA_PROFILE names one. */
export const DEFAULT_PROFILE = "default";

export interface CliEnv {
  /** PERSONA_BASE_URL: the server to talk to, unless --base-url says otherwise. */
  baseUrl: string | undefined;
  /** PERSONA_API_KEY: a key to use instead of the stored login, unless --api-key says otherwise. */
  apiKey: string | undefined;
  /** PERSONA_PROFILE: the stored profile to use, unless --profile says otherwise. */
  profile: string | undefined;
  /** PERSONA_CONFIG_DIR, else the platform's config directory for "persona". */
  configDir: string;
}

export function readCliEnv(env: Record<string, string | undefined> = process.env): CliEnv {
  const nonEmpty = (value: string | undefined) => (value && value.trim() ? value.trim() : undefined);
  return {
    baseUrl: nonEmpty(env.PERSONA_BASE_URL),
    apiKey: nonEmpty(env.PERSONA_API_KEY),
    profile: nonEmpty(env.PERSONA_PROFILE),
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

/** A profile's name: a short word, since it is typed on command lines and shown in listings. */
export function checkProfileName(name: string): string {
  if (!/^[a-z0-9][a-z0-9_.-]{0,39}$/i.test(name)) {
    throw new TypeError(`invalid profile name ${JSON.stringify(name)}: letters, digits, ".", "_" and "-", up to 40, starting with a letter or digit`);
  }
  return name;
}
