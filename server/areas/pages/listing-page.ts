import { publicBaseUrl, type Config } from "../../toolkit/config.ts";
import { PERSON_PATHS, listingPageLink } from "../../toolkit/person-links.ts";
import { renderDocument } from "./document.ts";
import { html } from "./html.ts";
import { avatar, codeSample, counted, stars } from "./parts.ts";
import type { PublicListing } from "./service.ts";
import { shareMetaTags, summary, type ShareMeta } from "./share-meta.ts";
import type { CardInput } from "./card-image.ts";

/**
 * A marketplace listing's page, `/marketplace/<id>`, which publishing answers: the rating and its
 * distribution, the latest reviews, sample messages (macros filled, as a visitor reads them), and
 * how to use the persona (the pages have no session: the CLI, the SDK or the API, signed in). Its
 * `<head>` unfurls a shared link with the persona's card.
 */
export function renderListingPage(config: Config, page: PublicListing, card: CardInput): string {
  const { detail, listing } = page;
  const id = detail.id;
  const meta: ShareMeta = { title: detail.name, description: summary(detail.description) || detail.tagline, pageUrl: listingPageLink(config, id), card };
  const total = detail.review_count;
  const distribution = ([5, 4, 3, 2, 1] as const).map((score) => {
    const n = detail.rating_distribution[String(score) as "5"];
    return html`<span id="dist-${score}">${score} ${score === 1 ? "star" : "stars"}</span><meter min="0" max="${Math.max(total, 1)}" value="${n}" aria-labelledby="dist-${score}"></meter><span>${n.toLocaleString("en-US")}</span>`;
  });
  const reviews = page.reviews.map((review) => html`<article class="review">
<p>${stars(review.rating)} <strong>${review.user.display_name}</strong> <span class="muted">· <time datetime="${review.created_at}">${review.created_at.slice(0, 10)}</time></span></p>
${review.review ? html`<p class="text">${review.review}</p>` : ""}
</article>`);
  const main = html`<article>
<div class="head">
${avatar(listing.avatar_url, detail.name)}
<div><h1>${detail.name}</h1><p class="muted">by ${detail.author.display_name}${detail.author.verified ? html` <span class="badge">verified</span>` : ""} · ${detail.category}${listing.pricing === "premium" ? html` · <span class="badge">premium</span>` : ""}</p></div>
</div>
<ul class="stats">
<li>${counted(total, "rating", "ratings")}</li>
<li>${counted(detail.use_count, "use", "uses")}</li>
</ul>
${detail.tags.length ? html`<ul class="tags" aria-label="Tags">${detail.tags.map((tag) => html`<li>${tag}</li>`)}</ul>` : ""}
${detail.description ? html`<p class="text">${detail.description}</p>` : ""}
<p><a href="${`${PERSON_PATHS.persona}/${detail.persona_id}`}">${detail.name}'s page</a></p>
<h2>Rating</h2>
${total === 0 ? html`<p>No ratings yet.</p>` : html`<p>${stars(detail.rating)} ${detail.rating} out of 5, from ${counted(total, "rating", "ratings")}.</p>
<div class="dist">${distribution}</div>`}
${page.samples.length ? html`<h2>Sample messages</h2>${page.samples.map((sample) => html`<blockquote>${sample}</blockquote>`)}` : ""}
<h2>Reviews</h2>
${reviews.length ? html`${reviews}${page.reviewTotal > reviews.length ? html`<p class="muted">The latest ${reviews.length} of ${page.reviewTotal.toLocaleString("en-US")} reviews.</p>` : ""}` : html`<p>No reviews yet.</p>`}
<h2>Use this persona</h2>
<p>Using it adds a private copy of ${detail.name} to your personas (its instructions, not its knowledge), counted against your plan's personas${listing.pricing === "premium" ? "; it is premium, so a paid plan is needed" : ""}. This page has no sign-in: use it from an app that uses this service, or signed in from the command line or the API:</p>
${codeSample("Command line (signed in with persona login):", `persona marketplace use ${id}`)}
${codeSample("SDK (@persona-platform/sdk):", `const { data: copy } = await client.marketplace.use("${id}");`)}
${codeSample("HTTP:", `curl -X POST ${publicBaseUrl(config)}/v1/marketplace/${id}/use \\\n  -H "Authorization: Bearer $TOKEN"`)}
</article>`;
  return renderDocument({ title: `${detail.name} in the marketplace`, head: shareMetaTags(config, meta), main });
}
