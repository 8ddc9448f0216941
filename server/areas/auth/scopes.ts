import type { OperationInfo } from "../../toolkit/contract.ts";
import type { Principal } from "../../toolkit/http/principal.ts";

type ScopedOperation = Pick<OperationInfo, "operationId" | "method" | "scope">;

/**
 * The two scope vocabularies of keys and tokens (interface spec, Authentication): the fine-grained
 * one (`POST /v1/auth/api-keys`) and the alternative one (`POST /v1/api-keys`), each scope in order
 * from the narrowest to `admin`.
 */
export const SCOPE_VOCABULARIES = [
  { name: "fine-grained", scopes: ["personas:read", "personas:write", "conversations:read", "conversations:write", "voice", "admin"] },
  { name: "read/chat/admin", scopes: ["read", "chat", "admin"] },
] as const;

/**
 * What the `chat` scope of the alternative vocabulary adds to `read` (and voice): everything a chat
 * client does besides reading (docs/adr/0292-a-chat-key-runs-a-whole-chat.md). Starting a
 * conversation, sending and streaming, stopping a reply, regenerating and choosing alternatives,
 * editing a message into a new branch and switching branches, room messages, the OpenAI-compatible
 * completion, and reading its own account. Deleting, and every persona, room or account change,
 * stays with the fine-grained scopes or `admin`.
 */
const CHAT_OPERATIONS: ReadonlySet<string> = new Set([
  "conversations_create",
  "conversations_send_message",
  "conversations_stream_message",
  "conversation_generations_stop",
  "conversation_tree_regenerate",
  "conversation_tree_regenerate_stream",
  "conversation_tree_select",
  "conversation_tree_edit",
  "conversation_tree_edit_stream",
  "conversation_tree_activate_branch",
  "rooms_send_message",
  "openai_create_chat_completion",
  "openai_responses_create",
  "auth_get_me",
]);

/**
 * Whether the principal may call the operation. The contract names the fine-grained scope each
 * operation needs; `admin` allows everything; the alternative vocabulary maps onto it: `read` is
 * every GET outside the admin-only areas, `chat` is `read` plus voice and a chat client's operations
 * (CHAT_OPERATIONS).
 */
export function allows(principal: Principal, op: ScopedOperation): boolean {
  if (principal.scopes === "all" || !op.scope) return true;
  const scopes = principal.scopes;
  if (scopes.has("admin") || scopes.has(op.scope)) return true;
  const reads = scopes.has("read") || scopes.has("chat");
  if (reads && op.method === "GET" && op.scope !== "admin") return true;
  return scopes.has("chat") && (CHAT_OPERATIONS.has(op.operationId) || op.scope === "voice");
}

const keyWith = (scope: string): Principal => ({ userId: "-", kind: "api_key", scopes: new Set([scope]) });

/** Every scope of each vocabulary that grants the operation, narrowest first. */
export function grantingScopes(op: ScopedOperation): { vocabulary: string; scopes: string[] }[] {
  return SCOPE_VOCABULARIES.map(({ name, scopes }) => ({ vocabulary: name, scopes: scopes.filter((scope) => allows(keyWith(scope), op)) }));
}

/**
 * The 403 of a credential without the operation's scope: the scope the contract names, and the
 * narrowest scope of each vocabulary that grants it (`admin` grants everything), in the message and
 * in `details` (`required_scope`, `granting_scopes`).
 */
export function missingScopeRefusal(op: ScopedOperation & { scope: string }): { message: string; granting: string[] } {
  const byVocabulary = grantingScopes(op);
  const all = new Set(byVocabulary.flatMap((v) => v.scopes));
  // The narrower scopes first, `admin` last.
  const granting = [...[...all].filter((scope) => scope !== "admin"), "admin"];
  const narrowest = byVocabulary.map((v) => ({ vocabulary: v.vocabulary, scope: v.scopes[0] ?? "admin" }));
  const lacks = `This credential lacks the "${op.scope}" scope this operation needs`;
  if (narrowest.every((n) => n.scope === "admin")) return { message: `${lacks}; only "admin" grants it, in either scope vocabulary`, granting };
  const named = narrowest.map((n) => `"${n.scope}" of the ${n.vocabulary} scopes`).join(" or ");
  const admin = narrowest.some((n) => n.scope === "admin") ? "" : ' (as does "admin")';
  return { message: `${lacks}; ${named} grants it${admin}`, granting };
}
