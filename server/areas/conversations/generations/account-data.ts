import type { AccountDataSection } from "../../../toolkit/account-data.ts";

/** Streamed replies' bookkeeping: the replies themselves are exported as the conversations' messages. */
export const generationAccountData: AccountDataSection[] = [
  {
    key: "conversation_generations",
    tables: ["generations", "generation_events"],
    withheld: "stream bookkeeping (state and resumable deltas of streamed replies); every stored reply is exported as a message",
  },
];
