import { publicBaseUrl, type Config } from "../../toolkit/config.ts";
import { PERSON_PATHS, personaPageLink } from "../../toolkit/person-links.ts";
import { averageRating } from "../marketplace/index.ts";
import { renderDocument } from "./document.ts";
import { html } from "./html.ts";
import { avatar, codeSample, counted } from "./parts.ts";
import type { PublicPersona } from "./service.ts";
import { cardOf, shareMetaTags, summary } from "./share-meta.ts";

/**
 * A public persona's page, `/p/<id>`, where its share links lead: avatar, name, creator, likes and
 * conversations, description, greeting (as a visitor reads it), its listing when it has one, and how
 * to chat with it (the pages have no session: from an app, the CLI or the API). Its `<head>` makes a
 * shared link unfurl as a card (share-meta.ts).
 */
export function renderPersonaPage(config: Config, page: PublicPersona): string {
  const { persona, listing } = page;
  const id = persona.id;
  const head = shareMetaTags(config, {
    title: persona.name,
    description: summary(persona.description) || `${persona.name}, a persona by ${page.creatorName}`,
    pageUrl: personaPageLink(config, id),
    card: cardOf(persona, page.creatorName),
  });
  const main = html`<article>
<div class="head">
${avatar(persona.avatar_url, persona.name)}
<div><h1>${persona.name}</h1><p class="muted">by ${page.creatorName}</p></div>
</div>
<ul class="stats">
<li>${counted(page.likes, "like", "likes")}</li>
<li>${counted(page.conversations, "conversation", "conversations")}</li>
</ul>
${persona.description ? html`<p class="text">${persona.description}</p>` : ""}
${page.greeting ? html`<h2>Greeting</h2><blockquote>${page.greeting}</blockquote>` : ""}
${listing ? html`<h2>In the marketplace</h2>
<p><a href="${`${PERSON_PATHS.listing}/${listing.id}`}">See ${persona.name} in the marketplace</a>: ${listing.review_count === 0 ? "no ratings yet" : `rated ${averageRating(listing)} out of 5 from ${listing.review_count.toLocaleString("en-US")} ${listing.review_count === 1 ? "rating" : "ratings"}`}, ${listing.use_count === 1 ? "used once" : `used ${listing.use_count.toLocaleString("en-US")} times`}.</p>` : ""}
<h2>Chat with ${persona.name}</h2>
<p>This page has no sign-in: chat from an app that uses this service, from the command line, or through the API with your account.</p>
${codeSample("Command line (signed in with persona login):", `persona chat ${id}`)}
${codeSample("SDK (@persona-platform/sdk):", `const conversation = await client.conversations.create({ persona_id: "${id}" });`)}
${codeSample("HTTP:", `curl -X POST ${publicBaseUrl(config)}/v1/conversations \\\n  -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\\n  -d '{"persona_id": "${id}"}'`)}
</article>`;
  return renderDocument({ title: persona.name, head, main });
}
