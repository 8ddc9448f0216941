import { costNanos } from "./cost.ts";
import { BUDGET_SHARE, type ModelEntry } from "./entries.ts";

/** How much of a model a reply may use: its window (as capped), its most output, and what the context may fill. */
export interface ModelBudget {
  contextTokens: number;
  maxOutputTokens: number;
  /** Tokens the assembled context may take: the window less the output, less the share an estimated count keeps back. */
  budget: number;
}

/** The caps the settings put on every model (CHAT_CONTEXT_TOKENS, CHAT_MAX_OUTPUT_TOKENS when set). */
export interface RegistryCaps {
  contextTokens?: number | undefined;
  maxOutputTokens?: number | undefined;
}

/**
 * The models personas may use, in memory (loaded at start, never queried): lookups, budgets and
 * prices. Where a model is reached is the chat provider's (providers/llm/router.ts).
 */
export class ModelRegistry {
  readonly defaultId: string;
  readonly source: "file" | "settings";
  readonly #entries: Map<string, ModelEntry>;
  readonly #caps: RegistryCaps;
  #largest: ModelBudget | undefined;

  constructor(entries: readonly ModelEntry[], defaultId: string, caps: RegistryCaps = {}) {
    this.#entries = new Map(entries.map((entry) => [entry.id, entry]));
    this.defaultId = defaultId;
    this.source = entries[0]?.source ?? "settings";
    this.#caps = caps;
  }

  /** Every model, the default first, then in the order the registry lists them. */
  list(): ModelEntry[] {
    const all = [...this.#entries.values()];
    return [...all.filter((entry) => entry.id === this.defaultId), ...all.filter((entry) => entry.id !== this.defaultId)];
  }

  has(id: string): boolean {
    return this.#entries.has(id);
  }

  get(id: string): ModelEntry | undefined {
    return this.#entries.get(id);
  }

  get default(): ModelEntry {
    return this.#entries.get(this.defaultId)!;
  }

  /**
   * The entry a persona's model stands for. A model the registry no longer lists (a persona made
   * before the operator changed it) runs as the default model when the registry is a file; without
   * one it runs as itself on the one chat API, as it did before there was a registry.
   */
  resolve(id: string): ModelEntry {
    const entry = this.#entries.get(id);
    if (entry) return entry;
    const fallback = this.default;
    return fallback.source === "settings" ? { ...fallback, id, upstreamModel: id } : fallback;
  }

  /** The model's window and output as the settings cap them. */
  limits(entry: ModelEntry): { contextTokens: number; maxOutputTokens: number } {
    return {
      contextTokens: Math.min(entry.contextWindow, this.#caps.contextTokens ?? Infinity),
      maxOutputTokens: Math.min(entry.maxOutputTokens, this.#caps.maxOutputTokens ?? Infinity),
    };
  }

  /** One model's budget: its window less its output, less what an estimated count keeps back. */
  budgetOf(entry: ModelEntry, contextWindow?: number): ModelBudget {
    const limits = this.limits(entry);
    const contextTokens = Math.min(contextWindow ?? limits.contextTokens, this.#caps.contextTokens ?? Infinity);
    return { contextTokens, maxOutputTokens: limits.maxOutputTokens, budget: Math.max(0, Math.floor((contextTokens - limits.maxOutputTokens) * BUDGET_SHARE[entry.tokenizer])) };
  }

  /**
   * The budget of a reply by model `id`: the smallest of the model's and its fallbacks' (a context
   * built for the model must fit whichever answers). On a user's own connection (`contextWindow`,
   * when it names one) there are no fallbacks.
   */
  budget(id: string, connection?: { contextWindow?: number | undefined }): ModelBudget {
    const entry = this.resolve(id);
    if (connection) return this.budgetOf(entry, connection.contextWindow);
    const own = this.budgetOf(entry);
    // The reply's most output stays the model's own: a fallback's call is capped to its own (router.ts).
    return { ...own, budget: Math.min(own.budget, ...entry.fallbacks.map((fallback) => this.budgetOf(this.resolve(fallback)).budget)) };
  }

  /**
   * The largest budget of any model: what the longest message accepted before the persona is known
   * is measured against. Computed once: every send checks it.
   */
  largestBudget(): ModelBudget {
    this.#largest ??= this.list()
      .map((entry) => this.budget(entry.id))
      .reduce((largest, budget) => (budget.budget > largest.budget ? budget : largest));
    return this.#largest;
  }

  /** What `usage` cost on model `id`, in nano-USD (cost.ts). */
  cost(id: string, usage: { inputTokens: number; outputTokens: number }): number {
    return costNanos(this.resolve(id), usage);
  }
}
