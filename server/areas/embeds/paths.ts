/**
 * Where the embed's browser side is served (README, docs/design/embeds.md): the loader a site's
 * snippet names, the chat page (`/embed/<persona id>`, also the `<iframe>` form) and its script.
 */
export const EMBED_PATHS = {
  /** `<script src="…/embed.js" data-persona="<id>" async>`: the chat bubble. */
  loader: "/embed.js",
  /** `/embed/<persona id>`: the chat page the bubble opens in an `<iframe>`. */
  page: "/embed",
  /** The chat page's one script (`?v=<version>`, cached for good). */
  chatScript: "/embed/assets/chat.js",
} as const;
