import { html, type Html } from "./html.ts";

// Pieces the public pages share.

/**
 * A persona's avatar: an image of this service (a stored path such as `/v1/images/files/…png`),
 * else its initial. An avatar elsewhere (a CDN) is not shown: the pages load nothing from another
 * host, and their policy would refuse it. Decorative (`alt=""`): the name is next to it.
 */
export function avatar(stored: string | null, name: string): Html {
  if (stored?.startsWith("/") && !stored.startsWith("//")) {
    return html`<img class="avatar" src="${stored}" alt="" width="112" height="112">`;
  }
  return html`<div class="avatar initial" aria-hidden="true">${[...name.trim()][0]?.toUpperCase() ?? "?"}</div>`;
}

/** `1,234 likes`, `1 like`. */
export function counted(n: number, one: string, many: string): Html {
  return html`<strong>${n.toLocaleString("en-US")}</strong> ${n === 1 ? one : many}`;
}

/** A command or code sample, labelled for screen readers by what it is. */
export function codeSample(label: string, code: string): Html {
  return html`<p class="hint">${label}</p><pre><code>${code}</code></pre>`;
}

/** Stars as text, with the number for screen readers: `★★★★☆` read as "4 out of 5 stars". */
export function stars(rating: number): Html {
  const full = Math.round(rating);
  return html`<span class="stars" aria-hidden="true">${"★".repeat(full)}${"☆".repeat(5 - full)}</span><span class="visually-hidden">${rating} out of 5 stars</span>`;
}
