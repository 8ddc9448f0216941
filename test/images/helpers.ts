import { PNG } from "pngjs";
import { expect } from "vitest";
import { jsonHeaders, type TestService } from "../support/service.ts";

export function generate(service: TestService, auth: Record<string, string>, body: unknown) {
  return service.fetch("/v1/images/generate", { method: "POST", headers: { ...jsonHeaders, ...auth }, body: JSON.stringify(body) });
}

/** The path of an image link on this service (links carry the service's public base URL). */
export function pathOf(url: string): string {
  return new URL(url).pathname;
}

/** Fetches an image link as a browser would, with no credential, and decodes the PNG. */
export async function fetchPng(service: TestService, url: string): Promise<{ png: PNG; bytes: Buffer; response: Response }> {
  const response = await service.fetch(pathOf(url));
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("image/png");
  const bytes = Buffer.from(await response.arrayBuffer());
  return { png: PNG.sync.read(bytes), bytes, response };
}

/** How many distinct colours a picture has (a blank or flat one has one or two). */
export function colours(png: PNG): number {
  const seen = new Set<number>();
  for (let i = 0; i < png.data.length; i += 4 * 7) seen.add(png.data.readUInt32BE(i));
  return seen.size;
}
