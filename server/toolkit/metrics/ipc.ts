import cluster from "node:cluster";
import { randomUUID } from "node:crypto";

// The messages between the primary of `persona serve --processes N` and its processes, for what one
// process must answer for all of them: the metrics scrape and the readiness of each. A process asks
// the primary (ASK); the primary asks every process (PROBE) and answers (ANSWER).

export const ASK = "persona:census-ask";
export const ANSWER = "persona:census-answer";
export const PROBE = "persona:census-probe";
export const PROBED = "persona:census-probed";

/** What is asked: every process's metrics as one exposition, or every process's readiness. */
export type Question = "metrics" | "readiness";

export interface Ask {
  type: typeof ASK;
  id: string;
  question: Question;
}
export interface Answer {
  type: typeof ANSWER;
  id: string;
  answer?: unknown;
  error?: string;
}
export interface Probe {
  type: typeof PROBE;
  id: string;
  question: Question;
}
export interface Probed {
  type: typeof PROBED;
  id: string;
  answer?: unknown;
  error?: string;
}

export const isMessage = <T extends { type: string }>(message: unknown, type: T["type"]): message is T =>
  typeof message === "object" && message !== null && (message as { type?: unknown }).type === type;

/** Set in a process of `persona serve --processes N` once it answers the primary's probes (member.ts). */
let member = false;

export function markMember(): void {
  member = true;
}

/** Whether this process is one of the processes of `persona serve --processes N`. */
export function inCluster(): boolean {
  return member && cluster.isWorker;
}

/** How long a process waits for the primary's answer (which waits for every process's). */
const ASK_TIMEOUT_MS = 8_000;

const pending = new Map<string, { resolve: (answer: unknown) => void; reject: (error: Error) => void }>();
let listening = false;

/** Asks the primary `question` about every process; rejects when it does not answer in time. */
export function askPrimary(question: Question): Promise<unknown> {
  if (!listening) {
    listening = true;
    // One listener for every question: a load balancer probing often asks many at once.
    process.on("message", (message: unknown) => {
      if (!isMessage<Answer>(message, ANSWER)) return;
      const waiting = pending.get(message.id);
      if (!waiting) return;
      pending.delete(message.id);
      if (message.error !== undefined) waiting.reject(new Error(message.error));
      else waiting.resolve(message.answer);
    });
  }
  const id = randomUUID();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      pending.delete(id);
      reject(new Error(`the primary did not answer (${question}) within ${ASK_TIMEOUT_MS} ms`));
    }, ASK_TIMEOUT_MS);
    pending.set(id, {
      resolve: (answer) => {
        clearTimeout(timer);
        resolve(answer);
      },
      reject: (error) => {
        clearTimeout(timer);
        reject(error);
      },
    });
    process.send!({ type: ASK, id, question } satisfies Ask);
  });
}
