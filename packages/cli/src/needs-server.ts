import { CliError, EXIT } from "../../../cli/errors.ts";

// What the installable package bundles in the place of each module of the server (build.mjs): the
// commands that start the server or open its database import one, and loading it ends the command.
// They import it on use (`await import(…)`), so the other commands never load it.
throw new CliError(
  "this command starts the server or works on its database, and needs the server package: run it from a Persona server installation (npx persona … in its directory)",
  EXIT.error,
  "needs_server",
);
