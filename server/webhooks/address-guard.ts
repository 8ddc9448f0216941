// The SSRF guard moved to the providers toolkit (server/providers/address-guard.ts) so that every
// outbound fetch can use it, the image provider's links too; webhooks keep importing it from here.
export * from "../providers/address-guard.ts";
