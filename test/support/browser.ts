import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

// The browser tests drive Debian's Chromium (scripts/ci/chromium.sh installs it in CI).

const CHROMIUM = "/usr/bin/chromium";

/**
 * Whether the browser test `name` runs here: always in CI (where a missing Chromium must fail, not
 * skip), elsewhere only when Chromium is installed; says so when it is skipped.
 */
export function browserTestRuns(name: string): boolean {
  const runs = existsSync(CHROMIUM) || Boolean(process.env.CI);
  if (!runs) console.warn(`${name}: skipped, ${CHROMIUM} is missing (run scripts/ci/chromium.sh to install it); CI never skips this test`);
  return runs;
}

/** Headless Chromium, with nothing of its own that reaches the network. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
}
