import { it } from "vitest";
import { NotLiveError } from "./client.ts";

/**
 * One test per operation, named by its operationId. An operation whose area answers 501
 * not_implemented is reported as skipped, never as passed.
 */
export function op(operationId: string, body: () => Promise<void>, timeout?: number): void {
  it(
    operationId,
    async (context) => {
      try {
        await body();
      } catch (error) {
        if (error instanceof NotLiveError) context.skip(error.message);
        throw error;
      }
    },
    timeout,
  );
}

/** Runs a setup step whose area may not be live yet: undefined then, instead of a failure. */
export async function ifLive<T>(step: () => Promise<T>): Promise<T | undefined> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof NotLiveError) return undefined;
    throw error;
  }
}
