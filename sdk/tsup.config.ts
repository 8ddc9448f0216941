import { defineConfig } from "tsup";

// ESM and CJS from one source, with one bundled .d.ts per format. The declaration bundle inlines
// the contract types from ../generated/openapi.d.ts, so the package depends on nothing outside it.
export default defineConfig({
  entry: { index: "src/index.ts" },
  format: ["esm", "cjs"],
  dts: true,
  tsconfig: "tsconfig.json",
  // Neutral: the same output runs in Node 18+ and in browsers; nothing Node-specific is bundled.
  platform: "neutral",
  target: "es2022",
  external: ["openapi-fetch", "eventsource-parser"],
  sourcemap: true,
  clean: true,
  outDir: "dist",
});
