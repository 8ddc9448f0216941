import { chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../server/toolkit/config.ts";
import { currentTemplate } from "../../server/toolkit/db/embedded-template.ts";
import { startEmbeddedDatabase } from "../../server/toolkit/db/embedded.ts";
import { keepOthersFromWriting, writableByOthers } from "../../server/toolkit/db/private-files.ts";
import { databaseKind } from "../support/service.ts";

// Issue 31 M5: 968 of about 1,350 files under PERSONA_DATA_DIR/db were 0666, copied from the
// install's template. Every directory of a data dir is 0700 and every file 0600 once the server
// has started, for a new data dir (from the template or from scratch) and for an existing one.

/** Every entry under `dir` (and `dir` itself) whose mode lets its group or anyone else in, with that mode. */
function openToOthers(dir: string): string[] {
  const found: string[] = [];
  const check = (path: string) => {
    const mode = lstatSync(path).mode & 0o777;
    if (mode & 0o077) found.push(`${path.slice(dir.length) || "/"} ${mode.toString(8)}`);
  };
  check(dir);
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) check(join(entry.parentPath, entry.name));
  return found;
}

function openEverything(dir: string): void {
  chmodSync(dir, 0o777);
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isSymbolicLink()) chmodSync(join(entry.parentPath, entry.name), entry.isDirectory() ? 0o777 : 0o666);
  }
}

/** Starts the embedded database on `dataDir`, and answers what is open to others while it serves (lock file and socket included). */
async function openWhileServing(dataDir: string, expectTemplate = false): Promise<string[]> {
  const embedded = await startEmbeddedDatabase(loadConfig({ PERSONA_DATA_DIR: dataDir }));
  try {
    // A new data dir is copied from the install's template when there is one (not with --ignore-scripts).
    if (expectTemplate) expect(embedded.timings.fromTemplate).toBe(currentTemplate() !== undefined);
    return openToOthers(dataDir);
  } finally {
    await embedded.stop();
  }
}

describe.skipIf(databaseKind !== "embedded")("the modes of an embedded data dir (issue 31 M5)", () => {
  it("keeps a new data dir and an existing world-writable one to its owner", { timeout: 180_000 }, async () => {
    const work = mkdtempSync(join(tmpdir(), "persona-modes-"));
    try {
      // New: PERSONA_DATA_DIR is made 0700 too.
      const dataDir = join(work, "data");
      expect(await openWhileServing(dataDir, true)).toEqual([]);
      expect(openToOthers(dataDir)).toEqual([]);

      // A data dir from before the fix, its database files 0666 and 0777. PERSONA_DATA_DIR itself
      // is the operator's (it could be any directory): it is left as it is, what the server keeps
      // in it is not.
      openEverything(join(dataDir, "db"));
      chmodSync(dataDir, 0o755);
      expect(openToOthers(join(dataDir, "db")).length).toBeGreaterThan(100);
      expect(await openWhileServing(dataDir)).toEqual(["/ 755"]);
      expect(openToOthers(join(dataDir, "db"))).toEqual([]);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});

describe("the install's template (issue 31 M5)", () => {
  it("is set writable by its owner only, and one that others could write is recognised", () => {
    const template = mkdtempSync(join(tmpdir(), "persona-template-modes-"));
    try {
      mkdirSync(join(template, "base", "5"), { recursive: true });
      writeFileSync(join(template, "PG_VERSION"), "18\n");
      writeFileSync(join(template, "base", "5", "1259"), "");
      chmodSync(template, 0o755);
      chmodSync(join(template, "PG_VERSION"), 0o644);
      chmodSync(join(template, "base", "5", "1259"), 0o666);
      expect(writableByOthers(template)).toBe(true);
      keepOthersFromWriting(template);
      expect(writableByOthers(template)).toBe(false);
      expect(lstatSync(join(template, "base", "5", "1259")).mode & 0o777).toBe(0o644);
      expect(lstatSync(join(template, "base")).mode & 0o777).toBe(0o755);
    } finally {
      rmSync(template, { recursive: true, force: true });
    }
  });
});
