import { fileURLToPath } from "node:url";
import manifest from "../package.json" with { type: "json" };

/**
 * What differs between the `persona` of a server installation (this file: every command, run from
 * the repository's sources) and the installable CLI package, whose build puts
 * packages/cli/src/edition.ts in this module's place (packages/cli/build.mjs).
 */
export interface Edition {
  /** "server": every command; "client": the package without the server, whose server commands only say so. */
  kind: "server" | "client";
  version: string;
  /** The contract's JSON, which `persona api` and the options' choices read at run time. */
  contractFile: string;
}

export const edition: Edition = {
  kind: "server",
  version: manifest.version,
  contractFile: fileURLToPath(new URL("../generated/openapi.json", import.meta.url)),
};
