import type { OperationInfo } from "../../toolkit/contract.ts";
import type { Principal } from "../../toolkit/http/principal.ts";

// What the `chat` scope of the alternative key form adds to `read` (DECISIONS: Scopes).
const MESSAGE_SENDS = new Set(["conversations_send_message", "conversations_stream_message", "rooms_send_message", "openai_create_chat_completion"]);

/**
 * Whether the principal may call the operation. The contract names the fine-grained scope each
 * operation needs; `admin` allows everything; the alternative vocabulary maps onto it: `read` is
 * every GET outside the admin-only areas, `chat` is `read` plus message sends and voice.
 */
export function allows(principal: Principal, op: Pick<OperationInfo, "operationId" | "method" | "scope">): boolean {
  if (principal.scopes === "all" || !op.scope) return true;
  const scopes = principal.scopes;
  if (scopes.has("admin") || scopes.has(op.scope)) return true;
  const reads = scopes.has("read") || scopes.has("chat");
  if (reads && op.method === "GET" && op.scope !== "admin") return true;
  return scopes.has("chat") && (MESSAGE_SENDS.has(op.operationId) || op.scope === "voice");
}
