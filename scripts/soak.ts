// `npm run soak` (issue 23 item 4; not in CI, run before each release): SOAK_MINUTES (default 10)
// of streaming chats and knowledge uploads against the service (embedded database in a temporary
// data dir, or a scratch database on SOAK_DATABASE_URL's PostgreSQL), run in this process so that its
// open handles (process.getActiveResourcesInfo()) can be counted. After a warm-up (a third of the
// run, at most 2 minutes) RSS and the handle count are taken with the traffic paused and after a
// garbage collection; at the end, taken the same way, both must be within 10% of that level, else exit 1.
// The load is a fixed number of clients (SOAK_CLIENTS, default 8), so the driver's own share of
// memory and sockets stays constant. Offline model and embeddings.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { scratchDatabase } from "../bench/lib/database.ts";
import { loadConfig } from "../server/toolkit/config.ts";
import { startService } from "../server/runtime.ts";

const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const CLIENTS = Number(process.env.SOAK_CLIENTS ?? 8);
const TOLERANCE = 0.1;
const gc = (globalThis as { gc?: () => void }).gc;

const sleep = (ms: number) => new Promise((wait) => setTimeout(wait, ms));
const rssMb = () => process.memoryUsage().rss / 1024 / 1024;
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
/** RSS split into this thread's JS heap, its external memory (buffers) and the rest (native: other
 * threads, such as the embedded database's WASM heap, and the allocator's retained pages). */
function memory(): string {
  const m = process.memoryUsage();
  return `RSS ${mb(m.rss)} MB (heap ${mb(m.heapUsed)}, external ${mb(m.external)} incl. arrayBuffers ${mb(m.arrayBuffers)}, WASM ${mb(wasmResident())}, rest ${mb(m.rss - m.heapTotal - m.external - wasmResident())})`;
}
/**
 * Resident bytes of WebAssembly memories (the embedded database's heap, in its own thread): V8
 * reserves at least 4 GB of address space for each 32-bit WASM memory and makes the part in use
 * readable, which splits the reservation into adjacent mappings; nothing else maps that much at
 * once, so adjacent anonymous mappings spanning 4 GB or more are WASM memories, and their
 * resident sizes the pages in use.
 */
function wasmResident(): number {
  let bytes = 0;
  let runStart = 0n;
  let runEnd = -1n;
  let runRss = 0;
  let current: { start: bigint; end: bigint; anonymous: boolean } | undefined;
  const close = () => {
    if (runEnd - runStart >= 4n << 30n) bytes += runRss;
  };
  for (const line of readFileSync("/proc/self/smaps", "utf8").split("\n")) {
    const range = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (range) {
      current = { start: BigInt(`0x${range[1]}`), end: BigInt(`0x${range[2]}`), anonymous: range[3] === "0" && range[4] === "" };
      if (!current.anonymous || current.start !== runEnd) {
        close();
        runStart = current.start;
        runRss = 0;
      }
      runEnd = current.anonymous ? current.end : -1n;
    } else if (current?.anonymous && line.startsWith("Rss:")) runRss += Number(line.split(/\s+/)[1]) * 1024;
  }
  close();
  return bytes;
}
const handles = () => process.getActiveResourcesInfo().filter((kind) => kind !== "Timeout" && kind !== "Immediate").length;
async function settle(): Promise<{ rss: number; handles: number }> {
  for (let i = 0; i < 3; i++) {
    gc?.();
    await sleep(500);
  }
  return { rss: rssMb(), handles: handles() };
}

// On disk: an in-memory database keeps every row (and dead row) in this process's RSS, which
// would be counted as a leak of the service.
const dataDir = mkdtempSync(join(tmpdir(), "persona-soak-"));
const scratch = process.env.SOAK_DATABASE_URL ? await scratchDatabase(process.env.SOAK_DATABASE_URL, "soak") : undefined;
const service = await startService(
  loadConfig({
    ...process.env,
    PORT: "0",
    DATABASE_URL: scratch?.url ?? "",
    EMBEDDED_DB_IN_MEMORY: "false",
    PERSONA_DATA_DIR: dataDir,
    LOG_LEVEL: "warn",
    LLM_PROVIDER: "local",
    RATE_LIMIT_PER_MINUTE: "1000000",
    AUTH_ATTEMPTS_PER_IP: "1000000",
    AUTH_ATTEMPTS_PER_EMAIL: "1000000",
    WORKER_POLL_INTERVAL_MS: "200",
  }),
);
const url = service.url;
const knex = service.services.db.knex;

async function client(i: number, until: () => boolean, counts: { streams: number; uploads: number; errors: number }) {
  const suffix = `${Date.now().toString(36)}${i}`;
  const registered = (await fetch(`${url}/v1/auth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: `soak_${suffix}@example.com`, username: `soak_${suffix}`, password: "Correct-horse-9" }),
  }).then((r) => r.json())) as { access_token: string; user: { id: string } };
  await knex("users").where({ id: registered.user.id }).update({ plan: "creator" });
  const auth = { authorization: `Bearer ${registered.access_token}` };
  const json = { ...auth, "content-type": "application/json" };
  const persona = (await fetch(`${url}/v1/personas`, { method: "POST", headers: json, body: JSON.stringify({ name: `Soak ${i}`, instructions: "Answer briefly." }) }).then((r) => r.json())) as { id: string };
  let conversation = "";
  for (let n = 0; until(); n++) {
    while (paused) await sleep(50);
    working++;
    try {
      // A fresh conversation now and then, so that history does not grow without bound.
      if (n % 20 === 0) {
        conversation = ((await fetch(`${url}/v1/conversations`, { method: "POST", headers: json, body: JSON.stringify({ persona_id: persona.id }) }).then((r) => r.json())) as { id: string }).id;
      }
      if (n % 10 === 9) {
        const form = new FormData();
        form.append("file", new Blob([`Soak note ${n} of client ${i}.\n`.repeat(60)]), `note-${n}.txt`);
        const uploaded = await fetch(`${url}/v1/knowledge/${persona.id}/documents`, { method: "POST", headers: auth, body: form });
        const body = (await uploaded.json()) as { id?: string };
        if (uploaded.status !== 202) counts.errors++;
        else {
          counts.uploads++;
          // Kept small: the document is deleted again once processed (or after a while).
          for (let wait = 0; wait < 50; wait++) {
            const got = (await fetch(`${url}/v1/knowledge/${persona.id}/documents/${body.id}`, { headers: auth }).then((r) => r.json())) as { status: string };
            if (got.status === "ready" || got.status === "failed") break;
            await sleep(100);
          }
          await fetch(`${url}/v1/knowledge/${persona.id}/documents/${body.id}`, { method: "DELETE", headers: auth }).then((r) => r.arrayBuffer());
        }
      } else {
        const response = await fetch(`${url}/v1/conversations/${conversation}/messages/stream`, { method: "POST", headers: json, body: JSON.stringify({ content: `tell me something ${n}` }) });
        const text = await response.text();
        if (response.status !== 200 || !text.includes("event: done")) counts.errors++;
        else counts.streams++;
      }
      if (n % 20 === 19) await fetch(`${url}/v1/conversations/${conversation}`, { method: "DELETE", headers: auth }).then((r) => r.arrayBuffer());
    } catch {
      counts.errors++;
    }
    working--;
  }
}

const totalMs = MINUTES * 60_000;
const warmupMs = Math.min(totalMs / 3, 120_000);
const started = Date.now();
const counts = { streams: 0, uploads: 0, errors: 0 };
let running = true;
// Clients pause between iterations while the warm-up level is taken, so that it is taken as the end
// is (no traffic, after a GC) rather than compared with a sample of whatever was in flight.
let paused = false;
let working = 0;
const clients = Array.from({ length: CLIENTS }, (_, i) => client(i, () => running, counts));
console.log(`soak: ${MINUTES} min, ${CLIENTS} clients, warm-up ${(warmupMs / 1000).toFixed(0)} s, ${scratch ? "PostgreSQL" : "embedded database"}${gc ? "" : " (no --expose-gc: figures are noisier)"}`);
await sleep(warmupMs);
paused = true;
while (working > 0) await sleep(50);
const warm = await settle();
paused = false;
console.log(`after warm-up: ${memory()}, handles ${warm.handles}, ${counts.streams} streams, ${counts.uploads} uploads`);
while (Date.now() - started < totalMs) {
  await sleep(Math.min(60_000, totalMs - (Date.now() - started)));
  console.log(`${((Date.now() - started) / 60_000).toFixed(1)} min: ${memory()}, handles ${handles()}, ${counts.streams} streams, ${counts.uploads} uploads, ${counts.errors} errors`);
}
running = false;
await Promise.all(clients);
const end = await settle();
const rssRatio = end.rss / warm.rss;
const handleRatio = warm.handles ? end.handles / warm.handles : 1;
console.log(
  `figures: ${counts.streams} streams, ${counts.uploads} uploads, ${counts.errors} errors; RSS ${warm.rss.toFixed(0)} -> ${end.rss.toFixed(0)} MB (${rssRatio.toFixed(3)}x); handles ${warm.handles} -> ${end.handles} (${handleRatio.toFixed(3)}x)`,
);
console.log(`end (settled): ${memory()}`);
await service.stop();
await scratch?.drop();
rmSync(dataDir, { recursive: true, force: true });
const failures = [
  rssRatio > 1 + TOLERANCE ? `RSS grew ${((rssRatio - 1) * 100).toFixed(1)}%` : "",
  handleRatio > 1 + TOLERANCE ? `open handles grew ${((handleRatio - 1) * 100).toFixed(1)}%` : "",
  counts.errors > 0 ? `${counts.errors} failed requests` : "",
].filter(Boolean);
if (failures.length) {
  console.log(`FAIL: ${failures.join("; ")}`);
  process.exit(1);
}
console.log("PASS");
process.exit(0);
