import { escapeHtml } from "../../toolkit/http/text.ts";

/**
 * Markup built by the pages, safe by construction: `html` escapes every interpolated value unless it
 * is already `Html` (a fragment built the same way), so persona texts, names and reviews, which are
 * hostile input, can only ever land as text. Every attribute in a template is quoted, which is what
 * makes escaping enough there too. `trusted` is for the few constants the service wrote itself.
 */
export class Html {
  readonly #text: string;
  constructor(text: string) {
    this.#text = text;
  }
  toString(): string {
    return this.#text;
  }
}

/** What a template takes: text (escaped), numbers, fragments, lists of them, and nothing (`null`, `undefined`, `false`). */
export type Part = Html | string | number | null | undefined | false | readonly Part[];

function render(part: Part): string {
  if (part === null || part === undefined || part === false) return "";
  if (part instanceof Html) return part.toString();
  if (Array.isArray(part)) return (part as readonly Part[]).map(render).join("");
  return escapeHtml(String(part));
}

/** The tagged template of every page: `html\`<p>${persona.name}</p>\`` escapes the name. */
export function html(strings: TemplateStringsArray, ...values: Part[]): Html {
  let text = strings[0]!;
  for (let i = 0; i < values.length; i++) text += render(values[i]!) + strings[i + 1]!;
  return new Html(text);
}

/** Markup the service wrote itself (a constant), put in as it is. Never for anything a person typed. */
export function trusted(markup: string): Html {
  return new Html(markup);
}

/** Text as the one escaping rule makes it (for attributes built outside a template, and SVG). */
export function escapeText(text: string): string {
  return escapeHtml(text);
}
