import { describe, expect, it } from "vitest";
import { contract, operations, type JsonSchema } from "../support/contract.ts";

// The service generates a UUIDv7 for every id, so the contract declares every id `format: uuid`:
// a malformed id is a 400 from the validator everywhere, and clients and mocks know the shape
// (issue 13, item 4). Ids that are not the service's own are listed here with the reason.
const NOT_UUIDS: Record<string, string> = {
  "oauth_authorize:client_id": "an OAuth client id is chosen by the administrator who registers the client (e.g. starlog-web)",
  "OAuthConsentForm.client_id": "an OAuth client id",
  "OAuthTokenRequest.client_id": "an OAuth client id",
  "CheckoutSession.session_id": "the payment provider's checkout session id (Stripe: cs_...)",
  "billing_local_checkout_page:session_id": "the checkout session id of the payments provider in use",
  "billing_local_checkout_complete:session_id": "the checkout session id of the payments provider in use",
  "Subscription.payment_customer_id": "the payment provider's customer id (Stripe: cus_...)",
  "SubscriptionChange.payment_customer_id": "the payment provider's customer id",
  "PaymentProviderEvent.id": "the payment provider's event id (Stripe: evt_...)",
  "Invoice.id": "an invoice is the payment provider's record (Stripe: in_...)",
  "MessengerUpdate.update_id": "the messenger platform's update number (Telegram: an integer)",
  "Persona.voice_id": "a voice name (alloy, nova, ...)",
  "PersonaCreate.voice_id": "a voice name",
  "PersonaUpdate.voice_id": "a voice name",
  "VoiceTtsRequest.voice_id": "a voice name",
  "ForumConnect.guild_id": "the chat platform's server id",
  "ForumConnect.channel_ids": "the chat platform's channel ids",
  "WorkspaceConnect.workspace_id": "the chat platform's workspace id",
  "WorkspaceConnect.channel_ids": "the chat platform's channel ids",
  "IntegrationUpdate.channel_ids": "the chat platform's channel ids",
  "Integration.guild_id": "the chat platform's server id",
  "Integration.workspace_id": "the chat platform's workspace id",
  "Integration.channel_ids": "the chat platform's channel ids",
  "IntegrationDetail.guild_id": "the chat platform's server id",
  "IntegrationDetail.workspace_id": "the chat platform's workspace id",
  "IntegrationDetail.channel_ids": "the chat platform's channel ids",
  "IntegrationTestOutcome.message_id": "the chat platform's id of the test message",
  "CharacterBookEntry.id": "a lorebook entry's id as the character card's author numbered it",
  "OpenAIChatCompletion.id": "OpenAI's completion id form, chatcmpl-<uuid>",
  "OpenAIChatCompletionChunk.id": "OpenAI's completion id form, chatcmpl-<uuid>",
  "OpenAIResponseObject.id": "OpenAI's response id form, resp_<hex digits>",
  "OpenAIModel.id": "a model name: the persona's handle or <username>/<handle> (persona_id carries the UUID)",
  "ModelInfo.id": "a model registry's name of a model, as a persona's model names it",
  "TestChatResult.model_id": "a model registry's name of the model that answered",
  "OpenAIToolCall.id": "the model provider's tool call id",
  "OpenAIToolCallDelta.id": "the model provider's tool call id",
  "OpenAIResponsesOutputMessage.id": "OpenAI's output item id form, msg_<hex digits>",
  "OpenAIResponsesStreamEvent.item_id": "OpenAI's output item id form, msg_<hex digits>",
  "OpenAIResponsesRequest.previous_response_id": "OpenAI's response id form (refused: nothing is stored)",
  "OpenAIResponseObject.previous_response_id": "OpenAI's response id form (always null: nothing is stored)",
};

/** Parameters and properties that carry an id under another name. */
const ID_PARAMETERS_BY_OTHER_NAME = new Set(["conversations_list_messages:before"]);
const ID_PROPERTIES_BY_OTHER_NAME = new Set(["WebhookDelivery.redelivery_of"]);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const isIdName = (name: string) => name === "id" || /_ids?$/.test(name);

function deref(schema: JsonSchema | undefined): JsonSchema | undefined {
  if (!schema) return undefined;
  if (typeof schema.$ref === "string") return deref(contract.components.schemas[schema.$ref.split("/").pop()!]);
  const allOf = schema.allOf as JsonSchema[] | undefined;
  if (allOf?.length === 1 && !schema.format) return deref(allOf[0]);
  return schema;
}

/** Whether the schema is a UUID string, or (for a `..._ids` list) an array of them. */
function isUuidSchema(schema: JsonSchema | undefined, plural: boolean): boolean {
  const resolved = deref(schema);
  if (plural) return resolved?.type === "array" && isUuidSchema(resolved.items as JsonSchema, false);
  return resolved?.type === "string" && resolved.format === "uuid";
}

/** Every property named like an id, as `Schema.property` (nested inline objects included). */
function idProperties(): { key: string; schema: JsonSchema; name: string }[] {
  const found: { key: string; schema: JsonSchema; name: string }[] = [];
  const walk = (owner: string, schema: JsonSchema | undefined) => {
    if (!schema || typeof schema !== "object" || schema.$ref) return;
    for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, JsonSchema>)) {
      if (isIdName(name) || ID_PROPERTIES_BY_OTHER_NAME.has(`${owner}.${name}`)) found.push({ key: `${owner}.${name}`, schema: property, name });
      walk(owner, property);
    }
    walk(owner, schema.items as JsonSchema | undefined);
    for (const part of ["allOf", "anyOf", "oneOf"]) for (const sub of (schema[part] ?? []) as JsonSchema[]) walk(owner, sub);
  };
  for (const [name, schema] of Object.entries(contract.components.schemas)) walk(name, schema);
  return found;
}

function idParameters() {
  return [...operations.values()].flatMap((op) =>
    op.parameters
      .filter((p) => (p.in === "path" || p.in === "query") && (isIdName(p.name) || ID_PARAMETERS_BY_OTHER_NAME.has(`${op.operationId}:${p.name}`)))
      .map((p) => ({ key: `${op.operationId}:${p.name}`, parameter: p })),
  );
}

describe("ids in the contract", () => {
  it("declares every id path or query parameter format uuid, but for the listed ones", () => {
    const parameters = idParameters();
    expect(parameters.length).toBeGreaterThan(60);
    const missing = parameters.filter(({ key, parameter }) => !NOT_UUIDS[key] && !isUuidSchema(parameter.schema, parameter.name.endsWith("_ids"))).map((p) => p.key);
    expect(missing).toEqual([]);
  });

  it("declares every id property of every schema format uuid, but for the listed ones", () => {
    const properties = idProperties();
    expect(properties.length).toBeGreaterThan(100);
    const missing = properties.filter(({ key, schema, name }) => !NOT_UUIDS[key] && !isUuidSchema(schema, name.endsWith("_ids"))).map((p) => p.key);
    expect(missing).toEqual([]);
  });

  it("lists only ids that exist and are not UUIDs", () => {
    const known = new Map<string, boolean>([
      ...idParameters().map(({ key, parameter }): [string, boolean] => [key, isUuidSchema(parameter.schema, parameter.name.endsWith("_ids"))]),
      ...idProperties().map(({ key, schema, name }): [string, boolean] => [key, isUuidSchema(schema, name.endsWith("_ids"))]),
    ]);
    const stale = Object.keys(NOT_UUIDS).filter((key) => known.get(key) !== false);
    expect(stale).toEqual([]);
  });

  it("gives every uuid path parameter a UUID example", () => {
    const wrong = idParameters()
      .filter(({ parameter }) => parameter.in === "path" && isUuidSchema(parameter.schema, false))
      .filter(({ parameter }) => typeof parameter.example !== "string" || !UUID.test(parameter.example))
      .map(({ key, parameter }) => `${key}: ${JSON.stringify(parameter.example)}`);
    expect(wrong).toEqual([]);
  });
});
