import { describe, expect, it } from "vitest";
import { isDatabaseUnavailable } from "../../server/toolkit/db/unavailable.ts";

// What a failover throws at a request, and whether the service answers it 503 with Retry-After
// (the database is away for now) rather than 500: every failure seen in the failover scenario
// (test/scale/failover.e2e.test.ts) is one of these.

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });

describe("database failures a failover causes", () => {
  it.each([
    ["the backend ended by the primary's crash", pgError("57P01", "terminating connection due to unexpected postmaster exit")],
    ["the new primary still starting", pgError("57P03", "the database system is starting up")],
    ["a write that reached the node being promoted", pgError("25006", "cannot execute NOTIFY during recovery")],
    ["the proxy closing a connection it could not place", new Error("Connection terminated unexpectedly")],
    ["a refused connection", Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" })],
    ["a lost connection behind a wrapper", new Error("The reply could not be stored", { cause: new Error("Connection terminated unexpectedly") })],
  ])("counts %s as unavailable", (_what, error) => {
    expect(isDatabaseUnavailable(error)).toBe(true);
  });

  it.each([
    ["a unique violation", pgError("23505", "duplicate key value violates unique constraint")],
    ["a syntax error", pgError("42601", "syntax error at or near")],
    ["a serialization failure", pgError("40001", "could not serialize access")],
  ])("does not count %s", (_what, error) => {
    expect(isDatabaseUnavailable(error)).toBe(false);
  });
});
