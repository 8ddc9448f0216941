/**
 * Everything the CLI prints as a result goes through here: with --json, stdout carries exactly one
 * JSON document and nothing else (progress and notices go to stderr), so scripts can pipe it to jq.
 */
export interface Output {
  json: boolean;
  /** Prints `value` as JSON with --json, otherwise runs `human`. */
  result: (value: unknown, human: () => void) => void;
  /** A human line on stdout (suppressed with --json, where it would corrupt the document). */
  line: (text?: string) => void;
  /** A notice on stderr, shown in both modes. */
  notice: (text: string) => void;
}

export function createOutput(json: boolean): Output {
  return {
    json,
    result: (value, human) => (json ? printJson(value) : human()),
    line: (text = "") => {
      if (!json) process.stdout.write(`${text}\n`);
    },
    notice: (text) => process.stderr.write(`${text}\n`),
  };
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export interface Column<T> {
  header: string;
  value: (row: T) => unknown;
  /** Longest cell before it is cut with an ellipsis (ids and dates are never cut). */
  max?: number;
}

function cell(value: unknown, max: number | undefined): string {
  let text = value === null || value === undefined ? "-" : Array.isArray(value) ? value.join(",") : String(value);
  text = text.replace(/\s+/g, " ");
  return max && text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A plain aligned table; an empty list prints `empty` instead so that "nothing" is explicit. */
export function printTable<T>(rows: readonly T[], columns: Column<T>[], empty = "(none)"): void {
  if (rows.length === 0) {
    process.stdout.write(`${empty}\n`);
    return;
  }
  const cells = rows.map((row) => columns.map((column) => cell(column.value(row), column.max)));
  const widths = columns.map((column, i) => Math.max(column.header.length, ...cells.map((r) => r[i]!.length)));
  const format = (values: string[]) => values.map((v, i) => (i === values.length - 1 ? v : v.padEnd(widths[i]!))).join("  ").trimEnd();
  process.stdout.write(`${format(columns.map((c) => c.header.toUpperCase()))}\n`);
  for (const row of cells) process.stdout.write(`${format(row)}\n`);
}

/** One record as `label: value` lines, for `get`/`show` commands. */
export function printFields(fields: [label: string, value: unknown][]): void {
  const width = Math.max(...fields.map(([label]) => label.length));
  for (const [label, value] of fields) {
    const text = value === null || value === undefined ? "-" : Array.isArray(value) ? value.join(", ") : String(value);
    process.stdout.write(`${`${label}:`.padEnd(width + 2)}${text}\n`);
  }
}

/** "3 of 12" footers for paged lists, so a human knows there is more. */
export function printPageFooter(shown: number, total: number | undefined, offset = 0): void {
  if (total !== undefined && total > shown) {
    process.stdout.write(`(${offset + 1}-${offset + shown} of ${total}; use --offset/--limit for more)\n`);
  }
}

/** "1 chunk", "3 chunks". */
export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}
