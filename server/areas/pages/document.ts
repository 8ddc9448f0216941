import { html, trusted, type Html } from "./html.ts";
import { STYLESHEET } from "./stylesheet.ts";

/**
 * The stylesheet as the `<style>` element's text, put in unescaped: a style element's text is not
 * decoded, and it must reach the browser byte for byte or its hash in the policy no longer matches.
 * It is a constant; without `<` it cannot end the element.
 */
const STYLE_TEXT = (() => {
  if (STYLESHEET.includes("<")) throw new Error("the stylesheet must not contain '<'");
  return trusted(STYLESHEET);
})();

/** What a page puts in the one HTML shell of the built-in pages. */
export interface PageDocument {
  /** The `<title>`, also the tab's name; the site's name is added after it. */
  title: string;
  /** Extra `<head>` elements (share meta tags, a canonical link). */
  head?: Html;
  /** What goes in `<main>`. */
  main: Html;
}

/** The name the pages carry in their title and header. */
export const SITE_NAME = "Persona";

/**
 * The shell every page shares: language, the phone viewport, both colour schemes, the stylesheet
 * (inline, allowed by its hash: stylesheet.ts), a skip link to the content, a header, `<main>` and
 * a footer. Nothing is loaded from anywhere: no font, script, icon or image outside the service.
 */
export function renderDocument(page: PageDocument): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${page.title} · ${SITE_NAME}</title>
${page.head}
<style>${STYLE_TEXT}</style>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site"><p>${SITE_NAME}</p></header>
<main id="main" tabindex="-1">
${page.main}
</main>
<footer><p>Served by this ${SITE_NAME} server.</p></footer>
</body>
</html>
`.toString();
}
