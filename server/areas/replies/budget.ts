// The shares of the context budget that both context assembly (context.ts) and the input limit
// (input-limit.ts) rely on.

/** Per-turn overhead OpenAI documents (role and separators), so budgets hold for the real bill. */
export const TURN_OVERHEAD = 4;

/**
 * Instructions longer than this share of the budget are cut (a persona's prompt can be 32,000
 * chars). The rest is what a new message may take at most (input-limit.ts): a message never crowds
 * the instructions out.
 */
export const INSTRUCTIONS_SHARE = 0.5;
