import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { target } from "./target.ts";

/**
 * The mails the server sent to `to` whose text matches `pattern`, waited for: verification, reset
 * and export links are the only way a black-box client gets those tokens. Undefined when the run
 * has no mailbox (a server the driver did not start) or nothing arrives in time.
 */
export async function waitForMail(to: string, pattern: RegExp, timeoutMs = 10_000): Promise<RegExpMatchArray | undefined> {
  const dir = target.mailboxDir;
  if (!dir) return undefined;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (existsSync(dir)) {
      for (const name of readdirSync(dir).filter((n) => n.endsWith(".json")).sort()) {
        const mail = JSON.parse(readFileSync(join(dir, name), "utf8")) as { to: string[]; text: string };
        const match = mail.to.includes(to.toLowerCase()) ? mail.text.match(pattern) : null;
        if (match) return match;
      }
    }
    await new Promise((wait) => setTimeout(wait, 100));
  }
  return undefined;
}
