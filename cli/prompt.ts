import { createInterface } from "node:readline/promises";
import { Writable } from "node:stream";
import { usageError } from "./errors.ts";

/** Interactive prompts are only offered when a person is there to answer them. */
export const interactive = (): boolean => Boolean(process.stdin.isTTY && process.stderr.isTTY);

/**
 * Asks one question on the terminal. Prompts go to stderr so that stdout stays clean for --json;
 * with `hidden` the answer is not echoed (passwords).
 */
export async function ask(question: string, options: { hidden?: boolean } = {}): Promise<string> {
  let muted = false;
  const output = new Writable({
    write(chunk: Buffer, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  try {
    const answer = rl.question(question);
    // Mute only after the question itself was written: from here on it would echo the keys typed.
    muted = Boolean(options.hidden);
    const value = await answer;
    if (options.hidden) process.stderr.write("\n");
    return value;
  } finally {
    rl.close();
  }
}

/** The option's value, else an answer from the terminal, else a usage error naming the option. */
export async function valueOrAsk(value: string | undefined, option: string, question: string, hidden = false): Promise<string> {
  if (value !== undefined && value !== "") return value;
  if (!interactive()) throw usageError(`${option} is required when not on a terminal`);
  const answer = (await ask(question, { hidden })).trim();
  if (!answer) throw usageError(`${option} is required`);
  return answer;
}
