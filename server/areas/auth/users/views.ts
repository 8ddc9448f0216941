import type { components } from "../../../../generated/openapi.d.ts";
import type { UserRow } from "./store.ts";

export type User = components["schemas"]["User"];

export function toUser(row: UserRow): User {
  return {
    id: row.id,
    email: row.email,
    username: row.username,
    display_name: row.display_name,
    avatar_url: row.avatar_url,
    bio: row.bio,
    email_verified: row.email_verified,
    plan: row.plan as User["plan"],
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
