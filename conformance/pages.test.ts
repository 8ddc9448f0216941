import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr, PLACEHOLDER_ID } from "./support/placeholders.ts";
import { target } from "./support/target.ts";

// The built-in pages for people (docs/design/pages.md): a public persona's page, its card and its
// oEmbed, a listing that does not exist, and the e-mail pages with a token that was never sent.
describe("pages", () => {
  let owner: TestUser;
  let personaId: string | undefined;

  beforeAll(async () => {
    owner = await registerUser("pages");
    personaId = await createPersona(owner, { is_public: true });
  });

  op("pages_persona", async () => {
    const answer = await call("pages_persona", { path: { id: idOr(personaId) }, expect: [200] });
    if (target.stateful) expect(answer.text).toContain('property="og:title"');
  });

  op("pages_persona_card", async () => {
    const answer = await call("pages_persona_card", { path: { id: idOr(personaId) }, expect: [200] });
    if (target.stateful) expect(answer.contentType).toBe("image/png");
  }, 60_000);

  op("pages_oembed", async () => {
    // The page as the service itself names it (behind the proxy, the proxy is another host).
    const url = `${target.directUrl}/p/${idOr(personaId)}`;
    await call("pages_oembed", { query: { url, format: "json" }, expect: [200] });
  });

  op("pages_listing", async () => {
    await call("pages_listing", { path: { id: PLACEHOLDER_ID }, expect: [404] });
  });

  op("pages_verify_email", async () => {
    await call("pages_verify_email", { query: { token: "never-sent-token-0000000000000000" }, expect: [404, 410] });
  });

  op("pages_confirm_email", async () => {
    // No anti-forgery value from the page: refused.
    await call("pages_confirm_email", { form: { token: "never-sent-token-0000000000000000", csrf_token: "forged" }, expect: [403, 404, 410] });
  });

  op("pages_reset_password", async () => {
    await call("pages_reset_password", { query: { token: "never-sent-token-0000000000000000" }, expect: [404, 410] });
  });

  op("pages_change_password", async () => {
    await call("pages_change_password", { form: { token: "never-sent-token-0000000000000000", csrf_token: "forged", new_password: "Correct-horse-9", confirm_password: "Correct-horse-9" }, expect: [403, 404, 410] });
  });
});
