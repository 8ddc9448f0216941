import { GeneratedWebhooks } from "../generated/resources.ts";

/**
 * Webhooks: signed HTTP deliveries of the account's events. Verify them with {@link verifyWebhook}.
 * Every method is generated from the contract (GeneratedWebhooks).
 *
 * @example
 * const hook = await client.webhooks.create({ url: "https://example.com/hooks", events: ["message.created"] });
 * console.log(hook.secret); // shown only now: store it
 */
export class Webhooks extends GeneratedWebhooks {}
