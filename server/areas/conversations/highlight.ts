import { escapeHtml } from "../../toolkit/http/text.ts";

/**
 * Search highlights. Postgres marks the matches with two control characters, which the content
 * cannot contain (they are replaced before marking), so after HTML-escaping everything the markers
 * are the only places where `<mark>` tags appear: message text can never inject markup.
 */
export const START_MARK = "\u0001";
export const STOP_MARK = "\u0002";

export function renderHighlight(marked: string): string {
  return escapeHtml(marked).replaceAll(START_MARK, "<mark>").replaceAll(STOP_MARK, "</mark>");
}
