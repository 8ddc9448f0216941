// The contract's PersonaHandle: lower-case letters, digits and inner hyphens, at most 40 characters.
export const HANDLE_MAX_LENGTH = 40;
const FALLBACK = "persona";

/**
 * The handle a name suggests: accents dropped, lower-cased, every run of other characters a single
 * hyphen (`Captain Nova!` → `captain-nova`); `persona` when nothing usable is left (a name in a
 * script without Latin letters).
 */
export function handleFromName(name: string): string {
  const base = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-");
  return withoutEdgeHyphens(base.slice(0, HANDLE_MAX_LENGTH)) || FALLBACK;
}

/**
 * The first of `base`, `base-2`, `base-3`, ... that none of `taken` is. The suffix fits in the
 * length limit by cutting the base.
 */
export function firstFreeHandle(base: string, taken: ReadonlySet<string>): string {
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const suffix = `-${n}`;
    const candidate = `${withoutEdgeHyphens(base.slice(0, HANDLE_MAX_LENGTH - suffix.length))}${suffix}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** The text without a hyphen at either end (runs of hyphens are single ones by then). */
function withoutEdgeHyphens(text: string): string {
  const start = text.startsWith("-") ? 1 : 0;
  const end = text.endsWith("-") ? text.length - 1 : text.length;
  return text.slice(start, Math.max(start, end));
}
