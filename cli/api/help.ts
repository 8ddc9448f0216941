import { allows } from "../../server/areas/auth/scopes.ts";
import { examples } from "../help.ts";
import type { ApiContract, ApiOperation } from "./contract.ts";
import { answersBinary, flagOf, takesData } from "./flags.ts";
import { fieldsOf, limits, oneLine, typeLabel } from "./schema.ts";

const WIDTH = 100;

/** Wraps `text` at WIDTH columns, every line after the first indented by `indent`. */
function wrap(text: string, indent: number): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && indent + line.length + 1 + word.length > WIDTH) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines.join(`\n${" ".repeat(indent)}`);
}

/** Aligned `left  right` rows, the right column wrapped. */
function rows(entries: [left: string, right: string][], indent = 2, width = Math.min(34, Math.max(...entries.map(([left]) => left.length)))): string {
  return entries
    .map(([left, right]) => {
      const pad = left.length > width ? `\n${" ".repeat(indent + width + 2)}` : " ".repeat(width - left.length + 2);
      return `${" ".repeat(indent)}${left}${pad}${wrap(right, indent + width + 2)}`.trimEnd();
    })
    .join("\n");
}

const INTRO =
  "Calls any operation of the API as the contract declares it: path, query and header parameters are " +
  "flags (--id, --limit, ...), a JSON body is --data '<json>', --data @file.json or --data @- (stdin), " +
  "and an upload's file is --file <path>. Uses the stored login (or --api-key) and the exit codes of " +
  "every command. Prints the answer as JSON (pretty, or one line with --json); a streamed answer prints " +
  "one JSON line per event. `persona api <operation> --help` shows an operation's flags, body and scope.";

/** `persona api --help`: every operation, grouped by tag. */
export function listHelp(contract: ApiContract): string {
  const known = new Set(contract.tags.map((tag) => tag.name));
  const tags = [...contract.tags, ...[...new Set(contract.operations.map((op) => op.tag))].filter((tag) => !known.has(tag)).map((name) => ({ name, description: "" }))];
  const width = Math.max(...contract.operations.map((op) => op.id.length));
  const groups = tags
    .map((tag) => {
      const ops = contract.operations.filter((op) => op.tag === tag.name);
      if (!ops.length) return "";
      return `${tag.name}${tag.description ? `: ${tag.description}` : ""}\n${rows(ops.map((op) => [op.id, op.summary]), 2, width)}\n`;
    })
    .filter(Boolean);
  return [
    "Usage: persona api <operation> [flags]",
    "",
    wrap(INTRO, 0),
    "",
    `Operations (${contract.operations.length}):`,
    "",
    groups.join("\n"),
    examples([
      "persona api personas_list --limit 5 --sort name",
      "persona api personas_get --id 0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01",
      "persona api personas_create --data @persona.json --json | jq -r .id",
      "persona api knowledge_upload --persona-id 0193a6c4-7b1e-7c2a-9d4f-2f1e8c5b6a01 --file notes.md",
      "persona api conversations_stream_message --id 0193… --data '{\"content\":\"Hello!\"}'",
    ]),
  ].join("\n");
}

/** Who may call it: the contract's scope and every scope of either key vocabulary that grants it. */
function scopeLine(op: ApiOperation): string {
  if (!op.scope) return "Credential-free: no login needed (a stored one is sent when there is one).";
  const info = { operationId: op.id, method: op.method, scope: op.scope };
  const granting = (scopes: string[]) => scopes.filter((scope) => allows({ userId: "-", kind: "api_key", scopes: new Set([scope]) }, info));
  const fine = granting(["personas:read", "personas:write", "conversations:read", "conversations:write", "voice", "admin"]);
  const alternative = granting(["read", "chat", "admin"]);
  return `Scope: ${op.scope}. A login has every scope; an API key or OAuth token needs ${fine.join(" or ")} (alternative form: ${alternative.join(" or ")}).`;
}

/** The command line the contract's own examples make, for the help's Example. */
function exampleCall(op: ApiOperation, contract: ApiContract): string {
  const quote = (value: string) => (/^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`);
  const parts = [`persona api ${op.id}`];
  for (const parameter of op.parameters) {
    if (parameter.required && parameter.example !== undefined) parts.push(`--${flagOf(parameter)} ${quote(String(parameter.example))}`);
    else if (parameter.required) parts.push(`--${flagOf(parameter)} <${typeLabel(parameter.schema, contract)}>`);
  }
  if (takesData(op, contract) && op.body?.example !== undefined) {
    const example = op.body.contentType === "multipart/form-data" ? omit(op.body.example, op.fileFields) : op.body.example;
    parts.push(`--data ${quote(JSON.stringify(example))}`);
  }
  if (op.fileFields.length) parts.push("--file <path>");
  if (answersBinary(op)) parts.push("-o <file>");
  return parts.join(" ");
}

function omit(value: unknown, keys: string[]): unknown {
  if (!value || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).filter(([key]) => !keys.includes(key)));
}

/**
 * A contract description, wrapped: its paragraphs and list items keep their own lines. Its code
 * blocks are left out: they show the SDK's call (the SDK's method docs are made from them).
 */
function paragraphs(text: string): string[] {
  return text
    .replace(/^```[^\n]*\n[\s\S]*?^```$/gm, "")
    .trim()
    .split(/\n(?=[ \t]*(?:[-*] |\d+\. ))|(?<!\n)\n{2,}/)
    .map((block) => (/^\s*(?:[-*] |\d+\. )/.test(block) ? `  ${wrap(oneLine(block), 4)}` : wrap(oneLine(block), 0)));
}

/** `persona api <operation> --help`. */
export function operationHelp(op: ApiOperation, contract: ApiContract): string {
  const out: string[] = [`Usage: persona api ${op.id} [flags]`, "", `${op.summary} (${op.method} ${op.path}, tag ${op.tag})`];
  if (op.description) out.push("", ...paragraphs(op.description));
  out.push("", wrap(scopeLine(op), 0));

  const flags: [string, string][] = op.parameters.map((p) => {
    const schema = contract.resolve(p.schema);
    const facts = [p.in, p.required ? "required" : "optional", ...limits(p.schema, contract), schema.type === "array" ? "repeatable" : undefined].filter(Boolean);
    return [`--${flagOf(p)} <${typeLabel(p.schema, contract)}>`, `${facts.join(", ")}. ${oneLine(p.description ?? schema.description)}`.trim()];
  });
  if (takesData(op, contract)) flags.push(["--data <json|@file|@->", `the ${op.body!.contentType} body${op.body!.required && op.body!.contentType !== "multipart/form-data" ? " (required)" : ""}: fields below`]);
  if (op.fileFields.length) flags.push(["--file <path>", `${op.body!.required ? "required" : "optional"}: the file, sent as the multipart part \`${op.fileFields.join("`/`")}\``]);
  if (answersBinary(op)) flags.push(["-o, --output <file>", "write the binary answer to this file (else stdout, which must not be a terminal)"]);
  out.push("", "Flags:", flags.length ? rows(flags) : "  (none)");

  if (op.body) {
    const fields = fieldsOf(op.body.schema, contract).filter((field) => !op.fileFields.includes(field.name));
    if (fields.length) {
      out.push("", `Body (${op.body.contentType}${op.body.required ? "" : ", optional"}):`);
      out.push(
        rows(
          fields.map((field) => {
            const facts = [typeLabel(field.schema, contract), field.required ? "required" : undefined, ...limits(field.schema, contract)].filter(Boolean);
            return [field.name, `${facts.join(", ")}. ${oneLine(contract.resolve(field.schema).description)}`.trim()];
          }),
        ),
      );
    }
  }

  const answers = op.successes.map((r) => {
    const body = r.schema ? ` ${typeLabel(r.schema, contract)}` : "";
    return `${r.status}${r.contentTypes.length ? ` ${r.contentTypes.join(", ")}` : ""}${body}`;
  });
  out.push("", `Answers: ${answers.join("; ") || "-"}. Errors exit 1, or 3 for 401/403, 4 for 404.`);
  out.push("", "Global flags: --json (one-line JSON), --base-url <url>, --api-key <key>.");
  out.push(examples([exampleCall(op, contract)]));
  return out.join("\n");
}
