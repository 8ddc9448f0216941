// `npm run bench:social`: the social area on PostgreSQL at the sizes of issue 15 (200,000 users,
// 2,000,000 follows, 100,000 public personas, 5,000,000 likes), generated in SQL in a scratch
// database on BENCH_DATABASE_URL's server (dropped at the end). Measures, against baselines taken
// in the same run and the same way:
// - user search with a `q` of 3 characters: p50/p99 of sequential requests, next to GET /healthz;
// - the feed of a user following 1,000 creators: p50/p99 likewise;
// - share-link redirect throughput under autocannon, next to GET /healthz.
// BENCH_SCALE (default 1) multiplies every size; BENCH_USERS, BENCH_FOLLOWS, BENCH_PERSONAS and
// BENCH_LIKES set one each. BENCH_SAMPLES (default 300) requests per latency figure.
// Generation takes minutes at full size: BENCH_KEEP=1 keeps the scratch database (its name is
// printed), and BENCH_REUSE=<name> measures again on a kept one (no generation; the server's start
// applies any newer migration to it; the sizes printed are then those of the run that made it).
import os from "node:os";
import knexFactory from "knex";
import pg from "pg";
import { refreshTrendingSet } from "../server/areas/personas/trending-store.ts";
import { feedPage, searchUsers } from "../server/areas/social/store.ts";
import { TRENDING_MIN_MESSAGES, TRENDING_SET_SIZE, trendingSinceHour } from "../server/areas/personas/trending.ts";
import { childGroup } from "./lib/children.ts";
import { benchServer, scratchDatabase } from "./lib/database.ts";
import { json, latency } from "./lib/requests.ts";
import { measure, type LoadOptions, type LoadResult } from "./lib/load.ts";
import { startPersona } from "./lib/persona.ts";

const SCALE = Number(process.env.BENCH_SCALE ?? 1);
const size = (name: string, full: number) => Math.max(1, Math.round(Number(process.env[name] ?? full * SCALE)));
const USERS = size("BENCH_USERS", 200_000);
const FOLLOWS = size("BENCH_FOLLOWS", 2_000_000);
const PERSONAS = size("BENCH_PERSONAS", 100_000);
const LIKES = size("BENCH_LIKES", 5_000_000);
const FEED_FOLLOWS = Math.min(1000, Math.floor(USERS / 2) - 1);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 300);
const TARGETS = { searchP50Ms: 15, feedP50Ms: 20, redirectRatio: 0.5 };
// Throughput is measured in alternating rounds (healthz, redirect, healthz, redirect, ...), so that
// load from outside the bench on a shared machine falls on both alike.
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const load: LoadOptions = { connections: 20, durationS: 5, warmupS: 1, pipelining: 1 };

// Syllables that usernames and display names are made of, so that a 3-character query matches a
// realistic share of users rather than all or none.
const SYLLABLES = "ma ra ok ka fo li na jo be rg lu ka ze ti mo su an el io ve da ri no ha pe ul as or ki me to ba ne si gu la wy ch ar en".split(" ");

const group = childGroup();
const KEEP = process.env.BENCH_KEEP === "1";
const REUSE = process.env.BENCH_REUSE;

/** A database a kept run left on `server`, by name. */
function existingDatabase(server: string, name: string): { url: string; name: string; drop: () => Promise<void> } {
  if (!/^persona_bench_social_[0-9a-f]+$/.test(name)) throw new Error(`BENCH_REUSE names no kept bench database: ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  return { url: url.toString(), name, drop: async () => {} };
}


/** Everything in SQL: ids are md5 hashes of an index, so rows can name each other without lookups. */
async function generate(db: pg.Client, feedUserId: string): Promise<void> {
  const syllables = `ARRAY[${SYLLABLES.map((s) => `'${s}'`).join(",")}]`;
  const n = SYLLABLES.length;
  const step = async (label: string, sql: string, params: unknown[] = []) => {
    const started = performance.now();
    await db.query(sql, params);
    process.stderr.write(`  ${label}: ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  };
  await step(
    `${USERS} users`,
    `INSERT INTO users (id, email, username, password_hash, display_name, email_verified, plan, created_at, updated_at)
     SELECT md5('user' || i)::uuid, 'u' || i || '@bench.example',
            s[1 + (i * 7) % ${n}] || s[1 + (i * 13 / 5) % ${n}] || s[1 + (i / 3) % ${n}] || '_' || i, 'x',
            initcap(s[1 + (i * 11) % ${n}] || s[1 + (i / 7) % ${n}]) || ' ' || initcap(s[1 + (i * 3) % ${n}] || s[1 + (i / 11) % ${n}] || s[1 + i % ${n}]),
            true, 'free', now() - (i % 1000) * interval '1 hour', now()
       FROM generate_series(1, $1::int) i, (SELECT ${syllables} AS s) syl`,
    [USERS],
  );
  // Persona j belongs to user 2 + 2 * (j % (USERS / 2)): even users are the creators.
  const creators = Math.floor(USERS / 2);
  await step(
    `${PERSONAS} public personas`,
    `INSERT INTO personas (id, creator_id, name, description, instructions, model, is_public, category, message_count, created_at, updated_at, published_at)
     SELECT md5('persona' || j)::uuid, md5('user' || (2 + 2 * (j % $2::int)))::uuid, 'Persona ' || j, 'A persona for the benchmark, number ' || j,
            'x', 'bench', true, 'other', (j * 7919) % 5000, now() - (j % 2000) * interval '1 hour', now(), now() - (j % 2000) * interval '1 hour'
       FROM generate_series(1, $1::int) j`,
    [PERSONAS, creators - 1],
  );
  // Follower k % USERS follows 10-ish distinct others: offsets 1 + (r * 37) % (USERS - 1) differ per round r.
  await step(
    `${FOLLOWS} follows`,
    `INSERT INTO follows (id, follower_id, following_id, created_at)
     SELECT md5('follow' || k)::uuid, md5('user' || (1 + k % $2::int))::uuid,
            md5('user' || (1 + (k % $2::int + 1 + ((k / $2::int) * 37) % ($2::int - 1)) % $2::int))::uuid,
            now() - (k % 5000) * interval '1 minute'
       FROM generate_series(0, $1::int - 1) k
     ON CONFLICT DO NOTHING`,
    [FOLLOWS, USERS],
  );
  await step(
    `${FEED_FOLLOWS} follows of the feed user`,
    `INSERT INTO follows (id, follower_id, following_id, created_at)
     SELECT md5('feedfollow' || c)::uuid, $1::uuid, md5('user' || (2 + 2 * c))::uuid, now() - c * interval '1 minute'
       FROM generate_series(0, $2::int - 1) c`,
    [feedUserId, FEED_FOLLOWS],
  );
  await step(
    `${LIKES} likes`,
    `INSERT INTO likes (id, user_id, persona_id, created_at)
     SELECT md5('like' || k)::uuid, md5('user' || (1 + k % $2::int))::uuid,
            md5('persona' || (1 + ((k % $2::int) * 31 + (k / $2::int) * 7919) % $3::int))::uuid, now() - (k % 5000) * interval '1 minute'
       FROM generate_series(0, $1::int - 1) k
     ON CONFLICT DO NOTHING`,
    [LIKES, USERS, PERSONAS],
  );
  // A week of hourly activity for 1% of the personas, for the trending set.
  await step(
    "activity rollup",
    `INSERT INTO persona_activity_hourly (persona_id, hour, messages)
     SELECT md5('persona' || (1 + (j * 97) % $1::int))::uuid, floor(extract(epoch FROM now()) / 3600)::int - h, 1 + (j * h) % 9
       FROM generate_series(1, greatest(1, $1::int / 100)) j, generate_series(0, 167, 6) h
     ON CONFLICT DO NOTHING`,
    [PERSONAS],
  );
  await step("VACUUM ANALYZE", "VACUUM ANALYZE");
}



const ms = (value: number) => `${value.toFixed(2)} ms`;
const rpsRow = (label: string, r: LoadResult) =>
  `${label.padEnd(34)} ${r.requestsPerSecond.toFixed(0).padStart(7)} req/s   p50 ${String(r.p50).padStart(3)} ms   p99 ${String(r.p99).padStart(4)} ms   (${r.total} requests, non-2xx ${r.non2xx})`;

async function main(database: { url: string }): Promise<number> {
  console.log(`node ${process.version}; database: PostgreSQL (BENCH_DATABASE_URL, scratch database)`);
  console.log(`scale ${SCALE}: ${USERS} users, ${FOLLOWS} follows, ${PERSONAS} public personas, ${LIKES} likes; feed user follows ${FEED_FOLLOWS} creators`);
  const persona = await startPersona({ DATABASE_URL: database.url, WORKER_ENABLED: "false" });
  group.add(persona.child);
  const url = persona.url;
  const credentials = { email: "feed@bench.example", username: "feed_reader", password: "Correct-horse-9" };
  const registered = await json(url, REUSE ? "/v1/auth/login" : "/v1/auth/register", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(REUSE ? { email: credentials.email, password: credentials.password } : credentials),
  });
  if (registered.status !== (REUSE ? 200 : 201)) throw new Error(`${REUSE ? "login" : "register"} answered ${registered.status}`);
  const feedUserId = (registered.body.user as { id: string }).id;
  const headers = { authorization: `Bearer ${registered.body.access_token as string}` };

  if (!REUSE) {
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    process.stderr.write("generating data in SQL...\n");
    await generate(db, feedUserId);
    await db.end();
  }

  const knex = knexFactory({ client: "pg", connection: database.url, pool: { min: 0, max: 1 } });
  const refreshStarted = performance.now();
  const trending = await refreshTrendingSet(knex, trendingSinceHour(new Date()), TRENDING_MIN_MESSAGES, TRENDING_SET_SIZE, new Date());
  const refreshMs = performance.now() - refreshStarted;
  await knex.destroy();

  const shared = await json(url, `/v1/social/share/${await firstFeedPersona(url, headers)}`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ platform: "link" }),
  });
  if (shared.status !== 200) throw new Error(`share answered ${shared.status}`);
  const sharePath = new URL(shared.body.share_url as string).pathname;

  // 3-character queries cut from the syllables the names are made of.
  const queries = SYLLABLES.flatMap((a) => SYLLABLES.map((b) => (a + b).slice(0, 3))).filter((q, i, all) => all.indexOf(q) === i);
  process.stderr.write("latency: healthz, search, feed...\n");
  const loadBefore = os.loadavg()[0]!.toFixed(2);
  const healthz = await latency(url, () => "/healthz", {}, 200, SAMPLES);
  const search = await latency(url, (i) => `/v1/social/search?q=${queries[(i * 7) % queries.length]}`, headers, 200, SAMPLES);
  const feed = await latency(url, () => "/v1/social/feed?limit=20", headers, 200, SAMPLES);
  const feedDeep = await latency(url, (i) => `/v1/social/feed?limit=20&offset=${(i * 20) % 1000}`, headers, 200, SAMPLES);
  // The same reads without HTTP, auth or the server process: the store's statement through knex on
  // one connection, next to a `SELECT 1` round trip, to tell the SQL's share of each p50.
  const direct = knexFactory({ client: "pg", connection: database.url, pool: { min: 1, max: 1 } });
  const roundTrip = await timed(() => direct.raw("SELECT 1"), SAMPLES);
  const searchSql = await timed((i) => searchUsers(direct, queries[(i * 7) % queries.length]!, 20), SAMPLES);
  const feedSql = await timed(() => feedPage(direct, feedUserId, ["general"], { limit: 20, offset: 0 }), SAMPLES);
  await direct.destroy();
  const sampleSearch = await json(url, `/v1/social/search?q=${queries[0]}`, { headers });
  const sampleFeed = await json(url, "/v1/social/feed?limit=1", { headers });

  process.stderr.write("throughput: healthz, share redirect...\n");
  const healthzRounds: LoadResult[] = [];
  const redirectRounds: LoadResult[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    healthzRounds.push(await measure(url, { method: "GET", path: "/healthz" }, load));
    redirectRounds.push(await measure(url, { method: "GET", path: sharePath }, load));
  }
  const healthzLoad = combine(healthzRounds);
  const redirectLoad = combine(redirectRounds);
  await new Promise((wait) => setTimeout(wait, 1000));
  const opened = new pg.Client({ connectionString: database.url });
  await opened.connect();
  const { rows } = await opened.query<{ open_count: string }>("SELECT open_count FROM persona_shares WHERE code = $1", [sharePath.split("/").pop()]);
  await opened.end();
  const batches = ROUNDS * (load.warmupS + load.durationS) * (1000 / 200);

  console.log("");
  console.log(`trending refresh: ${ms(refreshMs)} (${trending} personas in the set)`);
  console.log(`search "${queries[0]}": ${sampleSearch.body.total as number} matching users; feed total: ${sampleFeed.body.total as number} items`);
  console.log(`latency, ${SAMPLES} sequential requests each (load average ${loadBefore} before, ${os.loadavg()[0]!.toFixed(2)} after):`);
  console.log(`  GET /healthz (baseline)               p50 ${ms(healthz.p50)}   p99 ${ms(healthz.p99)}`);
  console.log(`  user search, q of 3 characters        p50 ${ms(search.p50)}   p99 ${ms(search.p99)}   (${(search.p50 / healthz.p50).toFixed(1)} x healthz)`);
  console.log(`  feed, first page (1,000 followed)     p50 ${ms(feed.p50)}   p99 ${ms(feed.p99)}   (${(feed.p50 / healthz.p50).toFixed(1)} x healthz)`);
  console.log(`  feed, pages at offsets 0..980         p50 ${ms(feedDeep.p50)}   p99 ${ms(feedDeep.p99)}`);
  console.log(`SQL alone (the store's statement through knex, no HTTP), ${SAMPLES} sequential calls each:`);
  console.log(`  SELECT 1 (round-trip baseline)        p50 ${ms(roundTrip.p50)}   p99 ${ms(roundTrip.p99)}`);
  console.log(`  searchUsers, q of 3 characters        p50 ${ms(searchSql.p50)}   p99 ${ms(searchSql.p99)}   (${((100 * searchSql.p50) / search.p50).toFixed(0)}% of the HTTP p50)`);
  console.log(`  feedPage, first page                  p50 ${ms(feedSql.p50)}   p99 ${ms(feedSql.p99)}   (${((100 * feedSql.p50) / feed.p50).toFixed(0)}% of the HTTP p50)`);
  console.log(`throughput, autocannon ${load.connections} connections, ${ROUNDS} alternating rounds of ${load.durationS} s after ${load.warmupS} s warm-up each:`);
  console.log(`  ${rpsRow("GET /healthz (baseline)", healthzLoad)}`);
  console.log(`  ${rpsRow("GET /v1/shares/{code} (302)", redirectLoad)}`);
  console.log(`  per round, redirect/healthz: ${redirectRounds.map((r, i) => (r.requestsPerSecond / healthzRounds[i]!.requestsPerSecond).toFixed(2)).join(", ")}`);
  const ratio = redirectLoad.requestsPerSecond / healthzLoad.requestsPerSecond;
  console.log(`  opens counted: ${rows[0]?.open_count ?? 0} (the ${redirectLoad.total} measured redirects and the warm-up's), in at most ~${batches} batched UPDATEs`);
  console.log("");
  const verdict = (ok: boolean) => (ok ? "ok" : "MISSED");
  console.log(`bench:social search p50 = ${ms(search.p50)} (target <= ${TARGETS.searchP50Ms} ms) ${verdict(search.p50 <= TARGETS.searchP50Ms)}`);
  console.log(`bench:social feed p50 = ${ms(feed.p50)} (target <= ${TARGETS.feedP50Ms} ms) ${verdict(feed.p50 <= TARGETS.feedP50Ms)}`);
  console.log(`bench:social redirect/healthz = ${ratio.toFixed(2)} (target >= ${TARGETS.redirectRatio}) ${verdict(ratio >= TARGETS.redirectRatio)}`);
  const redirectsOk = Object.keys(redirectLoad.statusCounts).every((status) => status === "302") && redirectLoad.errors === 0;
  if (!redirectsOk) console.log(`bench:social: the redirect answered ${JSON.stringify(redirectLoad.statusCounts)}`);
  return redirectsOk ? 0 : 1;
}

/** p50/p99 of `samples` sequential calls after 20 unmeasured ones, like `latency` for requests. */
async function timed(call: (i: number) => Promise<unknown>, samples: number): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < samples + 20; i++) {
    const started = performance.now();
    await call(i);
    if (i >= 20) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return { p50: at(0.5), p99: at(0.99) };
}

/** The rounds as one run: mean requests/s, worst p50/p99, summed counts. */
function combine(rounds: LoadResult[]): LoadResult {
  const statusCounts: Record<string, number> = {};
  for (const round of rounds) for (const [status, n] of Object.entries(round.statusCounts)) statusCounts[status] = (statusCounts[status] ?? 0) + n;
  const sum = (pick: (r: LoadResult) => number) => rounds.reduce((total, r) => total + pick(r), 0);
  return {
    requestsPerSecond: sum((r) => r.requestsPerSecond) / rounds.length,
    p50: Math.max(...rounds.map((r) => r.p50)),
    p99: Math.max(...rounds.map((r) => r.p99)),
    total: sum((r) => r.total),
    statusCounts,
    non2xx: sum((r) => r.non2xx),
    errors: sum((r) => r.errors),
    timeouts: sum((r) => r.timeouts),
  };
}

async function firstFeedPersona(url: string, headers: Record<string, string>): Promise<string> {
  const page = await json(url, "/v1/social/feed?limit=1", { headers });
  const item = (page.body.data as { persona: { id: string } }[] | undefined)?.[0];
  if (!item) throw new Error(`the feed is empty: ${JSON.stringify(page.body)}`);
  return item.persona.id;
}

let code = 1;
let database: { url: string; name: string; drop: () => Promise<void> } | undefined;
try {
  database = REUSE ? existingDatabase(benchServer(), REUSE) : await scratchDatabase(benchServer(), "social");
  if (KEEP || REUSE) console.log(`bench database: ${database.name} (kept; BENCH_REUSE=${database.name} measures on it again)`);
  code = await main(database);
} catch (error) {
  console.error(`bench:social failed: ${error instanceof Error ? error.message : String(error)}`);
  group.dump();
} finally {
  await group.stopAll();
  if (!KEEP && !REUSE) await database?.drop();
}
process.exitCode = code;
