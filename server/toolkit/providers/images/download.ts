import { request as httpRequest, type IncomingMessage } from "node:http";
import { request as httpsRequest } from "node:https";
import { allowedAddresses, BlockedAddressError, forbiddenRange, guardedLookup, ipLiteral } from "../address-guard.ts";
import { UpstreamError } from "../errors.ts";

const WHAT = "The image provider";

/** The most bytes read from an image link: far above any image a provider draws, far below memory trouble. */
export const MAX_IMAGE_LINK_BYTES = 20 * 1024 * 1024;

/**
 * Whether the provider itself is on loopback or a private network (a self-hosted server, or the
 * tests' fake): then its image links may be too. A provider on the internet may only link to the
 * internet, so a link to 169.254.169.254 or 10.0.0.1 is never fetched.
 */
export function providerIsLocal(baseUrl: string | undefined): boolean {
  if (!baseUrl) return false;
  const host = new URL(baseUrl).hostname;
  const literal = ipLiteral(host);
  return host === "localhost" || host.endsWith(".localhost") || (literal !== undefined && forbiddenRange(literal) !== undefined);
}

export interface LinkOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  maxBytes?: number;
}

/**
 * The bytes behind an image link an image provider answered, fetched through the SSRF guard (the
 * address is checked before connecting and again by the socket's lookup), without following
 * redirects, within `timeoutMs` and at most `maxBytes`.
 */
export async function downloadImageLink(link: string, options: LinkOptions): Promise<Uint8Array> {
  const maxBytes = options.maxBytes ?? MAX_IMAGE_LINK_BYTES;
  const url = URL.canParse(link) ? new URL(link) : undefined;
  if (!url || (url.protocol !== "https:" && url.protocol !== "http:")) throw new UpstreamError(`${WHAT}'s image link is not an http(s) URL`);
  try {
    await allowedAddresses(url.hostname, options.allowPrivate);
  } catch (error) {
    throw new UpstreamError(error instanceof BlockedAddressError ? `${WHAT}'s image link points at an address that is not allowed` : `${WHAT}'s image link does not resolve`);
  }
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const fail = (error: unknown) => {
      if (options.signal?.aborted) reject(error);
      else if (timeout.aborted) reject(new UpstreamError(`${WHAT}'s image link did not answer in time`));
      else reject(error instanceof UpstreamError ? error : new UpstreamError(`${WHAT}'s image link could not be fetched`));
    };
    const req = send(url, { lookup: guardedLookup(options.allowPrivate), signal }, (res: IncomingMessage) => {
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        res.resume();
        return fail(new UpstreamError(`${WHAT}'s image link answered ${status}`, status));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) {
          req.destroy();
          fail(new UpstreamError(`${WHAT}'s image is larger than ${maxBytes} bytes`));
        } else chunks.push(chunk);
      });
      res.on("end", () => resolve(new Uint8Array(Buffer.concat(chunks))));
      res.on("error", fail);
    });
    req.on("error", fail);
    req.end();
  });
}
