import { describe, expect, it } from "vitest";
import { firstFreeHandle, handleFromName } from "../../server/toolkit/handles.ts";

describe("a persona's handle from its name", () => {
  it("is lower-case ASCII with single inner hyphens", () => {
    expect(handleFromName("Captain Nova!")).toBe("captain-nova");
    expect(handleFromName("  Señor Ñandú -- the 2nd ")).toBe("senor-nandu-the-2nd");
    expect(handleFromName("---")).toBe("persona");
    expect(handleFromName("星")).toBe("persona");
  });

  it("fits 40 characters without a hyphen at the end", () => {
    const handle = handleFromName(`${"a".repeat(39)} b`);
    expect(handle).toBe("a".repeat(39));
    expect(handleFromName("x".repeat(100))).toHaveLength(40);
  });

  it("takes the next free number, keeping within the limit", () => {
    expect(firstFreeHandle("nova", new Set())).toBe("nova");
    expect(firstFreeHandle("nova", new Set(["nova", "nova-2"]))).toBe("nova-3");
    const long = "x".repeat(40);
    expect(firstFreeHandle(long, new Set([long]))).toBe(`${"x".repeat(38)}-2`);
  });
});
