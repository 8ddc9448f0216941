// What the doc generators share: a section of a file between two marker comments, and writing the
// files (`npm run gen`) or failing when one is stale (`--check`, `npm run check`).
import { readFileSync, writeFileSync } from "node:fs";
import { relative, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");

/** `text` with what stands between the `begin` and `end` marker lines replaced by `body` (the markers stay). */
export function withSection(text: string, begin: string, end: string, body: string, where: string): string {
  const start = text.indexOf(begin);
  const stop = text.indexOf(end);
  if (start < 0 || stop < start) throw new Error(`${where} has no section between the markers ${begin} and ${end}`);
  return `${text.slice(0, start)}${begin}\n${body}${text.slice(stop)}`;
}

/** Writes each file, or with `--check` in the arguments writes nothing and exits 1 naming the stale ones. */
export function writeOrCheck(files: { path: string; text: string }[]): void {
  if (!process.argv.includes("--check")) {
    for (const file of files) writeFileSync(file.path, file.text);
    return;
  }
  const stale = files.filter((file) => {
    try {
      return readFileSync(file.path, "utf8") !== file.text;
    } catch {
      return true;
    }
  });
  for (const file of stale) process.stderr.write(`check failed: ${relative(root, file.path)} is stale; run \`npm run gen\` and commit it\n`);
  if (stale.length) process.exit(1);
}
