import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { createPersona } from "../support/chat.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { apiKeyFor, registerUser, type TestUser } from "../support/users.ts";

/** A chat completion request as it reached the upstream model. */
export interface UpstreamChat extends Record<string, unknown> {
  model: string;
  messages: { role: string; content: string | null; tool_calls?: unknown[]; tool_call_id?: string }[];
}

/**
 * The OpenAI-compatible door as a client library meets it: one service per test file with a fake
 * OpenAI-compatible upstream that records what reaches the model, a user with a chat key, and one
 * persona (handle `nova`) that the file's tests share.
 */
export interface Door {
  fake: FakeOpenAI;
  service: TestService;
  user: TestUser;
  /** A Persona API key with the `chat` scopes. */
  key: string;
  /** `http://127.0.0.1:PORT/openai/v1`, every library's base URL. */
  baseURL: string;
  persona: { id: string; handle: string; name: string };
  /** The chat completions that reached the upstream since the last `fake.reset()`, in order. */
  upstream: () => UpstreamChat[];
  /** The last of them. */
  lastUpstream: () => UpstreamChat;
  close: () => Promise<void>;
}

export const PERSONA_INSTRUCTIONS = "You are Captain Nova, a retired starship captain.";
export const PERSONA_GREETING = "Welcome aboard, cadet!";

export async function openDoor(): Promise<Door> {
  const fake = await startFakeOpenAI({ serves: ["chat"] });
  const service = await startTestService({
    fresh: true,
    env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: "sk-upstream-secret", LLM_MAX_RETRIES: "0" },
  });
  const user = await registerUser(service);
  const key = await apiKeyFor(service, user, ["chat"]);
  const created = await createPersona(service, user, { name: "Captain Nova", handle: "nova", instructions: PERSONA_INSTRUCTIONS, greeting_message: PERSONA_GREETING });
  const upstream = () => fake.requests.filter((request) => request.method === "POST" && request.path === "/v1/chat/completions").map((request) => request.body as UpstreamChat);
  return {
    fake,
    service,
    user,
    key,
    baseURL: `${service.url}/openai/v1`,
    persona: { id: created.id, handle: "nova", name: "Captain Nova" },
    upstream,
    lastUpstream: () => {
      const all = upstream();
      if (all.length === 0) throw new Error("No chat completion reached the upstream");
      return all.at(-1)!;
    },
    close: async () => {
      await service.close();
      await fake.close();
    },
  };
}

/** The parameters every library is asked to send, with the values the upstream must receive. */
export const SAMPLING = {
  temperature: 0.3,
  top_p: 0.8,
  presence_penalty: 0.4,
  frequency_penalty: -0.2,
  stop: ["\nCadet:", "###"],
  seed: 42,
} as const;
