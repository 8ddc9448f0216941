import { describe, expect, it } from "vitest";
import { lsnValue } from "../../server/toolkit/db/read-routing.ts";

describe("lsnValue", () => {
  it("orders WAL positions as PostgreSQL does, the high word first", () => {
    expect(lsnValue("0/16B3748") < lsnValue("0/16B3750")).toBe(true);
    expect(lsnValue("1/0") > lsnValue("0/FFFFFFFF")).toBe(true);
    expect(lsnValue("A/10")).toBe((10n << 32n) | 16n);
  });
});
