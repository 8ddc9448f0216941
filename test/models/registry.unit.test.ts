import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../server/toolkit/config.ts";
import { costNanos, modelRegistry, usdOf } from "../../server/toolkit/models/index.ts";
import { createChatModel } from "../../server/toolkit/providers/llm/index.ts";
import { maxInputTokens } from "../../server/areas/replies/input-limit.ts";

// The model registry (issue 40, item 1): the models file checked at start with errors naming the
// entry and the field, the chat settings as a one-model registry, budgets and prices.
const dir = mkdtempSync(join(tmpdir(), "persona-models-"));
let files = 0;

/** A models file of `document` (JSON, or YAML text for a `.yaml` name). */
function modelsFile(document: unknown, name = `models-${++files}.json`): string {
  const path = join(dir, name);
  writeFileSync(path, typeof document === "string" ? document : JSON.stringify(document));
  return path;
}

const hosted = {
  id: "gpt-4o-mini",
  base_url: "https://api.example.com/v1",
  api_key_env: "HOSTED_KEY",
  context_window: 128000,
  max_output_tokens: 4096,
  input_price_per_million: 0.15,
  output_price_per_million: 0.6,
  fallbacks: ["llama-3.1-8b"],
};
const local = { id: "llama-3.1-8b", base_url: "http://127.0.0.1:11434/v1", context_window: 8192, max_output_tokens: 1024, capabilities: { tools: false } };

const registryOf = (env: Record<string, string>) => modelRegistry(loadConfig(env).llm);

/** The message of the ConfigError that building the registry of `document` throws. */
function refusal(document: unknown, env: Record<string, string> = { HOSTED_KEY: "sk-hosted" }): string {
  try {
    registryOf({ MODELS_FILE: modelsFile(document), ...env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("the registry was built");
}

describe("the models file", () => {
  it("gives each model its endpoint, key, limits, prices, capabilities and fallbacks; the default first", () => {
    const registry = registryOf({ MODELS_FILE: modelsFile({ default: "gpt-4o-mini", models: [local, hosted] }), HOSTED_KEY: "sk-hosted" });
    expect(registry.source).toBe("file");
    expect(registry.list().map((entry) => entry.id)).toEqual(["gpt-4o-mini", "llama-3.1-8b"]);
    expect(registry.get("gpt-4o-mini")).toMatchObject({
      provider: "openai",
      baseUrl: "https://api.example.com/v1",
      apiKey: "sk-hosted",
      upstreamModel: "gpt-4o-mini",
      tokenizer: "o200k_base",
      capabilities: { streaming: true, tools: true, jsonMode: true, vision: false },
      fallbacks: ["llama-3.1-8b"],
    });
    // No key variable, and not OPENAI_BASE_URL's server: no key at all (a local model server).
    expect(registry.get("llama-3.1-8b")).toMatchObject({ apiKey: undefined, tokenizer: "approximate", capabilities: { tools: false } });
  });

  it("reads YAML by the file's extension", () => {
    const yaml = `default: llama-3.1-8b\nmodels:\n  - id: llama-3.1-8b\n    base_url: http://127.0.0.1:11434/v1\n    context_window: 8192\n    max_output_tokens: 1024\n`;
    const registry = registryOf({ MODELS_FILE: modelsFile(yaml, "models.yaml") });
    expect(registry.defaultId).toBe("llama-3.1-8b");
    expect(registry.get("llama-3.1-8b")?.contextWindow).toBe(8192);
  });

  it("sends OPENAI_API_KEY only to OPENAI_BASE_URL's server", () => {
    const registry = registryOf({
      MODELS_FILE: modelsFile({ models: [{ ...local, id: "same", base_url: "https://chat.example.com/v1/" }, { ...local, id: "other" }] }),
      OPENAI_BASE_URL: "https://chat.example.com/v1",
      OPENAI_API_KEY: "sk-chat",
    });
    expect(registry.get("same")?.apiKey).toBe("sk-chat");
    expect(registry.get("other")?.apiKey).toBeUndefined();
  });

  it("names every bad entry and field", () => {
    const message = refusal({
      models: [
        { ...hosted, context_window: 100, max_output_tokens: 4096 },
        { ...local, id: "llama-3.1-8b", capabilities: { tools: true } },
        { ...local, id: "llama-3.1-8b" },
        { ...local, id: "typo", contxt_window: 1 },
        { ...local, id: "orphan", fallbacks: ["nowhere", "orphan"] },
      ],
    });
    expect(message).toMatch(/^Invalid models file .*models-\d+\.json: /);
    expect(message).toContain('models[0] ("gpt-4o-mini"): context_window: must be at least 512');
    expect(message).toContain('models[2] ("llama-3.1-8b"): id: is also models[1]\'s');
    expect(message).toContain('models[3] ("typo"): Unrecognized key');
    expect(message).toContain('models[4] ("orphan"): fallbacks[0]: "nowhere" is none of the models\' ids');
    expect(message).toContain('models[4] ("orphan"): fallbacks[1]: a model cannot be its own fallback');
  });

  it("refuses a key variable that is not set, a local model with a URL, output past the window, and a default it does not list", () => {
    expect(refusal({ models: [hosted, local] }, {})).toContain('models[0] ("gpt-4o-mini"): api_key_env: the environment variable HOSTED_KEY is not set');
    expect(refusal({ models: [{ id: "offline", provider: "local", base_url: "http://x.example", context_window: 4096, max_output_tokens: 512 }] })).toContain(
      'models[0] ("offline"): base_url: the local model is reached through no URL',
    );
    expect(refusal({ models: [{ ...local, max_output_tokens: 8192 }] })).toContain("max_output_tokens: must be less than context_window (8192)");
    expect(refusal({ default: "gpt-5", models: [local] })).toContain('default: "gpt-5" is none of the models\' ids');
    expect(refusal({ models: [local] }, { CHAT_MODEL: "gpt-5" })).toContain('CHAT_MODEL="gpt-5" is none of the models\' ids');
    expect(refusal({ models: [] })).toContain("models: must list at least one model");
    expect(refusal({ model: [local] })).toMatch(/Unrecognized key/);
  });

  it("is refused at start by the chat provider, and as unreadable or unparsable when loaded", async () => {
    const bad = loadConfig({ MODELS_FILE: modelsFile({ models: [{ ...local, context_window: "big" }] }) });
    await expect(createChatModel(bad)).rejects.toThrow(/models\[0\] \("llama-3\.1-8b"\): context_window/);
    expect(() => loadConfig({ MODELS_FILE: join(dir, "missing.json") })).toThrow(/MODELS_FILE=".*missing\.json" cannot be read \(ENOENT\)/);
    expect(() => loadConfig({ MODELS_FILE: modelsFile("{ not json") })).toThrow(/MODELS_FILE=.* is not valid JSON/);
    expect(() => loadConfig({ MODELS_FILE: modelsFile({ models: [local] }), CHAT_MODELS: "a,b" })).toThrow(/CHAT_MODELS lists models .* with MODELS_FILE, list them in the file/);
  });
});

describe("the chat settings as a one-model registry", () => {
  it("is CHAT_MODEL and CHAT_MODELS on OPENAI_BASE_URL, with CHAT_CONTEXT_TOKENS and CHAT_MAX_OUTPUT_TOKENS, at no price", () => {
    const registry = registryOf({ OPENAI_BASE_URL: "http://127.0.0.1:11434/v1", OPENAI_API_KEY: "sk-x", CHAT_MODEL: "llama3.1", CHAT_MODELS: "llama3.1,qwen2", CHAT_CONTEXT_TOKENS: "4096" });
    expect(registry.source).toBe("settings");
    expect(registry.list().map((entry) => [entry.id, entry.baseUrl, entry.apiKey, entry.contextWindow, entry.maxOutputTokens, entry.inputPricePerMillion])).toEqual([
      ["llama3.1", "http://127.0.0.1:11434/v1", "sk-x", 4096, 1024, 0],
      ["qwen2", "http://127.0.0.1:11434/v1", "sk-x", 4096, 1024, 0],
    ]);
    // A model it no longer lists runs as itself on the one upstream, as before the registry.
    expect(registry.resolve("mistral")).toMatchObject({ id: "mistral", upstreamModel: "mistral", baseUrl: "http://127.0.0.1:11434/v1" });
  });

  it("keeps the server's message limit where it was", () => {
    expect(maxInputTokens(loadConfig({}).llm)).toBe(3576);
    expect(maxInputTokens(loadConfig({ CHAT_CONTEXT_TOKENS: "2048", CHAT_MAX_OUTPUT_TOKENS: "512" }).llm)).toBe(760);
  });
});

describe("budgets and prices", () => {
  const file = () => modelsFile({ default: "gpt-4o-mini", models: [hosted, local, { ...local, id: "gpt-4-0613", upstream_model: "gpt-4-0613", context_window: 8192 }] });

  it("is the window less the output, the smallest of a model and its fallbacks, a tenth kept back for an estimated count", () => {
    const registry = registryOf({ MODELS_FILE: file(), HOSTED_KEY: "k" });
    // gpt-4o-mini alone would have 123,904; its fallback's (8192 - 1024) × 0.9 is smaller.
    expect(registry.budget("gpt-4o-mini")).toEqual({ contextTokens: 128000, maxOutputTokens: 4096, budget: 6451 });
    expect(registry.budget("llama-3.1-8b").budget).toBe(6451);
    expect(registry.budget("gpt-4-0613")).toMatchObject({ budget: Math.floor(7168 * 0.95) });
    // A user's connection has no fallbacks, and may name its own window.
    expect(registry.budget("gpt-4o-mini", { contextWindow: 16000 })).toEqual({ contextTokens: 16000, maxOutputTokens: 4096, budget: 11904 });
    // The server's message limit follows the largest budget (gpt-4-0613's, with no fallback).
    expect(maxInputTokens(loadConfig({ MODELS_FILE: file(), HOSTED_KEY: "k" }).llm)).toBe(6809 - Math.floor(6809 / 2) - 8);
  });

  it("caps every model with CHAT_CONTEXT_TOKENS and CHAT_MAX_OUTPUT_TOKENS when they are set", () => {
    const registry = registryOf({ MODELS_FILE: file(), HOSTED_KEY: "k", CHAT_CONTEXT_TOKENS: "32000", CHAT_MAX_OUTPUT_TOKENS: "2000" });
    expect(registry.limits(registry.get("gpt-4o-mini")!)).toEqual({ contextTokens: 32000, maxOutputTokens: 2000 });
    expect(registry.limits(registry.get("llama-3.1-8b")!)).toEqual({ contextTokens: 8192, maxOutputTokens: 1024 });
  });

  it("prices a reply in nano-USD from the prices per million tokens", () => {
    expect(costNanos({ inputPricePerMillion: 0.15, outputPricePerMillion: 0.6 }, { inputTokens: 1000, outputTokens: 500 })).toBe(450_000);
    expect(costNanos({ inputPricePerMillion: 0.0375, outputPricePerMillion: 0 }, { inputTokens: 4, outputTokens: 9 })).toBe(150);
    expect(usdOf(450_000)).toBe(0.00045);
    expect(usdOf("2000000000")).toBe(2);
    const registry = registryOf({ MODELS_FILE: file(), HOSTED_KEY: "k" });
    expect(registry.cost("gpt-4o-mini", { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toBe(750_000_000);
    expect(registry.cost("llama-3.1-8b", { inputTokens: 1_000_000, outputTokens: 1_000_000 })).toBe(0);
  });
});
