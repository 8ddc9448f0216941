import type { components } from "../../generated/openapi.d.ts";

export type PlanName = components["schemas"]["Plan"];

export interface PlanLimits {
  messagesPerMonth: number;
  personas: number;
  knowledgeDocs: number;
}

/** DECISIONS.md, Plans. */
export const PLAN_LIMITS: Record<PlanName, PlanLimits> = {
  free: { messagesPerMonth: 200, personas: 3, knowledgeDocs: 5 },
  plus: { messagesPerMonth: 2_000, personas: 10, knowledgeDocs: 25 },
  pro: { messagesPerMonth: 10_000, personas: 50, knowledgeDocs: 100 },
  creator: { messagesPerMonth: 50_000, personas: 200, knowledgeDocs: 500 },
};

export function limitsOf(plan: string): PlanLimits {
  return PLAN_LIMITS[plan as PlanName] ?? PLAN_LIMITS.free;
}
