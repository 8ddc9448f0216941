// Checks that Portkey's gateway (bench/gateways, `npm run bench:gateways:install`) relays completions
// from the fake upstream as `npm run bench:chat` drives it: streamed and blocking chat completions
// through the real `openai` package, each checked for the fake's text, and the time to the first
// content chunk through Portkey next to the same request straight to the fake.
// Run: node bench/portkey-check.ts (exits 1 when a reply is wrong).
import OpenAI from "openai";
import { startFakeOpenAI } from "../test/fakes/openai-server.ts";
import { portkeyRoutingHeaders, startPortkey } from "./lib/portkey.ts";

const ROUNDS = 20;
const WARMUP = 3;
const PROMPT = "Say hello";
// The fake's default reply echoes the last user message.
const EXPECTED = `Echo: ${PROMPT}`;
const request = { model: "gpt-4o-mini", messages: [{ role: "user" as const, content: PROMPT }] };

/** Streams one completion; returns its text and the milliseconds to the first chunk with content. */
async function streamed(client: OpenAI): Promise<{ text: string; firstContentMs: number }> {
  const started = performance.now();
  let firstContentMs = Number.NaN;
  let text = "";
  for await (const chunk of await client.chat.completions.create({ ...request, stream: true })) {
    const piece = chunk.choices[0]?.delta?.content ?? "";
    if (piece && Number.isNaN(firstContentMs)) firstContentMs = performance.now() - started;
    text += piece;
  }
  return { text, firstContentMs };
}

async function blocking(client: OpenAI): Promise<string> {
  const completion = await client.chat.completions.create({ ...request, stream: false });
  return completion.choices[0]?.message.content ?? "";
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const fake = await startFakeOpenAI();
const portkey = await startPortkey(fake.baseUrl).catch(async (error: unknown) => {
  await fake.close();
  throw error;
});
const clients = {
  direct: new OpenAI({ baseURL: fake.baseUrl, apiKey: "bench", maxRetries: 0 }),
  portkey: new OpenAI({ baseURL: `${portkey.url}/v1`, apiKey: "bench", maxRetries: 0, defaultHeaders: portkeyRoutingHeaders(fake.baseUrl) }),
};
const timings: Record<keyof typeof clients, number[]> = { direct: [], portkey: [] };
const wrong: string[] = [];
let checked = 0;
try {
  for (let i = 0; i < WARMUP; i++) for (const client of Object.values(clients)) await streamed(client);
  // Interleaved, so that a burst of load on the machine falls on both alike.
  for (let i = 0; i < ROUNDS; i++) {
    for (const name of ["direct", "portkey"] as const) {
      const { text, firstContentMs } = await streamed(clients[name]);
      timings[name].push(firstContentMs);
      if (name === "portkey") {
        checked++;
        if (text !== EXPECTED) wrong.push(`streamed #${i}: ${JSON.stringify(text)}`);
      }
    }
  }
  for (let i = 0; i < ROUNDS; i++) {
    const text = await blocking(clients.portkey);
    checked++;
    if (text !== EXPECTED) wrong.push(`blocking #${i}: ${JSON.stringify(text)}`);
  }
} finally {
  await portkey.stop();
  await fake.close();
}

console.log(`Portkey gateway ${portkey.url}, upstream ${fake.baseUrl}, Node ${process.version}`);
console.log(`replies through Portkey with the fake's text: ${checked - wrong.length}/${checked} (${ROUNDS} streamed, ${ROUNDS} blocking)`);
for (const line of wrong) console.log(`  wrong: ${line}`);
const direct = percentile(timings.direct, 50);
const through = percentile(timings.portkey, 50);
console.log(`time to first content chunk, p50 of ${ROUNDS} (openai package): directly ${direct.toFixed(1)} ms, through Portkey ${through.toFixed(1)} ms (+${(through - direct).toFixed(1)} ms; p90 ${percentile(timings.direct, 90).toFixed(1)} / ${percentile(timings.portkey, 90).toFixed(1)} ms)`);
if (wrong.length > 0) process.exitCode = 1;
