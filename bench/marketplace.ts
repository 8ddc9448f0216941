// `npm run bench:marketplace`: the marketplace and studio analytics on PostgreSQL at the sizes of
// issue 14 (100,000 listings, 1,000,000 ratings, 10,000,000 messages over 90 days), generated in
// SQL in a scratch database on BENCH_DATABASE_URL's server (dropped at the end), messages in
// statements of BENCH_CHUNK (default 250,000) through every rollup trigger, or with BENCH_BULK=1
// with the rollup triggers off and the rollups computed afterwards as migration 0014 does (much
// faster at full size; the write cost below still measures the triggers). Measures:
// - p50/p99 of sequential requests next to GET /healthz taken the same way in the same run:
//   marketplace list with `q`; marketplace list `sort=trending`; analytics `period=90d` of the
//   busiest persona (the three targets of the issue); explore `sort=trending` for information;
// - the trending refresh (every score from the hourly rollup), once;
// - the write cost of the rollups: a chat turn (one statement of a user and an assistant message)
//   with no rollup trigger, with the rollups as migration 0011 left them, and with 0014's, in
//   alternating rounds, both on a day the conversation already had and on a new day.
// BENCH_SCALE (default 1) multiplies every size; BENCH_SAMPLES (default 300) requests per figure;
// BENCH_KEEP=1 keeps the scratch database; BENCH_REUSE=<its URL> measures again on a kept one
// (generated at the same BENCH_SCALE) without generating, and keeps it.
import knexFactory from "knex";
import pg from "pg";
import type { Knex } from "knex";
import { rebuildDailyRollups } from "../server/toolkit/db/migrations/0014_marketplace_rollups.ts";
import { refreshTrendingScores } from "../server/areas/personas/trending-store.ts";
import { trendingSinceHour } from "../server/areas/personas/trending.ts";
import { childGroup } from "./lib/children.ts";
import { benchServer, scratchDatabase } from "./lib/database.ts";
import { json, latency } from "./lib/requests.ts";
import { startPersona } from "./lib/persona.ts";

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const size = (name: string, full: number) => Math.max(1, Math.round(Number(process.env[name] ?? full * SCALE)));
const LISTINGS = size("BENCH_LISTINGS", 100_000);
const RATINGS = size("BENCH_RATINGS", 1_000_000);
const MESSAGES = size("BENCH_MESSAGES", 10_000_000);
const USERS = Math.max(100, Math.round(RATINGS / 10));
const CONVERSATIONS = Math.max(10, Math.round(MESSAGES / 20));
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);
const CHUNK = Number(process.env.BENCH_CHUNK ?? 250_000);
const BULK = process.env.BENCH_BULK === "1";
const REUSE = process.env.BENCH_REUSE;
const OWNER = { email: "owner@bench.example", username: "busy_owner", password: "Correct-horse-9" };
const WRITE_ROUNDS = 4;
const WRITE_TURNS = 50;
const TARGETS = { qP50: 20, qP99: 60, trendingP50: 20, trendingP99: 60, analyticsP50: 50 };
const WORDS = "astronomy cooking chess poetry history physics travel music fitness finance gardening coding".split(" ");

const group = childGroup();


/** Everything in SQL; ids are md5 hashes of an index, so rows can name each other without lookups. */
async function generate(db: pg.Client, knex: Knex, ownerId: string): Promise<void> {
  const step = async (label: string, sql: string, params: unknown[] = []) => {
    const started = performance.now();
    await db.query(sql, params);
    process.stderr.write(`  ${label}: ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  };
  const words = `ARRAY[${WORDS.map((w) => `'${w}'`).join(",")}]`;
  // Generating sorts millions of rows (grouping into rollups); the default 4 MB would spill every
  // sort to disk. Only this session and the rebuild's, never the server under test.
  await db.query("SET work_mem = '256MB'");
  await step(`${USERS} users`, `INSERT INTO users (id, email, username, password_hash, display_name, email_verified, plan, created_at, updated_at)
     SELECT md5('user' || i)::uuid, 'u' || i || '@bench.example', 'user_' || i, 'x', 'User ' || i, true, 'free', now(), now() FROM generate_series(1, $1::int) i`, [USERS]);
  // Persona 1 is the busiest and belongs to the registered owner, who asks for its analytics.
  await step(`${LISTINGS} personas`, `INSERT INTO personas (id, creator_id, name, description, instructions, model, is_public, category, message_count, created_at, updated_at, published_at)
     SELECT md5('persona' || j)::uuid, CASE WHEN j = 1 THEN $2::uuid ELSE md5('user' || (1 + j % $3::int))::uuid END,
            initcap(w[1 + j % 12]) || ' helper ' || j, 'Talks about ' || w[1 + (j * 7) % 12] || ' and ' || w[1 + (j * 5) % 12], 'x', 'bench', true, 'other',
            (j * 7919) % 5000, now() - (j % 2000) * interval '1 hour', now(), now()
       FROM generate_series(1, $1::int) j, (SELECT ${words} AS w) ws`, [LISTINGS, ownerId, USERS]);
  await step(`${LISTINGS} listings`, `INSERT INTO marketplace_listings (id, persona_id, creator_id, category, tags, pricing, published_at, created_at, updated_at)
     SELECT md5('listing' || j)::uuid, p.id, p.creator_id, (ARRAY['productivity','education','entertainment','lifestyle','developer-tools','other'])[1 + j % 6],
            ARRAY[w[1 + j % 12], w[1 + (j * 3) % 12]], 'free', p.created_at, p.created_at, p.created_at
       FROM generate_series(1, $1::int) j JOIN personas p ON p.id = md5('persona' || j)::uuid, (SELECT ${words} AS w) ws`, [LISTINGS]);
  await step(`${RATINGS} ratings`, `INSERT INTO ratings (id, listing_id, user_id, rating, review, created_at, updated_at)
     SELECT md5('rating' || k)::uuid, md5('listing' || (1 + (k::bigint * 31) % $2::int))::uuid, md5('user' || (1 + k / $2::int % $3::int))::uuid,
            1 + (k::bigint * 7) % 5, NULL, now() - (k % 90) * interval '1 day', now() - (k % 90) * interval '1 day'
       FROM generate_series(0, $1::int - 1) k ON CONFLICT DO NOTHING`, [RATINGS, LISTINGS, USERS]);
  await step("listing counters", `UPDATE marketplace_listings l SET review_count = r.n, rating_sum = r.s, rating_1 = r.c1, rating_2 = r.c2, rating_3 = r.c3, rating_4 = r.c4, rating_5 = r.c5, use_count = r.n / 3
       FROM (SELECT listing_id, count(*) n, sum(rating) s, count(*) FILTER (WHERE rating = 1) c1, count(*) FILTER (WHERE rating = 2) c2, count(*) FILTER (WHERE rating = 3) c3,
                    count(*) FILTER (WHERE rating = 4) c4, count(*) FILTER (WHERE rating = 5) c5 FROM ratings GROUP BY listing_id) r WHERE r.listing_id = l.id`);
  // A tenth of the conversations are with persona 1; the rest spread over every persona.
  await step(`${CONVERSATIONS} conversations`, `INSERT INTO conversations (id, user_id, persona_id, title, message_count, created_at, updated_at)
     SELECT md5('conversation' || c)::uuid, md5('user' || (1 + c % $3::int))::uuid,
            md5('persona' || CASE WHEN c % 10 = 0 THEN 1 ELSE 1 + (c * 17) % $2::int END)::uuid, NULL, 20, now(), now()
       FROM generate_series(0, $1::int - 1) c`, [CONVERSATIONS, LISTINGS, USERS]);
  // In chunks, so that no statement's rollup work (transition tables, arrays) grows with the whole load.
  if (BULK) await db.query("ALTER TABLE messages DISABLE TRIGGER messages_activity_rollup, DISABLE TRIGGER messages_daily_rollup");
  const started = performance.now();
  for (let from = 0; from < MESSAGES; from += CHUNK) {
    await db.query(
      `INSERT INTO messages (id, conversation_id, user_id, persona_id, role, content, created_at)
       SELECT md5('message' || m)::uuid, c.id, c.user_id, c.persona_id, CASE WHEN m % 2 = 0 THEN 'user' ELSE 'assistant' END, 'hello',
              now() - ((m::bigint * 7919) % (90 * 86400)) * interval '1 second'
         FROM generate_series($3::int, least($1::int, $3::int + $4::int) - 1) m JOIN conversations c ON c.id = md5('conversation' || (m % $2::int))::uuid`,
      [MESSAGES, CONVERSATIONS, from, CHUNK],
    );
  }
  process.stderr.write(`  ${MESSAGES} messages over 90 days (${BULK ? "without" : "with"} the rollup triggers): ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  if (BULK) {
    await step("hourly rollup", "INSERT INTO persona_activity_hourly (persona_id, hour, messages) SELECT persona_id, floor(extract(epoch FROM created_at) / 3600)::int, count(*) FROM messages GROUP BY 1, 2");
    const rebuilt = performance.now();
    await knex.raw("SET work_mem = '256MB'");
    await rebuildDailyRollups(knex);
    await knex.raw("RESET work_mem");
    await db.query("ALTER TABLE messages ENABLE TRIGGER messages_activity_rollup, ENABLE TRIGGER messages_daily_rollup");
    process.stderr.write(`  daily rollups (migration 0014's rebuild): ${((performance.now() - rebuilt) / 1000).toFixed(1)} s\n`);
  }
  await db.query("RESET work_mem");
  await step("VACUUM ANALYZE", "VACUUM ANALYZE");
}



const ms = (value: number) => `${value.toFixed(2)} ms`;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

type TriggerMode = "none" | "0011" | "all";
const MODES: TriggerMode[] = ["none", "0011", "all"];

/**
 * The daily rollup as migration 0011 left it (insert-only, per user and day), as a trigger of the
 * scratch database, to weigh what migration 0014 adds against it. It leaves the senders rollup
 * behind, so the write cost is measured last.
 */
async function installRollup0011(db: pg.Client): Promise<void> {
  await db.query(`
    CREATE OR REPLACE FUNCTION bench_daily_rollup_0011() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO persona_daily_users (persona_id, day, user_id, messages, sent)
      SELECT persona_id, floor(extract(epoch FROM created_at) / 86400)::int, user_id, count(*), count(*) FILTER (WHERE role = 'user')
        FROM new_messages GROUP BY 1, 2, 3
      ON CONFLICT (persona_id, day, user_id) DO UPDATE SET
        messages = persona_daily_users.messages + excluded.messages, sent = persona_daily_users.sent + excluded.sent;
      RETURN NULL;
    END $$`);
  await db.query("DROP TRIGGER IF EXISTS bench_daily_rollup_0011 ON messages");
  await db.query(`
    CREATE TRIGGER bench_daily_rollup_0011 AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_messages FOR EACH STATEMENT EXECUTE FUNCTION bench_daily_rollup_0011()`);
}

/** none: no rollup trigger; 0011: the hourly rollup and 0011's daily one; all: the hourly rollup and 0014's daily ones. */
async function setTriggers(db: pg.Client, mode: TriggerMode): Promise<void> {
  const on = (yes: boolean) => (yes ? "ENABLE" : "DISABLE");
  await db.query(
    `ALTER TABLE messages ${on(mode !== "none")} TRIGGER messages_activity_rollup, ${on(mode === "all")} TRIGGER messages_daily_rollup, ${on(mode === "0011")} TRIGGER bench_daily_rollup_0011`,
  );
}

/**
 * Milliseconds per chat-turn statement in each trigger mode, on a day its conversation already had
 * and on a day it never had (a day ahead, different every time: the path where the senders rollup
 * recomputes gaps). Modes and kinds alternate within each round, so that outside load and caches
 * fall on all alike; a first round, not counted, makes today a day every conversation has.
 */
async function writeCost(db: pg.Client): Promise<Record<"sameDay" | "newDay", Record<TriggerMode, number>>> {
  await installRollup0011(db);
  const times = { sameDay: { none: [] as number[], "0011": [] as number[], all: [] as number[] }, newDay: { none: [] as number[], "0011": [] as number[], all: [] as number[] } };
  let future = 0;
  for (let round = -1; round < WRITE_ROUNDS; round++) {
    for (const mode of MODES) {
      await setTriggers(db, mode);
      for (const kind of ["sameDay", "newDay"] as const) {
        const days = kind === "sameDay" ? 0 : ++future;
        for (let i = 0; i < WRITE_TURNS; i++) {
          const started = performance.now();
          await db.query(
            `INSERT INTO messages (id, conversation_id, user_id, persona_id, role, content, created_at)
             SELECT gen_random_uuid(), c.id, c.user_id, c.persona_id, r.role, 'bench', now() + $2::int * interval '1 day'
               FROM conversations c, (VALUES ('user'), ('assistant')) r(role) WHERE c.id = md5('conversation' || $1::int)::uuid`,
            [(i * 7919) % CONVERSATIONS, days],
          );
          if (round >= 0) times[kind][mode].push(performance.now() - started);
        }
      }
    }
  }
  await setTriggers(db, "all");
  const medians = (of: Record<TriggerMode, number[]>) => ({ none: median(of.none), "0011": median(of["0011"]), all: median(of.all) });
  return { sameDay: medians(times.sameDay), newDay: medians(times.newDay) };
}

async function main(database: { url: string }): Promise<number> {
  console.log(`node ${process.version}; database: PostgreSQL (${REUSE ? "BENCH_REUSE, a kept scratch database" : "BENCH_DATABASE_URL, scratch database"})`);
  console.log(`scale ${SCALE}: ${LISTINGS} listings, ${RATINGS} ratings, ${MESSAGES} messages over 90 days (${CONVERSATIONS} conversations, ${USERS} users)`);
  const persona = await startPersona({ DATABASE_URL: database.url, WORKER_ENABLED: "false", RATE_LIMIT_PER_MINUTE: "1000000" });
  group.add(persona.child);
  const url = persona.url;
  const db = new pg.Client({ connectionString: database.url });
  // A failed run drops the database under this connection; that is not a second failure.
  db.on("error", () => {});
  await db.connect();
  const knex = knexFactory({ client: "pg", connection: database.url, pool: { min: 0, max: 1 } });
  if (!REUSE) {
    const registered = await json(url, "/v1/auth/register", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(OWNER) });
    if (registered.status !== 201) throw new Error(`register answered ${registered.status}`);
    process.stderr.write("generating data in SQL...\n");
    await generate(db, knex, (registered.body.user as { id: string }).id);
  }
  // Signed in after generating, which can outlast an access token.
  const login = await json(url, "/v1/auth/login", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: OWNER.email, password: OWNER.password }) });
  if (login.status !== 200) throw new Error(`login answered ${login.status}`);
  const headers = { authorization: `Bearer ${login.body.access_token as string}` };
  const busiest = (await db.query<{ id: string }>("SELECT md5('persona1')::uuid::text AS id")).rows[0]!.id;

  const refreshStarted = performance.now();
  const refreshed = await refreshTrendingScores(knex, trendingSinceHour(new Date()));
  const refreshMs = performance.now() - refreshStarted;
  await knex.destroy();
  await db.query("VACUUM ANALYZE");

  process.stderr.write("latency...\n");
  const healthz = await latency(url, () => "/healthz", {}, 200, SAMPLES);
  const categories = await latency(url, () => "/v1/marketplace/categories", {}, 200, SAMPLES);
  const q = await latency(url, (i) => `/v1/marketplace?q=${WORDS[i % WORDS.length]}`, {}, 200, SAMPLES);
  const trending = await latency(url, () => "/v1/marketplace?sort=trending", {}, 200, SAMPLES);
  const analytics = await latency(url, () => `/v1/studio/${busiest}/analytics?period=90d`, headers, 200, SAMPLES);
  const explore = await latency(url, () => "/v1/personas/explore?sort=trending", headers, 200, SAMPLES);
  const sample = await json(url, `/v1/studio/${busiest}/analytics?period=90d`, { headers });
  const sampleQ = await json(url, `/v1/marketplace?q=${WORDS[0]}`);

  process.stderr.write("write cost...\n");
  const { sameDay, newDay } = await writeCost(db);
  await db.end();

  console.log("");
  console.log(`busiest persona: ${sample.body.message_count as number} messages, ${sample.body.unique_users as number} users in 90 days`);
  console.log(`q=${WORDS[0]} matches ${sampleQ.body.total as number} listings`);
  console.log(`trending refresh (every score from the hourly rollup): ${ms(refreshMs)}, ${refreshed} scores written`);
  console.log(`latency, ${SAMPLES} sequential requests each:`);
  console.log(`  GET /healthz (baseline)            p50 ${ms(healthz.p50)}   p99 ${ms(healthz.p99)}`);
  console.log(`  marketplace categories (10 rows)   p50 ${ms(categories.p50)}   p99 ${ms(categories.p99)}   (${(categories.p50 / healthz.p50).toFixed(1)} x healthz)`);
  console.log(`  marketplace list q=<word>          p50 ${ms(q.p50)}   p99 ${ms(q.p99)}   (${(q.p50 / healthz.p50).toFixed(1)} x healthz)`);
  console.log(`  marketplace list sort=trending     p50 ${ms(trending.p50)}   p99 ${ms(trending.p99)}   (${(trending.p50 / healthz.p50).toFixed(1)} x healthz)`);
  console.log(`  analytics period=90d, busiest      p50 ${ms(analytics.p50)}   p99 ${ms(analytics.p99)}   (${(analytics.p50 / healthz.p50).toFixed(1)} x healthz)`);
  console.log(`  explore sort=trending (no target)  p50 ${ms(explore.p50)}   p99 ${ms(explore.p99)}   (${(explore.p50 / healthz.p50).toFixed(1)} x healthz)`);
  console.log(`write cost, median of ${WRITE_ROUNDS * WRITE_TURNS} chat-turn statements (2 messages) per mode:`);
  for (const [label, cost] of [["a day already active", sameDay], ["a new day", newDay]] as const) {
    console.log(
      `  ${label.padEnd(20)} no rollup ${ms(cost.none)}   rollups of 0011 ${ms(cost["0011"])} (${(cost["0011"] / cost.none).toFixed(2)} x)   rollups of 0014 ${ms(cost.all)} (${(cost.all / cost.none).toFixed(2)} x, ${(cost.all / cost["0011"]).toFixed(2)} x 0011)`,
    );
  }
  const verdict = (ok: boolean) => (ok ? "ok" : "MISSED");
  console.log("");
  console.log(`bench:marketplace q p50 = ${ms(q.p50)} p99 = ${ms(q.p99)} (targets ${TARGETS.qP50}/${TARGETS.qP99} ms) ${verdict(q.p50 <= TARGETS.qP50 && q.p99 <= TARGETS.qP99)}`);
  console.log(`bench:marketplace trending p50 = ${ms(trending.p50)} p99 = ${ms(trending.p99)} (targets ${TARGETS.trendingP50}/${TARGETS.trendingP99} ms) ${verdict(trending.p50 <= TARGETS.trendingP50 && trending.p99 <= TARGETS.trendingP99)}`);
  console.log(`bench:marketplace analytics 90d p50 = ${ms(analytics.p50)} (target ${TARGETS.analyticsP50} ms) ${verdict(analytics.p50 <= TARGETS.analyticsP50)}`);
  return 0;
}

let code = 1;
let database: { url: string; drop: () => Promise<void> } | undefined;
try {
  database = REUSE ? { url: REUSE, drop: async () => {} } : await scratchDatabase(benchServer(), "market");
  code = await main(database);
} catch (error) {
  console.error(`bench:marketplace failed: ${error instanceof Error ? error.message : String(error)}`);
  group.dump();
} finally {
  await group.stopAll();
  // BENCH_KEEP=1 keeps the scratch database, to EXPLAIN its queries afterwards.
  if (process.env.BENCH_KEEP === "1" || REUSE) console.log(`kept the scratch database: ${database?.url ?? ""}`);
  else await database?.drop();
}
process.exitCode = code;
