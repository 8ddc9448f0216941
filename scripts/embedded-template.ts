// `npm install` runs this (postinstall): it creates and migrates an embedded database once and
// keeps its data dir as the template new embedded databases start from (server/toolkit/db/embedded-template.ts).
// A failure only costs speed, so it never fails the install: the database is then created at start.
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import type { Template } from "../server/toolkit/db/embedded-template.ts";

const started = Date.now();
const say = (line: string) => process.stderr.write(`embedded template: ${line}\n`);

async function build(target: Template): Promise<void> {
  const [{ startEmbeddedPostgres }, { loadConfig }, { openDatabase }, { createLogger }, { makeWorkerUtils }] = await Promise.all([
    import("../server/toolkit/db/embedded.ts"),
    import("../server/toolkit/config.ts"),
    import("../server/toolkit/db/database.ts"),
    import("../server/toolkit/logger.ts"),
    import("graphile-worker"),
  ]);
  const work = mkdtempSync(join(tmpdir(), "persona-template-"));
  try {
    const dataDir = join(work, "db");
    const embedded = await startEmbeddedPostgres(dataDir, { template: false });
    const config = loadConfig({ DATABASE_URL: embedded.url, LOG_LEVEL: "warn" });
    const db = await openDatabase(config, createLogger(config));
    try {
      await db.migrate();
      const utils = await makeWorkerUtils({ pgPool: db.pool, noPreparedStatements: true });
      await utils.migrate();
      await utils.release();
    } finally {
      await db.close();
      await embedded.stop();
    }
    const { openPglite } = await import("../server/toolkit/db/pglite-open.ts");
    const pg = await openPglite(dataDir);
    await pg.exec("CHECKPOINT");
    const tar = Buffer.from(await (await pg.dumpDataDir("none")).arrayBuffer());
    await pg.close();
    const cache = dirname(target.dir);
    mkdirSync(cache, { recursive: true });
    // Each written beside its place and renamed, the directory last: a template is used only once
    // both are there, so an interrupted install never leaves half of one.
    writeFileSync(`${target.tar}.partial`, tar, { mode: 0o644 });
    renameSync(`${target.tar}.partial`, target.tar);
    rmSync(`${target.dir}.partial`, { recursive: true, force: true });
    cpSync(dataDir, `${target.dir}.partial`, { recursive: true });
    await writableByOwnerOnly(`${target.dir}.partial`, target.tar);
    renameSync(`${target.dir}.partial`, target.dir);
    // Templates of earlier code or packages are never used again.
    for (const file of readdirSync(cache)) {
      if (file.startsWith("embedded-template-") && !file.startsWith(basename(target.dir))) rmSync(join(cache, file), { recursive: true, force: true });
    }
    say(`${(tar.length / 1024 / 1024).toFixed(1)} MB in ${((Date.now() - started) / 1000).toFixed(1)} s, ${target.dir}`);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * PGlite writes its files 0666, and the server will not copy a template anyone else could have
 * altered (issue 31 M5): the template is the installer's to write, everyone's to read (it holds no
 * secret). A template made before that is set right here.
 */
async function writableByOwnerOnly(dir: string, tar: string): Promise<void> {
  const { keepOthersFromWriting } = await import("../server/toolkit/db/private-files.ts");
  keepOthersFromWriting(dir);
  chmodSync(tar, 0o644);
}

try {
  const { currentTemplate, templatePaths } = await import("../server/toolkit/db/embedded-template.ts");
  const current = currentTemplate();
  if (current) {
    await writableByOwnerOnly(current.dir, current.tar);
    say(`up to date (${current.dir})`);
  } else await build(templatePaths());
} catch (error) {
  say(`not made (new embedded databases are created at start instead): ${error instanceof Error ? error.message : String(error)}`);
}
