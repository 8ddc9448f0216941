/** No provider can do this on this server; the API answers 503 `provider_unavailable`. */
export class ProviderUnavailableError extends Error {
  override name = "ProviderUnavailableError";
}
