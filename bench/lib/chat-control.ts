import type { FakeOpenAI } from "../../test/fakes/openai-server.ts";

// Issue 21's figures for `npm run bench:chat`: resume latency across processes and stop-to-abort.

const SAMPLES = Number(process.env.BENCH_CONTROL_SAMPLES ?? 20);

export interface ControlSetup {
  fake: FakeOpenAI;
  /** The process that generates. */
  generating: string;
  /** Another process on the same database (the same URL on the embedded default). */
  other: string;
  auth: Record<string, string>;
  conversations: string[];
}

const p50 = (samples: number[]) => [...samples].sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;

/** Starts a slow stream, reads until `deltas` deltas, drops it; answers the generation id and the last event id. */
async function droppedStream(setup: ControlSetup, conversation: string, deltas: number): Promise<{ generation: string; lastId: string }> {
  const response = await fetch(`${setup.generating}/v1/conversations/${conversation}/messages/stream`, { method: "POST", headers: setup.auth, body: JSON.stringify({ content: "go" }) });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while ((text.match(/event: delta/g) ?? []).length < deltas) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the stream ended early: ${text.slice(0, 300)}`);
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  const generation = /"generation_id":"([^"]+)"/.exec(text)![1]!;
  const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => m[1]!);
  return { generation, lastId: ids.at(-1)! };
}

/** Milliseconds from the resume request to its first delta (the first missed event). */
async function resumeLatency(base: string, setup: ControlSetup, conversation: string, generation: string, lastId: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${base}/v1/conversations/${conversation}/generations/${generation}/stream`, { headers: { ...setup.auth, "last-event-id": lastId } });
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the resume ended without a delta: ${text.slice(0, 300)}`);
    text += decoder.decode(value, { stream: true });
    if (text.includes("event: delta")) break;
  }
  const at = performance.now() - started;
  await reader.cancel();
  return at;
}

/**
 * Resume p50, on the generating process (from memory: the baseline) and on the other one (from the
 * table, woken by NOTIFY); stop p50, from the stop request to the upstream seeing its call aborted,
 * against the upstream's own client aborting a call (the baseline).
 */
export async function chatControlFigures(setup: ControlSetup): Promise<string[]> {
  const { fake } = setup;
  fake.chat.always({ chunks: Array.from({ length: 60 }, (_, i) => `w${i} `), chunkDelayMs: 25 });
  const local: number[] = [];
  const remote: number[] = [];
  const stop: number[] = [];
  const directAbort: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const conversation = setup.conversations[i % setup.conversations.length]!;
    const a = await droppedStream(setup, conversation, 3);
    remote.push(await resumeLatency(setup.other, setup, conversation, a.generation, a.lastId));
    await stopAndWait(setup, conversation, a.generation);
    const b = await droppedStream(setup, conversation, 3);
    local.push(await resumeLatency(setup.generating, setup, conversation, b.generation, b.lastId));
    await stopAndWait(setup, conversation, b.generation);

    const c = await droppedStream(setup, conversation, 2);
    const aborted = fake.waitForAbort(10_000);
    const started = performance.now();
    void fetch(`${setup.other}/v1/conversations/${conversation}/generations/${c.generation}/stop`, { method: "POST", headers: setup.auth }).then((r) => r.arrayBuffer());
    await aborted;
    stop.push(performance.now() - started);

    const controller = new AbortController();
    const response = await fetch(`${fake.baseUrl}/chat/completions`, {
      method: "POST", headers: { "content-type": "application/json", authorization: "Bearer bench" }, signal: controller.signal,
      body: JSON.stringify({ model: "gpt-4o-mini", stream: true, messages: [{ role: "user", content: "go" }] }),
    });
    await response.body!.getReader().read();
    const directAborted = fake.waitForAbort(10_000);
    const directStarted = performance.now();
    controller.abort();
    await directAborted;
    directAbort.push(performance.now() - directStarted);
  }
  fake.chat.always({});
  return [
    `bench:chat resume to first missed event, other process p50 = ${p50(remote).toFixed(1)} ms; generating process (baseline) p50 = ${p50(local).toFixed(1)} ms; other/generating = ${(p50(remote) / p50(local)).toFixed(2)} (${SAMPLES} samples)`,
    `bench:chat stop to upstream abort, from the other process p50 = ${p50(stop).toFixed(1)} ms (max ${Math.max(...stop).toFixed(1)}); upstream client's own abort (baseline) p50 = ${p50(directAbort).toFixed(1)} ms; ratio = ${(p50(stop) / p50(directAbort)).toFixed(2)}`,
  ];
}

/** Stops a generation and claims its upstream abort, so the next measurement waits for its own. */
async function stopAndWait(setup: ControlSetup, conversation: string, generation: string): Promise<void> {
  const aborted = setup.fake.waitForAbort(10_000);
  await (await fetch(`${setup.generating}/v1/conversations/${conversation}/generations/${generation}/stop`, { method: "POST", headers: setup.auth })).arrayBuffer();
  await aborted;
}
