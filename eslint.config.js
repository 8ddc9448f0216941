// @ts-check
import js from "@eslint/js";
import regexp from "eslint-plugin-regexp";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["node_modules/", "generated/", "dist/", "sdk/dist/", "packages/*/dist/", ".persona/", "coverage/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["scripts/**/*.mjs", "sdk/build.mjs"],
    languageOptions: { globals: { process: "readonly", console: "readonly" } },
  },
  {
    // Issue 31: no regular expression of the service may take more than linear time on its input
    // (the chunker's and the content-type parser's took quadratic time on runs of spaces and ';').
    files: ["server/**/*.ts", "cli/**/*.ts", "sdk/src/**/*.ts"],
    plugins: { regexp },
    rules: {
      "regexp/no-super-linear-backtracking": "error",
      "regexp/no-super-linear-move": "error",
    },
  },
  {
    // The test lanes (docs/testing.md): child processes and browsers are for *.e2e.test.ts only;
    // dependency-cruiser holds the same through helpers (.dependency-cruiser.mjs).
    files: ["test/**/*.test.ts"],
    ignores: ["test/**/*.e2e.test.ts"],
    rules: {
      "no-restricted-imports": ["error", {
        paths: [
          { name: "node:child_process", message: "A process belongs to an end-to-end test: name the file *.e2e.test.ts." },
          { name: "playwright-core", message: "A browser belongs to an end-to-end test: name the file *.e2e.test.ts." },
        ],
      }],
    },
  },
  {
    // A JSON operation is called through the contract-typed client (`service.clientFor(user).POST(...)`,
    // test/support/api.ts), so a renamed field or path fails the type check, not a run. A request the
    // contract cannot type on purpose (a malformed or hostile body) goes through `sendRaw`
    // (test/support/raw.ts), which says so.
    files: ["test/**/*.test.ts"],
    rules: {
      "no-restricted-syntax": ["error", {
        selector: ":matches(CallExpression[callee.name='fetch'], CallExpression[callee.property.name='fetch']) > ObjectExpression > Property[key.name='body'] > CallExpression[callee.object.name='JSON'][callee.property.name='stringify']",
        message: "Call a JSON operation through the typed client (service.clientFor(user)); a body the contract must not type goes through sendRaw (test/support/raw.ts).",
      }],
    },
  },
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
    },
  },
);
