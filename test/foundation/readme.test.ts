import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { settings } from "../../server/toolkit/config.ts";
import { root } from "../support/contract.ts";

// The README is the operator's manual: it must list every setting the code reads.
describe("the README", () => {
  const readme = readFileSync(resolve(root, "README.md"), "utf8");

  it("documents every setting", () => {
    for (const name of Object.keys(settings)) expect(readme, name).toContain(`| \`${name}\` |`);
  });

  it("shows the two commands that set up a fresh machine", () => {
    expect(readme).toContain("npm install && npm start");
    expect(readme).toContain("npm test");
  });
});
