// Issue 31 H1: the scanners that cut a document's text into paragraphs, sentences and words. Each
// is one pass over its input with no backtracking, so a run of spaces, tabs or newlines of any
// length costs time in proportion to its length. They cut exactly where the regular expressions
// used before cut (kept as comments, and compared in test/knowledge/chunker.unit.test.ts): the
// sentence expression was quadratic in a run of spaces or tabs (60,000 spaces took seconds).

const TAB = 0x09;
const NEWLINE = 0x0a;
const SPACE = 0x20;

/** A space or a tab: `[ \t]`. */
const isBlank = (code: number) => code === SPACE || code === TAB;

/** JavaScript's `\s` (and what `String.prototype.trim` removes): white space and line terminators. */
export function isWhitespace(code: number): boolean {
  if (code <= SPACE) return code === SPACE || (code >= TAB && code <= 0x0d);
  if (code < 0xa0) return false;
  return (
    code === 0xa0 ||
    code === 0x1680 ||
    (code >= 0x2000 && code <= 0x200a) ||
    code === 0x2028 ||
    code === 0x2029 ||
    code === 0x202f ||
    code === 0x205f ||
    code === 0x3000 ||
    code === 0xfeff
  );
}

/** `. ! ? …` and their CJK forms `。 ！ ？`: the characters that may end a sentence. */
function isSentenceEnd(code: number): boolean {
  return code === 0x2e || code === 0x21 || code === 0x3f || code === 0x2026 || code === 0x3002 || code === 0xff01 || code === 0xff1f;
}

/**
 * The paragraphs of `text`, trimmed, empty ones left out: what
 * `text.split(/\n[ \t]*\n\s*\/).map((p) => p.trim()).filter(Boolean)` gives. A paragraph ends at a
 * blank line (a line of nothing but spaces and tabs); the white space after it is dropped.
 */
export function* paragraphsOf(text: string): Generator<string> {
  const length = text.length;
  let start = 0;
  let i = 0;
  while (i < length) {
    if (text.charCodeAt(i) !== NEWLINE) {
      i++;
      continue;
    }
    let next = i + 1;
    while (next < length && isBlank(text.charCodeAt(next))) next++;
    if (next < length && text.charCodeAt(next) === NEWLINE) {
      next++;
      while (next < length && isWhitespace(text.charCodeAt(next))) next++;
      const paragraph = text.slice(start, i).trim();
      if (paragraph) yield paragraph;
      start = next;
    }
    // No paragraph break can start inside the blanks just passed: go on after them.
    i = next;
  }
  const last = text.slice(start).trim();
  if (last) yield last;
}

/** A sentence (or line) of a paragraph, and the separator that followed it: a line break or a space. */
export interface Sentence {
  text: string;
  after: "\n" | " ";
}

/**
 * The sentences of a paragraph, cut where `/(?<=[.!?…。！？])[ \t]+|[ \t]*\n[ \t]*\/g` matched: at
 * spaces and tabs after a sentence end, and at every line break with the spaces and tabs around
 * it. Like the expression, the spaces after a sentence end are taken without the line break that
 * may follow them; that line break then ends an empty sentence. Empty sentences are yielded too.
 */
export function* sentencesOf(paragraph: string): Generator<Sentence> {
  const length = paragraph.length;
  let start = 0;
  let i = 0;
  // Invariant: a blank seen at `i` begins a run of blanks (the character before it is not blank).
  while (i < length) {
    const code = paragraph.charCodeAt(i);
    if (isBlank(code)) {
      let end = i + 1;
      while (end < length && isBlank(paragraph.charCodeAt(end))) end++;
      if (i > 0 && isSentenceEnd(paragraph.charCodeAt(i - 1))) {
        yield { text: paragraph.slice(start, i), after: " " };
        start = end;
      } else if (end < length && paragraph.charCodeAt(end) === NEWLINE) {
        let next = end + 1;
        while (next < length && isBlank(paragraph.charCodeAt(next))) next++;
        yield { text: paragraph.slice(start, i), after: "\n" };
        start = end = next;
      }
      i = end;
    } else if (code === NEWLINE) {
      let next = i + 1;
      while (next < length && isBlank(paragraph.charCodeAt(next))) next++;
      yield { text: paragraph.slice(start, i), after: "\n" };
      start = i = next;
    } else {
      i++;
    }
  }
  yield { text: paragraph.slice(start), after: " " };
}

/**
 * The words of `text`, each with the one white-space character that ends it: what
 * `text.split(/(?<=\s)/)` gives ("a  b" is "a ", " ", "b"). Nothing for an empty text.
 */
export function* wordsOf(text: string): Generator<string> {
  const length = text.length;
  let start = 0;
  while (start < length) {
    let end = start;
    while (end < length && !isWhitespace(text.charCodeAt(end))) end++;
    if (end < length) end++;
    yield text.slice(start, end);
    start = end;
  }
}
