import express from "express";
import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { admission, leaveAdmission, type AdmissionLimits } from "../../server/toolkit/http/admission.ts";
import { errorHandler } from "../../server/toolkit/http/error-handler.ts";
import { sleep, until } from "../support/wait.ts";

// The admission rule (server/toolkit/http/admission.ts) on its own, in an app of its own on loopback: each
// request to /hold stays in flight until the test lets it go, so the places taken are exact.

interface Rig {
  url: string;
  /** Requests to /hold that admission has taken (worked on, queued or refused). */
  arrived: () => number;
  /** Requests that reached the handler, in order; `release(i)` answers the i-th. */
  reached: () => number;
  release: (i: number) => void;
}

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

async function rig(limits: AdmissionLimits): Promise<Rig> {
  const gates: (() => void)[] = [];
  let arrived = 0;
  const app = express();
  const admit = admission(limits);
  // Admission decides at once: once it returned, the request is in flight, in the queue or refused.
  app.use((req, res, next) => {
    admit(req, res, next);
    if (req.path === "/hold") arrived++;
  });
  app.get("/hold", (_req, res) => {
    gates.push(() => res.json({ ok: true }));
  });
  // A stream: open at once, then held like /hold.
  app.get("/stream", (_req, res) => {
    res.status(200).set("Content-Type", "text/event-stream").flushHeaders();
    leaveAdmission(res);
    gates.push(() => res.end());
  });
  app.get("/healthz", (_req, res) => void res.json({ status: "ok" }));
  app.use(errorHandler);
  server = app.listen(0, "127.0.0.1");
  await new Promise((resolve) => server!.once("listening", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, arrived: () => arrived, reached: () => gates.length, release: (i) => gates[i]!() };
}

const refusedAsOverloaded = async (response: Response) => {
  expect(response.status).toBe(429);
  expect(Number(response.headers.get("retry-after"))).toBeGreaterThan(0);
  expect(await response.json()).toMatchObject({ error: { code: "rate_limited" } });
};

describe("admission control", () => {
  it("works on at most maxInFlight requests, queues maxQueue more in order, and refuses the rest at once with 429 and Retry-After", async () => {
    const { url, arrived, reached, release } = await rig({ maxInFlight: 2, maxQueue: 1, queueMs: 60_000 });
    const first = fetch(`${url}/hold`);
    const second = fetch(`${url}/hold`);
    await until("two in flight", async () => reached() === 2);
    const queued = fetch(`${url}/hold`);
    await until("the third queued", async () => arrived() === 3);
    await refusedAsOverloaded(await fetch(`${url}/hold`));
    expect(reached()).toBe(2);
    // Probes are never held back.
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    release(0);
    expect((await first).status).toBe(200);
    await until("the queued request admitted", async () => reached() === 3);
    release(1);
    release(2);
    expect((await second).status).toBe(200);
    expect((await queued).status).toBe(200);
  });

  it("refuses a request that waited queueMs without a place", async () => {
    const { url, reached, release } = await rig({ maxInFlight: 1, maxQueue: 10, queueMs: 50 });
    const first = fetch(`${url}/hold`);
    await until("one in flight", async () => reached() === 1);
    await refusedAsOverloaded(await fetch(`${url}/hold`));
    release(0);
    expect((await first).status).toBe(200);
    // The place is free again, and the refused request did not take one.
    const next = fetch(`${url}/hold`);
    await until("admitted again", async () => reached() === 2);
    release(1);
    expect((await next).status).toBe(200);
  });

  it("gives the place of a client that left the queue to the next one", async () => {
    const { url, arrived, reached, release } = await rig({ maxInFlight: 1, maxQueue: 1, queueMs: 60_000 });
    const first = fetch(`${url}/hold`);
    await until("one in flight", async () => reached() === 1);
    const leaving = new AbortController();
    const left = fetch(`${url}/hold`, { signal: leaving.signal }).catch(() => "aborted");
    await until("the second queued", async () => arrived() === 2);
    leaving.abort();
    expect(await left).toBe("aborted");
    // The queue's one place is free again: this one waits instead of being refused.
    const waiting = await until("queued", async () => {
      const attempt = fetch(`${url}/hold`);
      // The fixed time is the point: a refusal is answered at once, a queued request is not.
      const early = await Promise.race([attempt, sleep(200).then(() => undefined)]);
      if (early) return (await early.arrayBuffer(), undefined);
      return { attempt };
    });
    release(0);
    expect((await first).status).toBe(200);
    await until("the waiting request admitted", async () => reached() === 2);
    release(1);
    expect((await waiting.attempt).status).toBe(200);
  });

  it("stops counting an open stream", async () => {
    const { url, reached, release } = await rig({ maxInFlight: 1, maxQueue: 0, queueMs: 0 });
    const stream = await fetch(`${url}/stream`);
    expect(stream.status).toBe(200);
    const held = fetch(`${url}/hold`);
    await until("admitted beside the stream", async () => reached() === 2);
    release(1);
    expect((await held).status).toBe(200);
    release(0);
    await stream.arrayBuffer();
  });

  it("is off with maxInFlight 0", async () => {
    const { url, reached, release } = await rig({ maxInFlight: 0, maxQueue: 0, queueMs: 0 });
    const all = Array.from({ length: 5 }, () => fetch(`${url}/hold`));
    await until("all in flight", async () => reached() === 5);
    for (let i = 0; i < 5; i++) release(i);
    for (const response of await Promise.all(all)) expect(response.status).toBe(200);
  });
});
