import { spawn, type ChildProcess } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectOk } from "../support/assertions.ts";
import { createPersona } from "../support/chat.ts";
import { eventually } from "../support/wait.ts";
import { root } from "../support/contract.ts";
import { databaseSettings, type TestService } from "../support/service.ts";
import { registerUser } from "../support/users.ts";
import { discordMessage } from "../fakes/platforms/discord-server.ts";
import { platformEnv, startPlatforms, startWithPlatforms, type Platforms } from "./helpers.ts";

// Exactly one live gateway connection per forum integration across worker processes: two
// `persona worker` processes share the database; the one holding the lease is killed (SIGKILL, so
// it cannot let go) and the other takes the connection over once the lease runs out.

const LEASE_MS = 1500;
let platforms: Platforms;
let service: TestService;
const children: ChildProcess[] = [];

function startWorker(): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, ["cli/persona.ts", "worker"], {
    cwd: root,
    env: { ...process.env, ...platformEnv(platforms), ...databaseSettings(service.services.db.url), LOG_LEVEL: "info", LOG_PRETTY: "false", WORKER_POLL_INTERVAL_MS: "100", INTEGRATIONS_LEASE_MS: String(LEASE_MS) },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let log = "";
  child.stdout!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  child.stderr!.on("data", (chunk: Buffer) => (log += chunk.toString()));
  children.push(child);
  return { child, output: () => log };
}

beforeAll(async () => {
  platforms = await startPlatforms();
  // The API alone: gateways run only in the worker processes this test starts and kills.
  service = await startWithPlatforms(platforms, { env: { WORKER_ENABLED: "false", DEFAULT_PLAN: "creator" } });
}, 120_000);
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await service?.close();
  await platforms?.close();
});

describe("gateway connections across workers", () => {
  it("holds one connection per integration between two workers, and the survivor takes over a killed worker's", { timeout: 120_000 }, async () => {
    const workers = [startWorker(), startWorker()];
    const user = await registerUser(service);
    const persona = await createPersona(service, user);
    const bot = platforms.discord.addBot();
    await expectOk(service.clientFor(user).POST("/v1/integrations/forum", { body: { persona_id: persona.id, bot_token: bot.token, guild_id: "884213597310459904", channel_ids: ["884213597310459907"] } }), 201);
    const knex = service.services.db.knex;
    let most = 0;
    const live = () => {
      most = Math.max(most, platforms.discord.liveSessions(bot.token));
      return platforms.discord.liveSessions(bot.token);
    };
    await eventually(async () => live() === 1, 60_000);
    const [lease] = await knex("integration_leases").select("holder");
    const holderPid = Number(String(lease.holder).split(":")[1]);
    const holder = workers.find((w) => w.child.pid === holderPid)!;
    const survivor = workers.find((w) => w !== holder)!;
    expect(holder, `lease held by ${lease.holder}`).toBeDefined();
    // A few lease rounds later there is still only one connection.
    for (let round = 0; round < 10; round++) {
      live();
      await new Promise((wait) => setTimeout(wait, LEASE_MS / 5));
    }
    expect(most).toBe(1);

    holder.child.kill("SIGKILL");
    await new Promise((done) => holder.child.once("exit", done));
    await eventually(async () => {
      const [row] = await knex("integration_leases").select("holder");
      return row && Number(String(row.holder).split(":")[1]) === survivor.child.pid && live() === 1;
    }, 60_000);
    expect(most).toBe(1);
    // The survivor's connection answers.
    platforms.discord.message(bot.token, discordMessage({ channelId: "884213597310459907", content: `<@${bot.id}> who is there?`, mentions: [bot.id] }));
    await eventually(async () => platforms.discord.posts().some((r) => r.headers.authorization === `Bot ${bot.token}`), 30_000);
    expect(survivor.output()).toContain("forum gateway connected");
    survivor.child.kill("SIGTERM");
    await new Promise((done) => survivor.child.once("exit", done));
  });
});
