import { readFileSync } from "node:fs";
import type { Command, Option } from "commander";
import { describe, expect, it } from "vitest";
import { enumOfOption } from "../../cli/contract-enums.ts";
import { buildProgram } from "../../cli/program.ts";
import { root } from "../support/contract.ts";

// Every value list the CLI offers for a contract enum is the contract's own, read from
// generated/openapi.json: a value added in spec/ reaches the command line without an edit.
const schemas = (JSON.parse(readFileSync(`${root}/generated/openapi.json`, "utf8")) as { components: { schemas: Record<string, { enum?: string[] }> } }).components.schemas;
const enumValues = (name: string) => schemas[name]?.enum;

function* commandsOf(command: Command): Generator<Command> {
  yield command;
  for (const sub of command.commands) yield* commandsOf(sub);
}

const pathOf = (command: Command): string => (command.parent ? `${pathOf(command.parent)} ${command.name()}` : command.name());

describe("contract enums on the command line", () => {
  const program = buildProgram();
  const withChoices = [...commandsOf(program)].flatMap((command) =>
    (command.options as Option[]).filter((option) => option.argChoices).map((option) => ({ where: `${pathOf(command)} ${option.long}`, option })),
  );

  it("finds the options that take one", () => {
    expect(withChoices.map((o) => o.where)).toEqual(expect.arrayContaining(["persona say --voice", "persona personas create --voice", "persona personas create --category", "persona rooms create --reply-mode", "persona image --style", "persona image --aspect"]));
  });

  it("each option's choices equal the contract's enum", () => {
    for (const { where, option } of withChoices) {
      const name = enumOfOption(option);
      expect(name, `${where} takes its choices from a contract enum`).toBeDefined();
      expect(option.argChoices, where).toEqual(enumValues(name!));
    }
  });

  it("plans and webhook events are the contract's", () => {
    const find = (path: string) => [...commandsOf(program)].find((command) => pathOf(command) === path)!;
    const plans = enumValues("Plan")!;
    expect(find("persona users set-plan").registeredArguments[1]!.description).toBe(plans.join(" | "));
    expect(find("persona users list").options.find((o) => o.long === "--plan")!.description).toContain(plans.join(", "));
    expect(find("persona webhooks create").options.find((o) => o.long === "--event")!.description).toBe(`event(s) to deliver: ${enumValues("WebhookEventType")!.join(", ")}`);
  });
});
