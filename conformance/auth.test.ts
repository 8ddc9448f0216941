import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { registerUser, type TestUser } from "./support/fixtures.ts";
import { waitForMail } from "./support/mailbox.ts";
import { op } from "./support/op.ts";
import { target } from "./support/target.ts";

// Tokens that only arrive by mail: without a mailbox (a server this run did not start) the calls
// still go out with tokens no server issued, and only the contract judges the answer.
const UNISSUED = "vt_conformance_never_issued_0000000000";

describe("auth", () => {
  let user: TestUser;

  beforeAll(async () => {
    user = await registerUser("auth");
  });

  op("auth_register", async () => {
    const fresh = await registerUser("register");
    if (target.stateful) expect(fresh.token).not.toBe("");
  });

  op("auth_login", async () => {
    const answer = await call("auth_login", { json: { email: user.email, password: user.password }, expect: [200] });
    if (target.stateful) expect((answer.json as { user: { id: string } }).user.id).toBe(user.id);
  });

  op("auth_refresh", async () => {
    const answer = await call("auth_refresh", { json: { refresh_token: user.refreshToken }, expect: [200] });
    const tokens = answer.json as { access_token: string; refresh_token: string };
    user = { ...user, token: tokens.access_token, refreshToken: tokens.refresh_token };
  });

  op("auth_get_me", async () => {
    const answer = await call("auth_get_me", { token: user.token, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject({ id: user.id, email: user.email, username: user.username });
  });

  op("auth_update_me", async () => {
    const json = { display_name: "Conformance Tester", bio: "Checks every answer against the contract." };
    const answer = await call("auth_update_me", { token: user.token, json, expect: [200] });
    if (target.stateful) expect(answer.json).toMatchObject({ display_name: json.display_name });
  });

  op("auth_verify_email", async () => {
    const mailed = await waitForMail(user.email, /POST \/v1\/auth\/verify-email:\s+(\S+)/);
    const answer = await call("auth_verify_email", {
      token: user.token,
      json: { token: mailed?.[1] ?? UNISSUED },
      expect: mailed ? [200] : undefined,
    });
    if (mailed) expect(answer.json).toMatchObject({ email_verified: true });
  });

  op("auth_export_data", async () => {
    await call("auth_export_data", { token: user.token, expect: [200] });
  });

  op("auth_download_export", async () => {
    const requested = await call("auth_export_data", { token: user.token, expect: [200] });
    const exportId = (requested.json as { export_id: string }).export_id;
    const mailed = await waitForMail(user.email, /(https?:\/\/\S+\/v1\/auth\/export-data\/[^/\s]+\/download\?\S+)/, 20_000);
    const link = mailed ? new URL(mailed[1]!) : undefined;
    const [, , , , id] = link?.pathname.split("/") ?? [];
    await call("auth_download_export", {
      path: { export_id: id ?? exportId },
      query: {
        expires: link?.searchParams.get("expires") ?? String(Math.floor(Date.now() / 1000) + 3600),
        signature: link?.searchParams.get("signature") ?? "0".repeat(64),
      },
      expect: link ? [200] : undefined,
    });
  }, 30_000);

  op("auth_forgot_password", async () => {
    await call("auth_forgot_password", { json: { email: user.email }, expect: [200] });
  });

  op("auth_reset_password", async () => {
    // A reset signs the user out everywhere, so it gets an account of its own.
    const resetting = await registerUser("reset");
    await call("auth_forgot_password", { json: { email: resetting.email }, expect: [200] });
    const mailed = await waitForMail(resetting.email, /POST \/v1\/auth\/reset-password:\s+(\S+)/);
    const newPassword = "Andromeda2031far";
    await call("auth_reset_password", {
      json: { token: mailed?.[1] ?? UNISSUED, new_password: newPassword },
      expect: mailed ? [200] : undefined,
    });
    if (mailed) await call("auth_login", { json: { email: resetting.email, password: newPassword }, expect: [200] });
  });

  describe("API keys", () => {
    let keyId: string;

    op("api_keys_create", async () => {
      const json = { name: "Conformance bot", scopes: ["personas:read", "conversations:write"] };
      const answer = await call("api_keys_create", { token: user.token, json, expect: [201] });
      const created = answer.json as { id: string; key: string };
      keyId = created.id;
      if (target.stateful) expect(created.key).toMatch(/^pk_/);
    });

    op("api_keys_create_simple", async () => {
      const json = { name: "Nightly backup script", scopes: ["read"], expires_in_days: 90 };
      const answer = await call("api_keys_create_simple", { token: user.token, json, expect: [201] });
      if (target.stateful) expect((answer.json as { key: string }).key).toMatch(/^pk_/);
    });

    op("api_keys_list", async () => {
      const answer = await call("api_keys_list", { token: user.token, expect: [200] });
      const ids = (answer.json as { data: { id: string }[] }).data.map((k) => k.id);
      if (target.stateful) expect(ids).toContain(keyId);
    });

    op("api_keys_revoke", async () => {
      await call("api_keys_revoke", { token: user.token, path: { id: keyId }, expect: [200] });
    });
  });

  op("auth_delete_me", async () => {
    const leaving = await registerUser("leaving");
    await call("auth_delete_me", { token: leaving.token, json: { password: leaving.password }, expect: [200] });
    await call("auth_get_me", { token: leaving.token, expect: [401] });
    await call("auth_login", { json: { email: leaving.email, password: leaving.password }, expect: [403] });
  });

  op("auth_restore_me", async () => {
    const returning = await registerUser("returning");
    await call("auth_delete_me", { token: returning.token, expect: [200] });
    const answer = await call("auth_restore_me", { json: { email: returning.email, password: returning.password }, expect: [200] });
    if (target.stateful) {
      const restored = answer.json as { user: { id: string }; access_token: string };
      expect(restored.user.id).toBe(returning.id);
      await call("auth_get_me", { token: restored.access_token, expect: [200] });
    }
  });
});
