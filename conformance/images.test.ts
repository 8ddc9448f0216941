import { beforeAll, describe } from "vitest";
import { call } from "./support/client.ts";
import { registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";

describe("images", () => {
  let user: TestUser;

  beforeAll(async () => {
    user = await registerUser("images");
  });

  op("images_generate", async () => {
    const json = { prompt: "Portrait of a retired starship captain with silver hair and a warm smile", style: "avatar", aspect_ratio: "1:1" };
    await call("images_generate", { token: user.token, json, expect: [200] });
  }, 60_000);
});
