// The conformance driver: `npm run conformance` starts the real server (embedded, in-memory), the
// Prism mock and `prism proxy --errors` in front of the real server, all on loopback, runs the suite
// against each, prints one coverage line per target and exits non-zero if any target failed.
//   npm run conformance                                   all three targets
//   npm run conformance -- --target=mock                  one target, servers started here
//   BASE_URL=http://127.0.0.1:3000 npm run conformance -- --target=real   an existing server
// Anything after `--` that is not --target=… goes to vitest (e.g. a test-name filter).
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startMailCatcher, type MailCatcher } from "./driver/mail-catcher.ts";
import { startPlatformFakes } from "./driver/platforms.ts";
import { formatCoverage, type Coverage } from "./support/coverage.ts";
import { runToEnd, startProcess, type RunningProcess } from "../test/support/processes.ts";
import { freePort } from "../test/support/ports.ts";

type Target = "real" | "mock" | "proxy";
const TARGETS: Target[] = ["real", "mock", "proxy"];

const args = process.argv.slice(2);
const targetArgs = args.filter((a) => a.startsWith("--target=")).map((a) => a.slice("--target=".length));
const vitestArgs = args.filter((a) => !a.startsWith("--target="));
for (const t of targetArgs) if (!TARGETS.includes(t as Target)) throw new Error(`--target must be one of ${TARGETS.join(", ")}, not ${t}`);
const targets = targetArgs.length ? (targetArgs as Target[]) : TARGETS;
const external = process.env.BASE_URL;
if (external && targets.length !== 1) throw new Error("with BASE_URL set, name the one target it is: --target=real, mock or proxy");

const started: RunningProcess[] = [];
let mail: MailCatcher | undefined;
let platforms: Awaited<ReturnType<typeof startPlatformFakes>> | undefined;
const summaries = mkdtempSync(join(tmpdir(), "persona-conformance-summary-"));

async function stopAll(): Promise<void> {
  await Promise.allSettled(started.reverse().map((p) => p.stop()));
  await mail?.stop();
  await platforms?.stop();
  rmSync(summaries, { recursive: true, force: true });
}
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => void stopAll().then(() => process.exit(130)));
}

async function startReal(): Promise<RunningProcess> {
  mail = await startMailCatcher();
  platforms = await startPlatformFakes();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const real = await startProcess({
    name: "server",
    bin: "node",
    args: ["server/main.ts"],
    url,
    probe: `${url}/readyz`,
    readyStatus: 200,
    env: {
      PORT: String(port),
      HOST: "127.0.0.1",
      EMBEDDED_DB_IN_MEMORY: "true",
      VALIDATE_RESPONSES: "true",
      LOG_LEVEL: process.env.CONFORMANCE_LOG_LEVEL ?? "warn",
      WORKER_POLL_INTERVAL_MS: "100",
      SMTP_URL: mail.smtpUrl,
      // One client (127.0.0.1) makes every call of the suite: the limits have their own tests.
      RATE_LIMIT_PER_MINUTE: "100000",
      AUTH_ATTEMPTS_PER_IP: "100000",
      AUTH_ATTEMPTS_PER_EMAIL: "100000",
      // Webhook deliveries go to a receiver the suite runs on loopback.
      WEBHOOKS_ALLOW_PRIVATE_URLS: "true",
      // Bots connect to loopback fakes of the chat platforms.
      ...platforms.env,
    },
  });
  started.push(real);
  return real;
}

async function startPrism(name: string, prismArgs: string[]): Promise<RunningProcess> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const prism = await startProcess({ name, bin: "prism", args: [...prismArgs, "--host", "127.0.0.1", "--port", String(port)], url, probe: `${url}/healthz` });
  started.push(prism);
  return prism;
}

interface Endpoints {
  baseUrl: string;
  directUrl?: string;
  mailboxDir?: string;
}

/** Starts what the targets need, in parallel: one real server serves both real and proxy. */
async function endpoints(): Promise<Map<Target, Endpoints>> {
  const map = new Map<Target, Endpoints>();
  if (external) {
    map.set(targets[0]!, { baseUrl: external, directUrl: process.env.DIRECT_URL, mailboxDir: process.env.MAILBOX_DIR });
    return map;
  }
  const needsReal = targets.includes("real") || targets.includes("proxy");
  const [real, mock] = await Promise.all([
    needsReal ? startReal() : undefined,
    targets.includes("mock") ? startPrism("prism mock", ["mock", "generated/openapi.yaml"]) : undefined,
  ]);
  if (real && targets.includes("real")) map.set("real", { baseUrl: real.url, mailboxDir: mail?.dir });
  if (mock) map.set("mock", { baseUrl: mock.url });
  if (real && targets.includes("proxy")) {
    const proxy = await startPrism("prism proxy", ["proxy", "--errors", "generated/openapi.yaml", real.url]);
    map.set("proxy", { baseUrl: proxy.url, directUrl: real.url, mailboxDir: mail?.dir });
  }
  return map;
}

/** What a target must reach: every operation on the mock; on a real server, 501 counts as skipped. */
function verdict(target: Target, coverage: Coverage): string | undefined {
  // A filtered run (extra vitest arguments) is not expected to reach everything.
  if (coverage.notReached.length && !vitestArgs.length) return `${coverage.notReached.length} operation(s) not reached`;
  if (target === "mock" && coverage.notLive.length) return "the mock answered 501 not_implemented";
  return undefined;
}

let failed = false;
const lines: string[] = [];
try {
  const map = await endpoints();
  for (const target of targets) {
    const where = map.get(target)!;
    const summary = join(summaries, `${target}.json`);
    console.log(`\nconformance: target ${target} at ${where.baseUrl}`);
    const code = await runToEnd("vitest", ["run", "--config", "conformance/vitest.config.ts", ...vitestArgs], {
      BASE_URL: where.baseUrl,
      CONFORMANCE_TARGET: target,
      CONFORMANCE_SUMMARY: summary,
      ...(where.directUrl ? { DIRECT_URL: where.directUrl } : {}),
      ...(where.mailboxDir ? { MAILBOX_DIR: where.mailboxDir } : {}),
      ...(platforms && target !== "mock" ? { CONFORMANCE_PLATFORM_FAKES: "true" } : {}),
    });
    if (!existsSync(summary)) {
      lines.push(`conformance (${target}): no coverage written (vitest exited with ${code})`);
      failed = true;
      continue;
    }
    const coverage = JSON.parse(readFileSync(summary, "utf8")) as Coverage;
    const died = started.filter((p) => p.child.exitCode !== null || p.child.signalCode !== null);
    for (const p of died) console.error(`--- ${p.name} exited during the run (${p.child.exitCode ?? p.child.signalCode}) ---\n${p.output()}`);
    const problem = died.length ? `${died.map((p) => p.name).join(", ")} exited` : code !== 0 ? `vitest exited with ${code}` : verdict(target, coverage);
    lines.push(`${formatCoverage(coverage)}${problem ? `\n  FAILED: ${problem}` : ""}`);
    failed ||= Boolean(problem);
  }
} catch (error) {
  failed = true;
  console.error(error);
  for (const p of started) console.error(`--- ${p.name} output ---\n${p.output()}`);
} finally {
  await stopAll();
}
console.log(`\n${lines.join("\n")}`);
process.exit(failed ? 1 : 0);
