import type { components } from "../../../../generated/openapi.d.ts";
import type { UserRow } from "../users/store.ts";
import { toUser } from "../users/views.ts";
import type { IssuedTokens } from "./service.ts";

/** A login's answer: the token pair and the short form of the user. */
export function loginBody(tokens: IssuedTokens, user: UserRow): components["schemas"]["LoginResponse"] {
  const { id, email, username, display_name, avatar_url, email_verified } = toUser(user);
  return { ...tokens, user: { id, email, username, display_name, avatar_url, email_verified } };
}
