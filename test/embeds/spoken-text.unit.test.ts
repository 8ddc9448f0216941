import { describe, expect, it } from "vitest";
import { spokenText } from "../../server/areas/embeds/spoken-text.ts";

// What a spoken reply says: the words of its markdown, not the signs.
describe("spokenText", () => {
  it("reads links by their text and drops the signs of bold, italics, code and headings", () => {
    expect(spokenText("# Hi\n**Welcome** to the _shop_: see [our page](https://shop.example/a) or `code`.")).toBe(" Hi\nWelcome to the shop: see our page or code.");
    expect(spokenText("```js\nlet a = 1;\n```")).toBe("let a = 1;\n");
  });

  it("keeps brackets that make no link", () => {
    expect(spokenText("[1] and [2]")).toBe("[1] and [2]");
    expect(spokenText("a [b](c d")).toBe("a [b](c d");
  });
});
