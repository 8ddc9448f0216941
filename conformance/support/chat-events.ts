/** The data schema of each chat stream event, by event name (the contract declares them as named schemas). */
export const CHAT_STREAM_EVENT_SCHEMAS: Record<string, string> = {
  start: "ChatStreamStart",
  delta: "ChatStreamDelta",
  done: "ChatStreamDone",
  error: "ChatStreamError",
};
