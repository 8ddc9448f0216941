/** One JSON call: its status and parsed body. */
export async function json(url: string, path: string, init: RequestInit = {}): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url + path, init);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/**
 * Sequential requests, one at a time: each figure is what one call costs, not queueing. The first
 * 20 warm up and are not counted.
 */
export async function latency(
  url: string,
  paths: (i: number) => string,
  headers: Record<string, string>,
  expect: number,
  samples: number,
): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < samples + 20; i++) {
    const started = performance.now();
    const response = await fetch(url + paths(i), { headers, redirect: "manual" });
    await response.arrayBuffer();
    if (response.status !== expect) throw new Error(`${paths(i)} answered ${response.status}`);
    if (i >= 20) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const at = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
  return { p50: at(0.5), p99: at(0.99) };
}
