// What the suite runs against, from the environment the driver (conformance/run.ts) or a person sets.
export type TargetKind = "real" | "mock" | "proxy";

function kind(): TargetKind {
  const value = process.env.CONFORMANCE_TARGET ?? "real";
  if (value !== "real" && value !== "mock" && value !== "proxy") throw new Error(`CONFORMANCE_TARGET must be real, mock or proxy, not ${value}`);
  return value;
}

// BASE_URL as given to vitest; conformance/vitest.config.ts hands it over (Vite overwrites BASE_URL).
const baseUrl = process.env.CONFORMANCE_BASE_URL;
if (!baseUrl) throw new Error("BASE_URL is not set: the conformance suite needs a running target (npm run conformance starts them)");

export const target = {
  kind: kind(),
  baseUrl: baseUrl.replace(/\/$/, ""),
  /**
   * The real server behind `prism proxy`: calls that are not JSON (SSE, multipart, binary, HTML
   * forms, redirects) go to it directly, because the proxy's validator is only asked to judge JSON.
   */
  directUrl: (process.env.DIRECT_URL ?? baseUrl).replace(/\/$/, ""),
  /** Directory where the driver's SMTP catcher drops the mails the server sends (unset: no mail). */
  mailboxDir: process.env.MAILBOX_DIR || undefined,
  /** The mock keeps no state and answers examples: only status, content type and schema are judged. */
  stateful: kind() !== "mock",
};
