import { randomBytes } from "node:crypto";
import { call } from "./client.ts";
import { ifLive } from "./op.ts";

export interface TestUser {
  id: string;
  email: string;
  username: string;
  password: string;
  token: string;
  refreshToken: string;
}

const unique = () => randomBytes(5).toString("hex");

/** A new account, signed in. Names are unique so that runs against a long-lived server never collide. */
export async function registerUser(label: string): Promise<TestUser> {
  const suffix = unique();
  const email = `${label}-${suffix}@conformance.example`;
  const username = `${label}_${suffix}`;
  const password = `Conformance${suffix}9`;
  const answer = await call("auth_register", { json: { email, password, username }, expect: [201] });
  const body = answer.json as { user: { id: string }; access_token: string; refresh_token: string };
  return { id: body.user.id, email, username, password, token: body.access_token, refreshToken: body.refresh_token };
}

export const personaInput = {
  name: "Captain Nova",
  instructions: "You are Captain Nova, a warm retired starship captain. Explain astronomy through short anecdotes.",
  description: "A retired starship captain who explains astronomy with stories from the bridge.",
  is_public: true,
  category: "tutor",
  greeting_message: "Welcome aboard, cadet! What corner of the sky shall we explore today?",
  voice_id: "nova",
};

/** A public persona of `user`, or undefined while the personas area is not live. */
export async function createPersona(user: TestUser, overrides: Record<string, unknown> = {}): Promise<string | undefined> {
  const answer = await ifLive(() => call("personas_create", { token: user.token, json: { ...personaInput, ...overrides }, expect: [201] }));
  return (answer?.json as { id: string } | undefined)?.id;
}

/** A conversation of `user` with `personaId`, or undefined while that is not possible yet. */
export async function createConversation(user: TestUser, personaId: string | undefined): Promise<string | undefined> {
  if (!personaId) return undefined;
  const answer = await ifLive(() => call("conversations_create", { token: user.token, json: { persona_id: personaId }, expect: [201] }));
  return (answer?.json as { id: string } | undefined)?.id;
}
