import { contract, type Operation, type ResponseSpec } from "../../test/support/contract.ts";
import { schemaErrors } from "../../test/support/schema.ts";

export interface Received {
  status: number;
  headers: Headers;
  contentType: string;
  text: string;
}

const PRISM_ERROR = "https://stoplight.io/prism/errors#";

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `prism proxy --errors` answers a request or response that breaks the contract with a problem report. */
function prismViolation(r: Received): string | undefined {
  const body = parseJson(r.text) as { type?: unknown } | undefined;
  const report = r.contentType === "application/problem+json" || (typeof body?.type === "string" && body.type.startsWith(PRISM_ERROR));
  if (report) return `Prism reports a contract violation (${r.status}): ${r.text.slice(0, 4000)}`;
  const header = r.headers.get("sl-violations");
  return header ? `Prism reports contract violations: ${header}` : undefined;
}

function headerProblems(spec: ResponseSpec, headers: Headers): string[] {
  const problems: string[] = [];
  for (const name of ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]) {
    const value = headers.get(name);
    if (value === null) problems.push(`header ${name} is missing`);
    else if (!/^-?\d+$/.test(value)) problems.push(`header ${name} is not an integer: ${value}`);
  }
  for (const [name, declared] of Object.entries(spec.headers ?? {})) {
    // A header by reference says whether it is required where it is defined (components/headers).
    const ref = (declared as { $ref?: string }).$ref;
    const defined = ref ? (contract.components as { headers?: Record<string, { required?: boolean }> }).headers?.[ref.split("/").pop()!] : (declared as { required?: boolean });
    const required = defined?.required ?? Boolean(ref);
    if (required && headers.get(name) === null && !problems.some((p) => p.includes(name))) problems.push(`declared header ${name} is missing`);
  }
  return problems;
}

/**
 * Everything the contract says about one answer: its status is declared for the operation, its
 * content type is one declared for that status, its JSON body matches the schema and the rate-limit
 * headers are there. Returns the problems found ([] when it conforms) and the parsed JSON body.
 */
export function checkAnswer(op: Operation, r: Received): { problems: string[]; json: unknown } {
  const violation = prismViolation(r);
  if (violation) return { problems: [violation], json: undefined };
  const spec = op.responses[String(r.status)] ?? op.responses.default;
  if (!spec) return { problems: [`status ${r.status} is not declared (declared: ${Object.keys(op.responses).join(", ")})`], json: undefined };
  const problems = headerProblems(spec, r.headers);
  const declared = Object.keys(spec.content ?? {});
  if (!declared.length) {
    if (r.text.length) problems.push(`status ${r.status} declares no body, got ${r.contentType}: ${r.text.slice(0, 200)}`);
    return { problems, json: undefined };
  }
  if (!declared.includes(r.contentType)) {
    problems.push(`content type ${r.contentType || "(none)"} is not declared for ${r.status} (declared: ${declared.join(", ")})`);
    return { problems, json: undefined };
  }
  if (r.contentType !== "application/json") return { problems, json: undefined };
  const json = parseJson(r.text);
  if (json === undefined) return { problems: [...problems, `the body is not JSON: ${r.text.slice(0, 200)}`], json };
  const schema = spec.content?.["application/json"]?.schema;
  if (schema) problems.push(...schemaErrors(schema, json).map((e) => `body ${e}`));
  return { problems, json };
}
