import type { components } from "../../../generated/openapi.d.ts";
import type { ImageRow } from "./store.ts";

export function toImage(row: ImageRow): components["schemas"]["Image"] {
  return { url: row.url, width: row.width, height: row.height };
}
