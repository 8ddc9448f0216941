import { expect } from "vitest";
import { jsonHeaders, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";

/** A JSON call as `user`, expecting `status`; returns the body. */
export async function call(
  service: TestService,
  user: TestUser | undefined,
  method: string,
  path: string,
  status: number,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const response = await service.fetch(path, {
    method,
    headers: { ...(user ? user.auth : {}), ...(body === undefined ? {} : jsonHeaders), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  expect(response.status, text).toBe(status);
  return text ? JSON.parse(text) : undefined;
}

/** A user on the creator plan: room for many personas and messages. */
export async function creator(service: TestService, username?: string): Promise<TestUser> {
  const user = await registerUser(service, username ? { username, email: `${username}@example.com` } : {});
  await service.services.db.knex("users").where({ id: user.id }).update({ plan: "creator" });
  return user;
}

/** A persona of `user` (public unless said otherwise). */
export async function makePersona(service: TestService, user: TestUser, name: string, fields: Record<string, unknown> = {}): Promise<{ id: string; name: string }> {
  return call(service, user, "POST", "/v1/personas", 201, {
    name,
    instructions: `You are ${name}.`,
    description: `${name}, described.`,
    greeting_message: "Hi.",
    is_public: true,
    ...fields,
  });
}

export async function makeRoom(service: TestService, user: TestUser, fields: Record<string, unknown> = {}) {
  return call(service, user, "POST", "/v1/rooms", 201, { name: "Stargazers", ...fields });
}

export async function addMember(service: TestService, owner: TestUser, roomId: string, member: TestUser) {
  return call(service, owner, "POST", `/v1/rooms/${roomId}/members`, 200, { user_id: member.id });
}

export const serviceEnv = { RATE_LIMIT_PER_MINUTE: "100000", AUTO_AVATARS: "false" };
