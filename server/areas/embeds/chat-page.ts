import { fillMacros } from "../replies/index.ts";
import { html, trusted, type Html, type PagePolicy } from "../pages/index.ts";
import type { Embeddable } from "./access.ts";
import { CHAT_SCRIPT } from "./assets.ts";
import { CHAT_STYLE, CHAT_STYLE_SOURCE } from "./chat-style.ts";
import { EMBED_PATHS } from "./paths.ts";

/**
 * The chat page an embed frames, `/embed/<persona id>`: server-rendered, so the persona's name and
 * greeting are on the first paint, then brought to life by its one script (browser/chat.js). Every
 * text of the persona lands as text (the pages' `html` escapes it); the script renders the
 * greeting's markdown with elements. docs/design/embeds.md.
 */

/** Whom `{{user}}` names in a greeting read by an anonymous visitor. */
const VISITOR = "you";

const STYLE_TEXT = (() => {
  // A style element's text is not decoded: it must reach the browser byte for byte to match its hash.
  if (CHAT_STYLE.includes("<")) throw new Error("the chat stylesheet must not contain '<'");
  return trusted(CHAT_STYLE);
})();

/** The policy of the chat page: framed by the persona's allowed origins only; its script, its API calls, its voice. */
export function chatPagePolicy(allowedOrigins: readonly string[]): PagePolicy {
  return {
    cache: "no-store",
    frameAncestors: allowedOrigins,
    scripts: ["'self'"],
    connect: ["'self'"],
    media: ["blob:"],
    styles: [CHAT_STYLE_SOURCE],
  };
}

/** A service image as the avatar, else the name's initial; an avatar elsewhere is not loaded (the policy allows 'self' only). */
function avatar(stored: string | null, name: string): Html {
  if (stored?.startsWith("/") && !stored.startsWith("//")) return html`<img class="avatar" src="${stored}" alt="" width="36" height="36">`;
  return html`<div class="avatar initial" aria-hidden="true">${[...name.trim()][0]?.toUpperCase() ?? "?"}</div>`;
}

export function renderChatPage({ persona }: Embeddable): string {
  const greeting = persona.greeting_message === null ? null : fillMacros(persona.greeting_message, { char: persona.name, user: VISITOR });
  const opening = greeting
    ? html`<div class="msg assistant"><span class="visually-hidden">${persona.name} said:</span><div class="text">${greeting}</div></div>`
    : html`<p class="note">Say hello to ${persona.name}.</p>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="robots" content="noindex">
<title>Chat with ${persona.name}</title>
<style>${STYLE_TEXT}</style>
<script src="${EMBED_PATHS.chatScript}?v=${CHAT_SCRIPT.version}" defer></script>
</head>
<body>
<main class="chat" id="chat" data-persona="${persona.id}" data-name="${persona.name}">
<header class="bar">
${avatar(persona.avatar_url, persona.name)}
<h1>${persona.name}</h1>
<button type="button" id="voice" aria-pressed="false" hidden>Voice</button>
<button type="button" id="close" aria-label="Close chat" hidden>Close</button>
</header>
<div class="log" id="log" role="log" aria-live="polite" aria-label="Conversation with ${persona.name}" tabindex="0">
${opening}
</div>
<p class="status" id="status" role="status"></p>
<form class="composer" id="composer">
<label class="visually-hidden" for="message">Message to ${persona.name}</label>
<textarea id="message" name="message" rows="1" maxlength="4000" required placeholder="Write a message"></textarea>
<button type="submit" id="send">Send</button>
<button type="button" id="stop" hidden>Stop</button>
</form>
<noscript><p class="status">This chat needs JavaScript.</p></noscript>
</main>
</body>
</html>
`.toString();
}
