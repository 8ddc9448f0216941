import type { components } from "../../../generated/openapi.d.ts";
import { shownLink, type Where } from "../../toolkit/links.ts";
import type { ImageRow } from "./store.ts";

/** An image; its link is stored as a path and made absolute here (server/toolkit/links.ts). */
export function toImage(row: ImageRow, where: Where): components["schemas"]["Image"] {
  return { url: shownLink(where, row.url), width: row.width, height: row.height };
}
