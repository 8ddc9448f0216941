// Edits of a long text, made in one pass into a buffer outside the JavaScript heap. Issue 31: in
// the knowledge worker thread, `String.prototype.replace` or `replaceAll` with millions of matches
// (10 MB of `\r\n`, of `""`) built about 200 MB of parts inside one native call, which the
// thread's heap limit cannot stop in time: past the limit, the whole process aborts
// (nodejs/node#47224). These allocate the text's size twice, outside the heap, at most.

const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const QUOTE = 0x22;

const utf16 = new TextDecoder("utf-16le");

// Short texts are edited the ordinary way: the parts of a few thousand matches cost nothing.
const SHORT = 64 * 1024;

/** `text` with each `\r\n` and lone `\r` made `\n`. */
export function normalizeLineEnds(text: string): string {
  if (!text.includes("\r")) return text;
  if (text.length <= SHORT) return text.replace(/\r\n?/g, "\n");
  const out = new Uint16Array(text.length);
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code === CARRIAGE_RETURN) {
      out[length++] = LINE_FEED;
      if (text.charCodeAt(i + 1) === LINE_FEED) i++;
    } else {
      out[length++] = code;
    }
  }
  return utf16.decode(out.subarray(0, length));
}

/** The inside of a quoted CSV field with each doubled quote `""` made one `"`. */
export function undoubleQuotes(text: string): string {
  if (text.length <= SHORT) return text.replaceAll('""', '"');
  const out = new Uint16Array(text.length);
  let length = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    out[length++] = code;
    if (code === QUOTE && text.charCodeAt(i + 1) === QUOTE) i++;
  }
  return utf16.decode(out.subarray(0, length));
}
