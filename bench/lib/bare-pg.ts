// The baseline of `npm run bench:http`'s authenticated read: a bare node:http server with a pg pool
// that does what GET /v1/personas/:id needs and nothing else: the credential lookup (an API key by
// its SHA-256, or a session JWT verified and its session checked) and then the persona read, with
// the service's own SQL, answering the row as JSON. PROCESSES > 1 runs it under node:cluster on one
// port, like `persona serve --processes N`. DATABASE_URL, PORT.
import cluster from "node:cluster";
import { createHash } from "node:crypto";
import { createServer } from "node:http";
import { jwtVerify } from "jose";
import pg from "pg";

const processes = Number(process.env.PROCESSES ?? 1);

const API_KEY_SQL = 'select "k".*, "u"."deleted_at" as "user_deleted_at" from "api_keys" as "k" inner join "users" as "u" on "u"."id" = "k"."user_id" where "k"."key_hash" = $1 limit $2';
const SESSION_SQL =
  'select "s"."user_id" from "sessions" as "s" inner join "users" as "u" on "u"."id" = "s"."user_id" where "s"."id" = $1 and "s"."user_id" = $2 and "s"."revoked_at" is null and "u"."deleted_at" is null limit $3';
const PERSONA_SQL =
  'select "p".* from "personas" as "p" where "p"."id" = $1 and ("p"."creator_id" = $2 or ("p"."is_public" = $3 and not exists (select 1 from "users" as "creator" where creator.id = p.creator_id and "creator"."deleted_at" is not null))) limit $4';

async function serve(): Promise<void> {
  const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 10 });
  const secret = new TextEncoder().encode(((await pool.query("select value from instance_secrets where name = 'jwt'")).rows[0] as { value: string }).value);
  const answer = (res: import("node:http").ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
    res.end(text);
  };
  async function userOf(headers: import("node:http").IncomingHttpHeaders): Promise<string | undefined> {
    const bearer = /^Bearer\s+(\S+)$/i.exec(headers.authorization ?? "")?.[1];
    const key = (headers["x-api-key"] as string | undefined) ?? (bearer?.startsWith("pk_") ? bearer : undefined);
    if (key) {
      const row = (await pool.query(API_KEY_SQL, [createHash("sha256").update(key).digest("hex"), 1])).rows[0] as
        | { user_id: string; revoked_at: Date | null; expires_at: Date | null; user_deleted_at: Date | null }
        | undefined;
      if (!row || row.revoked_at || row.user_deleted_at || (row.expires_at && row.expires_at <= new Date())) return undefined;
      return row.user_id;
    }
    if (!bearer) return undefined;
    try {
      const { payload } = await jwtVerify(bearer, secret, { algorithms: ["HS256"] });
      const found = (await pool.query(SESSION_SQL, [payload.sid, payload.sub, 1])).rows[0] as { user_id: string } | undefined;
      return found?.user_id;
    } catch {
      return undefined;
    }
  }
  const server = createServer((req, res) => {
    if (req.url === "/healthz") return answer(res, 200, { status: "ok" });
    const id = /^\/v1\/personas\/([^/?]+)/.exec(req.url ?? "")?.[1];
    if (req.method !== "GET" || !id) return answer(res, 404, { error: { code: "not_found", message: "No such route" } });
    userOf(req.headers)
      .then(async (userId) => {
        if (!userId) return answer(res, 401, { error: { code: "unauthorized", message: "Credentials are missing, invalid, expired or revoked" } });
        const row = (await pool.query(PERSONA_SQL, [id, userId, true, 1])).rows[0] as unknown;
        if (!row) return answer(res, 404, { error: { code: "not_found", message: "Persona not found" } });
        answer(res, 200, row);
      })
      .catch(() => answer(res, 500, { error: { code: "internal_error", message: "Internal server error" } }));
  });
  server.keepAliveTimeout = 5_000;
  server.listen(Number(process.env.PORT ?? 0), "127.0.0.1");
  process.on("SIGTERM", () => {
    server.close(() => void pool.end().then(() => process.exit(0)));
    server.closeAllConnections();
  });
}

if (processes > 1 && cluster.isPrimary) {
  for (let i = 0; i < processes; i++) cluster.fork();
  process.on("SIGTERM", () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill("SIGTERM");
    setTimeout(() => process.exit(0), 2_000).unref();
  });
} else {
  await serve();
}
