import type { ToolCall, ToolCallDelta } from "../../toolkit/providers/llm/types.ts";

/**
 * Puts a streamed reply's tool calls together from their pieces: each call's first piece carries
 * its id and name, the later ones more of its arguments' text, all under the call's index.
 */
export class ToolCallCollector {
  readonly #calls = new Map<number, ToolCall>();

  add(piece: ToolCallDelta): void {
    const call = this.#calls.get(piece.index) ?? { id: "", name: "", arguments: "" };
    if (piece.id) call.id = piece.id;
    if (piece.name) call.name += piece.name;
    if (piece.arguments) call.arguments += piece.arguments;
    this.#calls.set(piece.index, call);
  }

  /** The calls in index order. */
  calls(): ToolCall[] {
    return [...this.#calls.entries()].sort(([a], [b]) => a - b).map(([, call]) => call);
  }
}
