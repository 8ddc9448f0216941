/**
 * The Persona SDK: a typed client for the Persona REST API.
 *
 * @example
 * import { createClient } from "@persona-platform/sdk";
 * const client = createClient({ baseUrl: "http://127.0.0.1:3000", apiKey: "pk_..." });
 * const me = await client.auth.me();
 */
export { APIPromise } from "./api-promise.ts";
export type { RateLimit, ResponseMeta, WithResponse } from "./response-meta.ts";
export { createClient, PersonaClient, type ClientCredentials, type ClientOptions, type ListPath } from "./client.ts";
export type { Credentials, Tokens } from "./credentials.ts";
export {
  AuthenticationError,
  BadRequestError,
  ConflictError,
  ConnectionError,
  InternalServerError,
  NotFoundError,
  NotImplementedError,
  PayloadTooLargeError,
  PermissionDeniedError,
  PersonaError,
  PlanLimitError,
  ProviderUnavailableError,
  RateLimitError,
  StreamError,
  StreamResumeError,
  TimeoutError,
  UnsupportedMediaTypeError,
  UpstreamError,
  errorFromResponse,
} from "./errors.ts";
export { PageIterator, type Cursor, type ListPage } from "./pagination.ts";
export { openaiBaseUrl } from "./openai.ts";
export { ChatStream, type ChatStreamEvent } from "./stream.ts";
export { RoomEventStream, type RoomEvent, type RoomEventsOptions } from "./room-events.ts";
export { uploadForm, type Uploadable, type UploadOptions } from "./upload.ts";
export type { RawClient } from "./core.ts";
export type { Auth, ApiKeys } from "./resources/auth.ts";
export type { Billing } from "./resources/billing.ts";
export type { Conversations } from "./resources/conversations.ts";
export type { GeneratedConversationsMessages as Messages } from "./generated/resources.ts";
export type { Images } from "./resources/images.ts";
export type { Integrations } from "./resources/integrations.ts";
export type { Knowledge } from "./resources/knowledge.ts";
export type { Personas } from "./resources/personas.ts";
export type { Rooms } from "./resources/rooms.ts";
export type { Social } from "./resources/social.ts";
export type { Studio } from "./resources/studio.ts";
export type { Marketplace } from "./resources/marketplace.ts";
export type { Voice } from "./resources/voice.ts";
export type { Webhooks } from "./resources/webhooks.ts";
export { verifyWebhook, WebhookVerificationError, type VerifyWebhookOptions } from "./verify-webhook.ts";
export type {
  components,
  ErrorCode,
  IdempotentRequestOptions,
  operations,
  OperationId,
  paths,
  QueryOf,
  RequestBody,
  RequestOptions,
  ResponseOf,
  Schemas,
} from "./types.ts";
