import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../server/toolkit/config.ts";

// CORS_ORIGINS (ADR 0306): exact origins, compared byte for byte with the browser's `Origin`.
describe("CORS_ORIGINS", () => {
  it("is empty unless set", () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: "" }).corsOrigins).toEqual([]);
  });

  it("takes comma-separated origins, trimmed, each once", () => {
    expect(loadConfig({ CORS_ORIGINS: " https://app.example.com, http://localhost:5173 ,https://app.example.com" }).corsOrigins).toEqual([
      "https://app.example.com",
      "http://localhost:5173",
    ]);
  });

  it("refuses `*`, naming the setting", () => {
    expect(() => loadConfig({ CORS_ORIGINS: "*" })).toThrow(ConfigError);
    expect(() => loadConfig({ CORS_ORIGINS: "https://app.example.com,*" })).toThrow(/CORS_ORIGINS.*`\*` is not accepted/);
  });

  it("refuses what is not an origin as browsers send it, and says what to write", () => {
    expect(() => loadConfig({ CORS_ORIGINS: "https://app.example.com/" })).toThrow(/write "https:\/\/app\.example\.com"/);
    expect(() => loadConfig({ CORS_ORIGINS: "https://App.Example.com" })).toThrow(/write "https:\/\/app\.example\.com"/);
    expect(() => loadConfig({ CORS_ORIGINS: "https://app.example.com:443" })).toThrow(/write "https:\/\/app\.example\.com"/);
    expect(() => loadConfig({ CORS_ORIGINS: "https://app.example.com/path" })).toThrow(ConfigError);
    expect(() => loadConfig({ CORS_ORIGINS: "app.example.com" })).toThrow(/not an http\(s\) origin/);
    expect(() => loadConfig({ CORS_ORIGINS: "ftp://files.example.com" })).toThrow(/not an http\(s\) origin/);
  });
});
