import type { Command } from "commander";

/**
 * `persona api <operationId>`: every operation of the contract, with flags made from it at run
 * time. Only the name is registered here; the contract is read when the command runs, so the
 * other commands start no slower.
 */
export function registerApiCommand(program: Command): void {
  program
    .command("api")
    .description("Call any API operation by its operationId; flags come from the contract (persona api --help lists them)")
    .argument("[operation]", "an operationId, e.g. personas_get")
    .argument("[flags...]", "the operation's flags (persona api <operation> --help)")
    // The operation's flags are its own, parsed once it is known (cli/api/flags.ts).
    .helpOption(false)
    .allowUnknownOption()
    .allowExcessArguments()
    .addHelpText("after", "\nRun `persona api --help` for every operation, `persona api <operation> --help` for one.\n")
    .action(async (operation: string | undefined, flags: string[], _options: unknown, command: Command) => {
      const { runApi } = await import("../api/run.ts");
      await runApi(command, operation, flags);
    });
}
