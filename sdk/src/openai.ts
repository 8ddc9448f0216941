/**
 * The base URL of the server's OpenAI-compatible endpoint, for the `openai` package or any other
 * OpenAI client: `new OpenAI({ baseURL: openaiBaseUrl("http://127.0.0.1:3000"), apiKey: "pk_..." })`,
 * then `model` is a persona id.
 */
export function openaiBaseUrl(baseUrl: string): string {
  return `${baseUrl.replace(/(?<!\/)\/+$/, "")}/openai/v1`;
}
