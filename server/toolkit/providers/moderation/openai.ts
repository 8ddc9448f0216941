import type OpenAI from "openai";
import type { Config } from "../../config.ts";
import type { Logger } from "../../logger.ts";
import { OPENAI_BASE_URL, openaiClient, providerError } from "../openai-client.ts";
import { UpstreamError } from "../errors.ts";
import type { ModerationProvider, ModerationVerdict } from "./types.ts";

const WHAT = "The moderation provider";
const SETTINGS = "Moderation is set by MODERATION_BASE_URL (else OPENAI_BASE_URL), MODERATION_API_KEY and MODERATION_MODEL; MODERATION_PROVIDER=wordlist checks offline";

/** OpenAI's moderation endpoint (`POST /moderations`) through the `openai` package, or any compatible server. */
export class OpenAIModeration implements ModerationProvider {
  readonly name = "openai";
  readonly #client: OpenAI;
  readonly #model: string;
  readonly #server: string;
  readonly #log: Logger | undefined;

  constructor(settings: Config["moderation"], llm: Config["llm"], log?: Logger) {
    this.#client = openaiClient({ baseUrl: settings.baseUrl, apiKey: settings.apiKey, timeoutMs: llm.timeoutMs, maxRetries: llm.maxRetries });
    this.#model = settings.model;
    this.#server = new URL(settings.baseUrl ?? OPENAI_BASE_URL).origin;
    this.#log = log;
  }

  async check(texts: readonly string[]): Promise<ModerationVerdict> {
    const input = texts.filter((text) => text.trim() !== "");
    if (input.length === 0) return { flagged: false, categories: [] };
    let answer: OpenAI.Moderations.ModerationCreateResponse;
    try {
      answer = await this.#client.moderations.create({ model: this.#model, input });
    } catch (error) {
      const failure = providerError(error, WHAT);
      const reported = new UpstreamError(`${failure.message.replace(/\.$/, "")}. ${SETTINGS}.`, failure.status, { cause: failure.cause, settings: SETTINGS });
      this.#log?.warn({ capability: "moderation", provider: "openai", server: this.#server, status: reported.status }, reported.message);
      throw reported;
    }
    const categories = new Set<string>();
    let flagged = false;
    for (const result of answer.results ?? []) {
      if (!result.flagged) continue;
      flagged = true;
      for (const [category, on] of Object.entries(result.categories ?? {})) if (on === true) categories.add(category);
    }
    return { flagged, categories: [...categories] };
  }
}
