import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";

// The contract's own example name, for a target whose links do not point at its file route (the mock).
const EXAMPLE_FILE = "3f1c9a7e5b2d4c6f8a0e1d3b5c7f9a2e.png";

describe("images", () => {
  let user: TestUser;
  let fileName: string | undefined;

  beforeAll(async () => {
    user = await registerUser("images");
  });

  op("images_generate", async () => {
    const json = { prompt: "Portrait of a retired starship captain with silver hair and a warm smile", style: "avatar", aspect_ratio: "1:1" };
    const answer = await call("images_generate", { token: user.token, json, expect: [200] });
    const url = (answer.json as { url?: string } | undefined)?.url ?? "";
    fileName = /\/v1\/images\/files\/([0-9a-f]{32}\.png)$/.exec(url)?.[1];
  }, 60_000);

  op("images_file", async () => {
    // No credential: image links are public, their names unguessable.
    const answer = await call("images_file", { path: { name: fileName ?? EXAMPLE_FILE }, expect: fileName ? [200] : [200, 404] });
    if (answer.status !== 200 || !fileName) return;
    expect(answer.contentType).toBe("image/png");
    expect(Array.from(answer.bytes.subarray(0, 4))).toEqual([0x89, 0x50, 0x4e, 0x47]);
    expect(answer.headers.get("cache-control")).toContain("max-age=31536000");
  });
});
