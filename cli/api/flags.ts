import { Command, InvalidArgumentError, Option } from "commander";
import { booleanValue, collect } from "../parse.ts";
import type { ApiContract, ApiOperation, ApiParameter } from "./contract.ts";
import { fieldsOf, typeLabel } from "./schema.ts";

/** What the command line of one operation said, ready to be sent. */
export interface ParsedCall {
  path: Record<string, string>;
  query: Record<string, unknown>;
  header: Record<string, string>;
  /** `--data` as given: JSON, `@file` or `@-`. */
  data: string | undefined;
  file: string | undefined;
  output: string | undefined;
}

// The flags every operation may have besides its parameters.
const OWN_FLAGS = new Set(["data", "file", "output", "help"]);

/** `persona_id` -> `--persona-id`; a parameter that would shadow one of our own flags says where it goes. */
export function flagOf(parameter: ApiParameter): string {
  const name = parameter.name.replace(/_/g, "-").toLowerCase();
  return OWN_FLAGS.has(name) ? `${parameter.in}-${name}` : name;
}

/** Whether an answer of this type is bytes for a file rather than something to print. */
export const isBinary = (contentType: string) => !/^(application\/([\w.+-]+\+)?json|text\/)/.test(contentType);

export const takesData = (op: ApiOperation, contract: ApiContract) =>
  op.body !== undefined && (op.body.contentType !== "multipart/form-data" || fieldsOf(op.body.schema, contract).some((f) => !op.fileFields.includes(f.name)));

export const answersBinary = (op: ApiOperation) => op.successes.some((r) => r.contentTypes.some(isBinary));

function parserFor(parameter: ApiParameter, contract: ApiContract): ((raw: string, previous: unknown) => unknown) | undefined {
  const schema = contract.resolve(parameter.schema);
  if (schema.type === "array") return (raw, previous) => collect(raw, previous as string[] | undefined);
  if (schema.type === "boolean") return (raw) => booleanValue(raw);
  if (schema.type === "integer" || schema.type === "number") {
    return (raw) => {
      const value = Number(raw);
      if (!Number.isFinite(value) || (schema.type === "integer" && !Number.isInteger(value))) {
        throw new InvalidArgumentError(schema.type === "integer" ? "must be a whole number" : "must be a number");
      }
      return value;
    };
  }
  return undefined;
}

/**
 * The operation's own command line, built from the contract: one flag per path, query and header
 * parameter (mandatory when the contract requires it, limited to its enum), `--data` for a body,
 * `--file` for a multipart file and `--output` for a binary answer. `help` renders `--help`.
 */
export function parseCall(op: ApiOperation, contract: ApiContract, argv: string[], help: () => string): ParsedCall {
  const command = new Command(op.id)
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, "persona: ")) })
    .showHelpAfterError(`(run \`persona api ${op.id} --help\` for its flags)`)
    .configureHelp({ formatHelp: help })
    .helpOption("-h, --help", "show the operation's parameters, body and scope");
  const byParameter = new Map<ApiParameter, Option>();
  for (const parameter of op.parameters) {
    const schema = contract.resolve(parameter.schema);
    const option = new Option(`--${flagOf(parameter)} <${typeLabel(parameter.schema, contract)}>`, parameter.description ?? "");
    if (schema.enum && schema.type !== "array") option.choices(schema.enum.map(String));
    else {
      const parse = parserFor(parameter, contract);
      if (parse) option.argParser(parse);
    }
    if (parameter.required) option.makeOptionMandatory();
    command.addOption(option);
    byParameter.set(parameter, option);
  }
  const data = takesData(op, contract) ? new Option("--data <json>", "the body: JSON, @file or @- (stdin)") : undefined;
  // A multipart body's parts other than the file come from --data too, so only the file is mandatory.
  if (data && op.body?.required && op.body.contentType !== "multipart/form-data") data.makeOptionMandatory();
  if (data) command.addOption(data);
  if (op.fileFields.length) {
    const file = new Option("--file <path>", `the file to upload (the ${op.fileFields.join("/")} part)`);
    if (op.body?.required) file.makeOptionMandatory();
    command.addOption(file);
  }
  if (answersBinary(op)) command.addOption(new Option("-o, --output <file>", "write a binary answer here instead of stdout"));

  command.parse(snakeFlagsToKebab(argv), { from: "user" });

  const call: ParsedCall = { path: {}, query: {}, header: {}, data: undefined, file: undefined, output: undefined };
  for (const [parameter, option] of byParameter) {
    const value: unknown = command.getOptionValue(option.attributeName());
    if (value === undefined) continue;
    if (parameter.in === "path") call.path[parameter.name] = String(value);
    else if (parameter.in === "header") call.header[parameter.name] = String(value);
    else call.query[parameter.name] = value;
  }
  const opts = command.opts<{ data?: string; file?: string; output?: string }>();
  return { ...call, data: opts.data, file: opts.file, output: opts.output };
}

/** The contract's own spelling (`--persona_id`) works as well as the usual one (`--persona-id`). */
function snakeFlagsToKebab(argv: string[]): string[] {
  const end = argv.indexOf("--");
  return argv.map((token, i) => {
    if ((end >= 0 && i >= end) || !token.startsWith("--")) return token;
    const eq = token.indexOf("=");
    const name = eq < 0 ? token : token.slice(0, eq);
    return name.replace(/_/g, "-") + (eq < 0 ? "" : token.slice(eq));
  });
}
