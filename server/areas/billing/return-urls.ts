import type { Config } from "../../toolkit/config.ts";
import { invalidFields } from "../../toolkit/http/error-catalogue.ts";

/**
 * What a checkout's `success_url` or `cancel_url` may be. The payment page sends the browser there,
 * so an address the service accepted from anyone would make it an open redirect: only absolute
 * http(s) URLs without credentials; only the configured origins when BILLING_REDIRECT_ORIGINS is
 * set; only HTTPS in production without it.
 */
export function returnUrlProblem(config: Pick<Config, "billing" | "nodeEnv">, value: string): string | undefined {
  if (!URL.canParse(value)) return "must be an absolute URL";
  const url = new URL(value);
  if (url.protocol !== "https:" && url.protocol !== "http:") return `must be an http(s) URL, not ${url.protocol}`;
  if (url.username || url.password) return "must not carry credentials";
  const origins = config.billing.redirectOrigins;
  if (origins.length) return origins.includes(url.origin) ? undefined : `must be on one of the allowed origins: ${origins.join(", ")}`;
  if (config.nodeEnv === "production" && url.protocol !== "https:") return "must be an https URL";
  return undefined;
}

export function checkReturnUrls(config: Pick<Config, "billing" | "nodeEnv">, urls: Record<"success_url" | "cancel_url", string>): void {
  const errors = Object.entries(urls).flatMap(([field, value]) => {
    const problem = returnUrlProblem(config, value);
    return problem ? [{ path: `/body/${field}`, message: problem }] : [];
  });
  if (errors.length) throw invalidFields(`Invalid request: ${errors[0]!.path.slice(6)} ${errors[0]!.message}`, errors);
}
