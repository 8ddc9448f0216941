import { Command } from "commander";
import { contextOf } from "../context.ts";
import { callOperation } from "./call.ts";
import { loadContract, type ApiContract } from "./contract.ts";
import { parseCall } from "./flags.ts";
import { listHelp, operationHelp } from "./help.ts";

/** `persona api [operation] [flags...]`: finds the operation in the contract, parses its flags, calls it. */
export async function runApi(command: Command, name: string | undefined, argv: string[]): Promise<void> {
  const contract = loadContract();
  if (name === undefined || name === "--help" || name === "-h") {
    // Without an operation it is a usage error, shown like commander's for a group without a command.
    process[name ? "stdout" : "stderr"].write(`${listHelp(contract)}\n`);
    if (!name) process.exitCode = 2;
    return;
  }
  const op = contract.operations.find((candidate) => candidate.id === name.replace(/-/g, "_"));
  if (!op) return unknownOperation(contract, name);
  // Usage mistakes are reported before credentials are looked at.
  const call = parseCall(op, contract, argv, () => `${operationHelp(op, contract)}\n`);
  const ctx = await contextOf(command);
  await callOperation(op.scope ? ctx.client() : ctx.clientIfAny(), op, contract, call, ctx.out.json);
}

/** commander's own "unknown command" error, with its "Did you mean …?" over the operation ids. */
function unknownOperation(contract: ApiContract, name: string): void {
  const ops = new Command("persona api")
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error: unknown command/, "persona: unknown operation")) })
    .showHelpAfterError("(run `persona api --help` for the list)");
  for (const op of contract.operations) ops.command(op.id);
  ops.parse([name], { from: "user" });
}
