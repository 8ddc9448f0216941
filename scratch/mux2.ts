import pg from "pg";
import { startEmbeddedPostgres } from "../server/db/embedded.ts";
const emb = await startEmbeddedPostgres(undefined);
const pool = new pg.Pool({ connectionString: emb.url, max: 10 });
await pool.query("create extension if not exists vector; create table t (id int primary key, v text)");
let errors = 0, wrong = 0;
const t0 = Date.now();
await Promise.all(Array.from({ length: 4000 }, async (_, i) => {
  try {
    if (i % 10 === 0) {
      const c = await pool.connect();
      try { await c.query("begin"); await c.query("insert into t values ($1, $2)", [i, "x" + i]); await new Promise(r=>setTimeout(r,1)); await c.query("commit"); } finally { c.release(); }
    } else {
      const r = await pool.query("select $1::int as a, $2::text as b", [i, "s" + i]);
      if (r.rows[0].a !== i || r.rows[0].b !== "s" + i) wrong++;
    }
  } catch (e) { errors++; if (errors < 5) console.log((e as Error).message); }
}));
console.log({ errors, wrong, ms: Date.now() - t0, count: (await pool.query("select count(*) from t")).rows[0] });
await pool.end(); await emb.stop();
