// The OpenAI-compatible door's public surface: /v1/chat/completions and /v1/models, and its error shape.
import { defineArea } from "../../toolkit/area.ts";
import { handlers } from "./handlers.ts";

export { openaiError, openaiErrorHandler } from "./errors.ts";

export const area = defineArea({ name: "openai", handlers });
