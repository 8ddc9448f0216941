import { beforeAll, describe, expect } from "vitest";
import { call } from "./support/client.ts";
import { createPersona, registerUser, type TestUser } from "./support/fixtures.ts";
import { op } from "./support/op.ts";
import { idOr } from "./support/placeholders.ts";
import { target } from "./support/target.ts";

const NOTES = [
  "Venus never strays far from the Sun in our sky because its orbit lies inside Earth's orbit.",
  "That is why Venus shows up only as a morning star or an evening star, low near the horizon.",
  "Mars looks red because iron minerals in its dust have oxidised, much like rust.",
].join("\n");

function upload(name: string, text: string): FormData {
  const form = new FormData();
  form.append("file", new Blob([text], { type: "text/plain" }), name);
  return form;
}

describe("knowledge", () => {
  let user: TestUser;
  let personaId: string | undefined;
  let documentId: string | undefined;

  beforeAll(async () => {
    user = await registerUser("knowledge");
    personaId = await createPersona(user);
  });

  op("knowledge_upload", async () => {
    const answer = await call("knowledge_upload", {
      token: user.token,
      path: { persona_id: idOr(personaId) },
      multipart: upload("venus-notes.txt", NOTES),
      expect: [202],
    });
    documentId = (answer.json as { id: string }).id;
  });

  op("knowledge_list", async () => {
    const answer = await call("knowledge_list", { token: user.token, path: { persona_id: idOr(personaId) }, query: { limit: 10 }, expect: [200] });
    if (target.stateful && documentId) expect((answer.json as { data: { id: string }[] }).data.map((d) => d.id)).toContain(documentId);
  });

  op("knowledge_get", async () => {
    // Processing is a job: wait (briefly) for it so that the query below has chunks to find.
    const path = { persona_id: idOr(personaId), doc_id: idOr(documentId) };
    const deadline = Date.now() + 15_000;
    for (;;) {
      const answer = await call("knowledge_get", { token: user.token, path, expect: [200] });
      const status = (answer.json as { status?: string }).status;
      if (!target.stateful || status !== "processing" || Date.now() > deadline) {
        if (target.stateful && documentId) expect(status).toBe("ready");
        return;
      }
      await new Promise((wait) => setTimeout(wait, 250));
    }
  }, 30_000);

  op("knowledge_query", async () => {
    const json = { query: "Why does Venus never stray far from the Sun?", limit: 2 };
    const answer = await call("knowledge_query", { token: user.token, path: { persona_id: idOr(personaId) }, json, expect: [200] });
    if (target.stateful && documentId) expect(JSON.stringify(answer.json)).toContain("Venus");
  });

  op("knowledge_delete", async () => {
    await call("knowledge_delete", { token: user.token, path: { persona_id: idOr(personaId), doc_id: idOr(documentId) }, expect: [200] });
  });
});
