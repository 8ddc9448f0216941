// A reply as a voice should read it (the guest speech operation).

/** Markdown as words: links by their text, code, bold and italics by their letters. */
export function spokenText(markdown: string): string {
  return withoutLinkTargets(markdown)
    .replace(/`{3}[^\n]*\n?/g, "")
    .replace(/[*_`#>~]+/g, "")
    .replace(/[ \t]+/g, " ");
}

/** `[text](target)` as `text`, in one pass (each search starts past the last). */
function withoutLinkTargets(text: string): string {
  let out = "";
  let at = 0;
  for (;;) {
    const open = text.indexOf("[", at);
    const middle = open < 0 ? -1 : text.indexOf("](", open);
    const end = middle < 0 ? -1 : text.indexOf(")", middle);
    if (end < 0) return out + text.slice(at);
    out += text.slice(at, open) + text.slice(open + 1, middle);
    at = end + 1;
  }
}
