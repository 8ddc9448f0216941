import { randomBytes } from "node:crypto";
import { setAccountPlan } from "../../server/areas/auth/index.ts";
import { expectOk } from "../support/assertions.ts";
import type { TestService } from "../support/service.ts";
import type { TestUser } from "../support/users.ts";

/** The operator of the tests' review actions, as the CLI names one. */
export const OPERATOR = { operator: "test-operator", reason: "Breaks the content policy" };

/** A name unique to this run: services are lent, and other files publish personas of their own. */
export const uniqueName = (base: string) => `${base} ${randomBytes(4).toString("hex")}`;

/** A public persona of `user`'s, through the API. */
export async function publicPersona(service: TestService, user: TestUser, fields: Record<string, unknown> = {}) {
  return expectOk(
    service.clientFor(user).POST("/v1/personas", {
      body: { name: uniqueName("Warden"), instructions: "You are a calm lighthouse keeper.", greeting_message: "Ahoy.", is_public: true, ...fields },
    }),
    201,
  );
}

/** Publishes the persona on the marketplace; answers its listing id. */
export async function publish(service: TestService, user: TestUser, personaId: string): Promise<string> {
  await expectOk(service.clientFor(user).POST("/v1/studio/{persona_id}/publish", { params: { path: { persona_id: personaId } }, body: { category: "education", tags: ["safety"], pricing: "free" } }));
  const listing = await service.services.db.knex("marketplace_listings").where({ persona_id: personaId }).first("id");
  return (listing as { id: string }).id;
}

/** Files a report through the API. */
export async function report(service: TestService, user: TestUser, target_type: "persona" | "listing" | "review" | "profile" | "room_message" | "conversation_message", target_id: string) {
  return expectOk(service.clientFor(user).POST("/v1/reports", { body: { target_type, target_id, reason: "harassment", details: "Insults everyone." } }), 201);
}

/** A user on the creator plan, so that a test may make many personas. */
export async function roomyUser(service: TestService, user: TestUser): Promise<TestUser> {
  await setAccountPlan(service.services, user.id, "creator");
  return user;
}
