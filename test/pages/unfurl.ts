import { PNG } from "pngjs";

/**
 * A small link unfurler, as Discord's and Slack's work: follow the link's redirects, read the page's
 * Open Graph (and Twitter) meta tags and its oEmbed discovery link, then fetch the image they name.
 * It parses the HTML as those bots do, by the tags' attributes, decoding the entities an escaping
 * page writes.
 */
export interface Unfurled {
  /** Every URL the link went through, the final page last. */
  hops: string[];
  status: number;
  /** `og:*` and `twitter:*` meta values by property or name. */
  meta: Record<string, string>;
  /** The `application/json+oembed` discovery link, if any. */
  oembed?: string;
  image?: { url: string; status: number; type: string | null; width: number; height: number; etag: string | null };
}

const ENTITIES: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', "#39": "'", apos: "'" };

export function decodeEntities(text: string): string {
  return text.replace(/&(amp|lt|gt|quot|#39|apos);/g, (_, name: string) => ENTITIES[name]!);
}

/** The attributes of each tag `name` in `html` (double-quoted values, as the pages write them). */
export function tags(html: string, name: string): Record<string, string>[] {
  return [...html.matchAll(new RegExp(`<${name}\\b([^>]*)>`, "gi"))].map((match) =>
    Object.fromEntries([...match[1]!.matchAll(/([a-zA-Z:-]+)="([^"]*)"/g)].map(([, key, value]) => [key!.toLowerCase(), decodeEntities(value!)])),
  );
}

/** The Open Graph and Twitter meta values of a page. */
export function metaOf(html: string): Record<string, string> {
  const meta: Record<string, string> = {};
  for (const tag of tags(html, "meta")) {
    const key = tag.property ?? tag.name;
    if (key && tag.content !== undefined && (key.startsWith("og:") || key.startsWith("twitter:") || key === "description")) meta[key] ??= tag.content;
  }
  return meta;
}

/** Unfurls `url`: at most 5 redirects, as the bots allow. */
export async function unfurl(url: string, userAgent = "Mozilla/5.0 (compatible; Discordbot/2.0; +https://discordapp.com)"): Promise<Unfurled> {
  const hops = [url];
  let response = await fetch(url, { redirect: "manual", headers: { "user-agent": userAgent, accept: "text/html" } });
  while (response.status >= 300 && response.status < 400 && hops.length <= 5) {
    const next = new URL(response.headers.get("location")!, hops.at(-1)).toString();
    hops.push(next);
    response = await fetch(next, { redirect: "manual", headers: { "user-agent": userAgent, accept: "text/html" } });
  }
  const html = await response.text();
  const meta = metaOf(html);
  const oembed = tags(html, "link").find((link) => link.rel === "alternate" && link.type === "application/json+oembed")?.href;
  const result: Unfurled = { hops, status: response.status, meta, ...(oembed ? { oembed } : {}) };
  const imageUrl = meta["og:image"] ?? meta["twitter:image"];
  if (imageUrl) {
    const image = await fetch(imageUrl, { headers: { "user-agent": userAgent } });
    const bytes = Buffer.from(await image.arrayBuffer());
    const png = image.ok ? PNG.sync.read(bytes) : undefined;
    result.image = { url: imageUrl, status: image.status, type: image.headers.get("content-type"), width: png?.width ?? 0, height: png?.height ?? 0, etag: image.headers.get("etag") };
  }
  return result;
}
