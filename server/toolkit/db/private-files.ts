import { chmodSync, lstatSync, readdirSync, type Dirent } from "node:fs";
import { join } from "node:path";

/**
 * Keeps `dir` and everything under it to its owner: directories 0700, files without their group's
 * and others' bits (0600 for PostgreSQL's). PGlite writes the files of a new database 0666, and a
 * data dir copied from the install's template or restored from an archive took them as they were
 * (issue 31 M5). Only entries whose mode is wrong are changed, so a data dir already right costs one
 * lstat per file (about 1,400 of them). Links are left alone.
 */
export const keepToOwner = (dir: string) => applyModes(dir, 0o700, (mode) => mode & 0o700);

/** Lets everyone read `dir` and everything under it, and nobody but the owner write (directories 0755, files 0644): the install's template, which holds no secret. */
export const keepOthersFromWriting = (dir: string) => applyModes(dir, 0o755, () => 0o644);

/** Whether anyone but the owner may write `dir` or anything under it (a template that could have been altered). */
export function writableByOthers(dir: string): boolean {
  if (lstatSync(dir).mode & 0o022) return true;
  return entriesUnder(dir).some((entry) => !entry.isSymbolicLink() && lstatSync(join(entry.parentPath, entry.name)).mode & 0o022);
}

function applyModes(dir: string, directoryMode: number, fileMode: (mode: number) => number): void {
  const apply = (path: string, directory: boolean) => {
    const mode = lstatSync(path).mode & 0o777;
    const wanted = directory ? directoryMode : fileMode(mode);
    if (mode !== wanted) chmodSync(path, wanted);
  };
  apply(dir, true);
  for (const entry of entriesUnder(dir)) {
    if (!entry.isSymbolicLink()) apply(join(entry.parentPath, entry.name), entry.isDirectory());
  }
}

const entriesUnder = (dir: string): Dirent[] => readdirSync(dir, { recursive: true, withFileTypes: true });
