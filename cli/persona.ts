#!/usr/bin/env node
// The `persona` command line: server commands (serve, worker, migrate) start parts of the server;
// the admin commands talk to a running server through the SDK, except oauth-clients and mail,
// whose data has no API endpoint and which therefore open the server's database. packages/cli
// bundles this same entry into the installable package, without the server (docs/adr/0331).
import { CommanderError } from "commander";
import { describeError, errorJson, EXIT, type DescribedError } from "./errors.ts";
import { exitWhenDone } from "./lifecycle.ts";
import { buildProgram } from "./program.ts";

const program = buildProgram();

try {
  await program.parseAsync();
  exitWhenDone(Number(process.exitCode ?? EXIT.ok));
} catch (error) {
  process.exitCode = exitCodeOf(error);
  exitWhenDone(process.exitCode);
}

function exitCodeOf(error: unknown): number {
  if (error instanceof CommanderError) {
    // commander has already printed its message (or the help); only the code is left to choose.
    if (error.code === "commander.helpDisplayed" || error.code === "commander.version") return EXIT.ok;
    return EXIT.usage;
  }
  // The server's own start-up errors, matched by name: importing their classes would load the
  // server's modules for every command.
  const described: DescribedError =
    error instanceof Error && (error.name === "ConfigError" || error.name === "StartupError")
      ? { message: error.message, exitCode: EXIT.error, code: error.name === "ConfigError" ? "config" : "startup" }
      : describeError(error, program.opts<{ baseUrl?: string }>().baseUrl);
  // With --json, scripts parse stderr too: the error is one JSON line there.
  process.stderr.write(wantsJson() ? `${errorJson(described)}\n` : `persona: ${described.message}\n`);
  return described.exitCode;
}

function wantsJson(): boolean {
  const options = process.argv.slice(2);
  const end = options.indexOf("--");
  return (end < 0 ? options : options.slice(0, end)).includes("--json");
}
