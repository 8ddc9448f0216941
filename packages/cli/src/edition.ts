import { fileURLToPath } from "node:url";
import type { Edition } from "../../../cli/edition.ts";
import manifest from "../package.json" with { type: "json" };

// The installable package's edition, put in the place of cli/edition.ts by build.mjs: the client
// commands only, the package's own version, and the contract copied next to the bundle (dist/).
export const edition: Edition = {
  kind: "client",
  version: manifest.version,
  contractFile: fileURLToPath(new URL("./openapi.json", import.meta.url)),
};
