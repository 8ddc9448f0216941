import { checkAnswer } from "../../conformance/support/check.ts";
import { operation } from "../support/contract.ts";
import type { FuzzAnswer } from "./send.ts";

// The pass rule of every fuzzed answer. The contract checks (declared status, declared content
// type, JSON body valid against its schema, rate-limit headers) are the conformance suite's own
// (conformance/support/check.ts), so the fuzzer and the conformance suite judge alike.

/** 5xx answers the service may give: an area not live, and a provider that failed or is absent. */
function allowedServerError(operationId: string, status: number, code: string | undefined): boolean {
  if (status === 501) return code === "not_implemented";
  if (status === 502) return code === "upstream_error";
  if (status === 503) return code === "provider_unavailable" || (operationId === "ops_readyz" && code === undefined);
  return false;
}

const STACK = /\bat [\w$.<>]+ \(?(?:file:\/\/|\/|node:)[^)\n]*:\d+:\d+/;

export function problemsOf(operationId: string, answer: FuzzAnswer): string[] {
  const problems: string[] = [];
  let body: { error?: { code?: string; message?: string } } | undefined;
  try {
    body = answer.contentType === "application/json" ? JSON.parse(answer.text) : undefined;
  } catch {
    body = undefined;
  }
  if (answer.status >= 500) {
    const code = body?.error?.code;
    if (!allowedServerError(operationId, answer.status, code)) problems.push(`server error ${answer.status} ${code ?? ""}: ${body?.error?.message ?? answer.text.slice(0, 200)}`);
    if (operationId !== "ops_readyz" && (typeof code !== "string" || typeof body?.error?.message !== "string")) problems.push(`a ${answer.status} outside the error envelope`);
  }
  const { problems: contract } = checkAnswer(operation(operationId), { status: answer.status, headers: answer.headers, contentType: answer.contentType, text: answer.text });
  problems.push(...contract);
  if (answer.headers.get("x-powered-by")) problems.push(`x-powered-by: ${answer.headers.get("x-powered-by")}`);
  if (STACK.test(answer.text)) problems.push("a stack trace in the body");
  return problems;
}

/** The error code of an answer, if it is one in the envelope. */
export function errorCodeOf(answer: FuzzAnswer): string | undefined {
  if (answer.contentType !== "application/json") return undefined;
  try {
    return (JSON.parse(answer.text) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
}
