/**
 * The failures every provider reports, whatever its capability (model, embeddings, images, speech,
 * payments, blobs); the toolkit's error catalogue maps them to HTTP in one place (`providerFailure`).
 */

/** The provider failed (HTTP error, timeout, broken stream); the API answers 502 `upstream_error` (or an `error` stream event). */
export class UpstreamError extends Error {
  override name = "UpstreamError";
  /** The provider's HTTP status, when it answered one. */
  readonly status: number | undefined;
  /** The sentence naming the settings that choose this provider, when the message ends with it (an OpenAI-compatible provider's failures do). */
  readonly settings: string | undefined;
  constructor(message: string, status?: number, options?: { cause?: unknown; settings?: string }) {
    super(message, options);
    this.status = status;
    this.settings = options?.settings;
  }
}

/** No provider can do this on this server; the API answers 503 `provider_unavailable`. */
export class ProviderUnavailableError extends Error {
  override name = "ProviderUnavailableError";
}
