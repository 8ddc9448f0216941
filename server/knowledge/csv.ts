/** The file is not well-formed CSV; the message says where. */
export class CsvError extends Error {
  override name = "CsvError";
}

/**
 * Parses RFC 4180 CSV (comma-separated, double-quoted fields with `""` escapes, CRLF or LF line
 * ends). An unterminated quote or text after a closing quote is an error; rows may differ in length
 * (real exports are often ragged). Blank lines are skipped.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = "";
  let i = 0;
  let line = 1;
  // Whether anything (even an empty quoted field) was read on the current line.
  let started = false;
  const endField = () => {
    row.push(field);
    field = "";
  };
  const endRow = () => {
    endField();
    if (row.length > 1 || row[0] !== "" || started) rows.push(row);
    row = [];
    started = false;
  };
  while (i < text.length) {
    const char = text[i]!;
    if (char === '"' && field === "") {
      started = true;
      const opened = line;
      i++;
      for (;;) {
        if (i >= text.length) throw new CsvError(`Unterminated quoted field starting on line ${opened}`);
        const c = text[i]!;
        if (c === '"') {
          if (text[i + 1] === '"') {
            field += '"';
            i += 2;
            continue;
          }
          i++;
          break;
        }
        if (c === "\n") line++;
        field += c;
        i++;
      }
      const next = text[i];
      if (next !== undefined && next !== "," && next !== "\n" && next !== "\r") {
        throw new CsvError(`Unexpected text after a closing quote on line ${line}`);
      }
      continue;
    }
    if (char === ",") {
      started = true;
      endField();
    } else if (char === "\n" || char === "\r") {
      if (char === "\r" && text[i + 1] === "\n") i++;
      endRow();
      line++;
    } else if (char === '"') {
      throw new CsvError(`A quote inside an unquoted field on line ${line}`);
    } else {
      field += char;
    }
    i++;
  }
  if (field !== "" || row.length > 0 || started) endRow();
  return rows;
}
