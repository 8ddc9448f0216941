import { afterAll, beforeAll, beforeEach } from "vitest";
import { startFakeOpenAI, type FakeOpenAI } from "../fakes/openai-server.ts";
import { startTestService, type TestServiceOptions, type TestService } from "./service.ts";
import { registerUser, type TestUser } from "./users.ts";

export interface ServiceFixture {
  service: TestService;
  /** A registered user, for tests that need one caller. */
  alice: TestUser;
}

/** A test service for the file (started before its tests, stopped after), with one registered user. */
export function useTestService(options: TestServiceOptions = {}): ServiceFixture {
  const fixture = {} as ServiceFixture;
  beforeAll(async () => {
    fixture.service = await startTestService(options);
    fixture.alice = await registerUser(fixture.service);
  });
  afterAll(async () => {
    await fixture.service?.close();
  });
  return fixture;
}

/**
 * A test service whose OpenAI-compatible providers talk to a fake OpenAI API on loopback, through
 * the real `openai` package, without retries; the fake's recorded requests are cleared before each test.
 */
export function useServiceWithFakeOpenAI(env: Record<string, string>): ServiceFixture & { fake: FakeOpenAI } {
  const fixture = {} as ServiceFixture & { fake: FakeOpenAI };
  beforeAll(async () => {
    fixture.fake = await startFakeOpenAI();
    fixture.service = await startTestService({
      env: { ...env, OPENAI_BASE_URL: fixture.fake.baseUrl, OPENAI_API_KEY: "sk-test-secret-key", LLM_MAX_RETRIES: "0" },
    });
    fixture.alice = await registerUser(fixture.service);
  });
  afterAll(async () => {
    await fixture.service?.close();
    await fixture.fake?.close();
  });
  beforeEach(() => fixture.fake?.reset());
  return fixture;
}
