import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import type { Command } from "commander";
import { verifyWebhook } from "../../sdk/src/index.ts";
import type { Schemas } from "../../sdk/src/index.ts";
import { contextOf } from "../context.ts";
import { contractEnum } from "../contract-enums.ts";
import { CliError, EXIT, usageError } from "../errors.ts";
import { examples } from "../help.ts";
import { keepProcessAlive } from "../lifecycle.ts";
import { printFields, printPageFooter, printTable } from "../output.ts";
import { booleanValue, collect, nonNegativeInt, positiveInt } from "../parse.ts";

type EventType = Schemas["WebhookEventType"];

function eventList(given: string[] | undefined): EventType[] | undefined {
  if (!given) return undefined;
  const known = contractEnum("WebhookEventType");
  const names = [...new Set(given.flatMap((value) => value.split(",")).map((value) => value.trim()).filter(Boolean))];
  const unknown = names.filter((name) => !known.includes(name as EventType));
  if (unknown.length) throw usageError(`unknown event ${unknown.join(", ")}: use ${known.join(", ")}`);
  return names as EventType[];
}

function printWebhook(webhook: Schemas["Webhook"] | Schemas["WebhookCreated"]): void {
  printFields([
    ["id", webhook.id],
    ["url", webhook.url],
    ["events", webhook.events],
    ["active", webhook.active],
    ["created_at", webhook.created_at],
  ]);
}

export function registerWebhookCommands(program: Command): void {
  const group = program
    .command("webhooks")
    .description("Register webhooks, read their delivery log, and receive deliveries locally")
    .addHelpText(
      "after",
      examples([
        "persona webhooks create --url https://example.com/hooks --event message.created --event conversation.created",
        "persona webhooks list",
        "persona webhooks deliveries 0193a8e1-…",
        "persona webhooks listen --forward-to http://localhost:8080/hooks",
      ]),
    );

  group
    .command("create")
    .description("Register a webhook; its secret is printed once")
    .requiredOption("--url <url>", "where deliveries are POSTed (HTTPS)")
    .requiredOption("--event <name...>", `event(s) to deliver: ${contractEnum("WebhookEventType").join(", ")}`, collect)
    .option("--secret <secret>", "signing secret (16-256 characters; default: generated)")
    .action(async (options: { url: string; event: string[]; secret?: string }, command: Command) => {
      const ctx = await contextOf(command);
      const events = eventList(options.event)!;
      const created = await ctx.client().webhooks.create({ url: options.url, events, ...(options.secret ? { secret: options.secret } : {}) });
      ctx.out.result(created, () => {
        printWebhook(created);
        printFields([["secret", created.secret]]);
        ctx.out.notice("Store the secret now: it is not shown again.");
      });
    });

  group
    .command("list")
    .description("List your webhooks")
    .action(async (_options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const list = await ctx.client().webhooks.list();
      ctx.out.result(list, () =>
        printTable(list.data, [
          { header: "id", value: (w) => w.id },
          { header: "url", value: (w) => w.url, max: 50 },
          { header: "events", value: (w) => w.events, max: 60 },
          { header: "active", value: (w) => w.active },
        ]),
      );
    });

  group
    .command("update")
    .description("Change a webhook's URL, events, or turn it on or off")
    .argument("<id>", "the webhook's id")
    .option("--url <url>", "new URL")
    .option("--event <name...>", "new event list (replaces the old one)", collect)
    .option("--active <true|false>", "true re-enables a webhook disabled after failures; false pauses it", booleanValue)
    .addHelpText("after", examples(["persona webhooks update 0193a8e1-… --active true"]))
    .action(async (id: string, options: { url?: string; event?: string[]; active?: boolean }, command: Command) => {
      const ctx = await contextOf(command);
      const events = eventList(options.event);
      const updated = await ctx.client().webhooks.update(id, {
        ...(options.url ? { url: options.url } : {}),
        ...(events ? { events } : {}),
        ...(options.active === undefined ? {} : { active: options.active }),
      });
      ctx.out.result(updated, () => printWebhook(updated));
    });

  group
    .command("delete")
    .description("Delete a webhook")
    .argument("<id>", "the webhook's id")
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const deleted = await ctx.client().webhooks.delete(id);
      ctx.out.result(deleted, () => ctx.out.line(`Deleted webhook ${deleted.id}.`));
    });

  group
    .command("deliveries")
    .description("A webhook's deliveries of the last 30 days, newest first")
    .argument("<id>", "the webhook's id")
    .option("--limit <n>", "deliveries per page (1-100)", positiveInt, 20)
    .option("--offset <n>", "deliveries to skip", nonNegativeInt, 0)
    .action(async (id: string, options: { limit: number; offset: number }, command: Command) => {
      const ctx = await contextOf(command);
      const page = await ctx.client().webhooks.deliveries(id, { limit: options.limit, offset: options.offset });
      ctx.out.result(page, () => {
        printTable(page.data, [
          { header: "id", value: (d) => d.id },
          { header: "event", value: (d) => d.event_type },
          { header: "status", value: (d) => d.status },
          { header: "attempts", value: (d) => d.attempts },
          { header: "response", value: (d) => d.response_status },
          { header: "ms", value: (d) => d.latency_ms },
          { header: "error", value: (d) => d.error, max: 40 },
          { header: "created_at", value: (d) => d.created_at },
        ]);
        printPageFooter(page.data.length, page.total, options.offset);
      });
    });

  group
    .command("redeliver")
    .description("Send a logged delivery's event again")
    .argument("<id>", "the webhook's id")
    .argument("<delivery_id>", "the delivery's id (from `persona webhooks deliveries`)")
    .action(async (id: string, deliveryId: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const delivery = await ctx.client().webhooks.redeliver(id, deliveryId);
      ctx.out.result(delivery, () => ctx.out.line(`Queued delivery ${delivery.id} of event ${delivery.event_id}.`));
    });

  group
    .command("listen")
    .description("Receive deliveries on this machine: registers a temporary webhook, prints and forwards each delivery, removes it on exit")
    .option("--forward-to <url>", "POST each delivery (raw body and signature headers) to this local URL")
    .option("--event <name...>", "event(s) to receive (default: all)", collect)
    .option("--port <n>", "local port to listen on (default: any free one)", nonNegativeInt, 0)
    .option("--host <host>", "local address to listen on", "127.0.0.1")
    .option("--public-url <url>", "the URL the server should deliver to, when it cannot reach this machine directly (e.g. a tunnel to --port)")
    .addHelpText(
      "after",
      [
        "",
        "The server must be able to reach the listener. A local server needs WEBHOOKS_ALLOW_PRIVATE_URLS=true",
        "(it refuses HTTP and loopback addresses otherwise); a remote one needs --public-url with an HTTPS tunnel.",
        examples(["persona webhooks listen --forward-to http://localhost:8080/hooks", "persona webhooks listen --event message.created --json"]),
      ].join("\n"),
    )
    .action(async (options: { forwardTo?: string; event?: string[]; port: number; host: string; publicUrl?: string }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const events = eventList(options.event) ?? contractEnum("WebhookEventType");
      let secret = "";
      const server = createServer(async (req, res) => {
        const raw = await readBody(req);
        const headers = Object.fromEntries(Object.entries(req.headers).map(([key, value]) => [key, Array.isArray(value) ? value[0]! : value ?? ""]));
        let event: Schemas["WebhookEvent"];
        try {
          event = await verifyWebhook(raw, headers, secret);
        } catch (error) {
          ctx.out.notice(`${new Date().toISOString()}  rejected a request without a valid signature (${(error as Error).message})`);
          res.writeHead(400).end();
          return;
        }
        let status = 200;
        let forwarded = "";
        if (options.forwardTo) {
          try {
            const answer = await fetch(options.forwardTo, {
              method: "POST",
              headers: pick(headers, ["content-type", "x-persona-signature", "webhook-id", "webhook-timestamp", "webhook-signature"]),
              body: raw,
              redirect: "manual",
              signal: AbortSignal.timeout(4_000),
            });
            status = answer.status;
            forwarded = `  -> ${options.forwardTo} [${answer.status}]`;
          } catch (error) {
            status = 502;
            forwarded = `  -> ${options.forwardTo} [failed: ${(error as Error).message}]`;
          }
        }
        if (ctx.out.json) process.stdout.write(`${JSON.stringify({ event, forward_status: options.forwardTo ? status : null })}\n`);
        else ctx.out.line(`${new Date().toISOString()}  ${event.type.padEnd(22)} ${event.id}${forwarded}`);
        res.writeHead(status >= 200 && status < 300 ? 200 : status).end();
      });
      await new Promise<void>((resolve, reject) => {
        server.once("error", (error) => reject(new CliError(`cannot listen on ${options.host}:${options.port}: ${error.message}`, EXIT.usage, "usage")));
        server.listen(options.port, options.host, resolve);
      });
      const { port } = server.address() as AddressInfo;
      const host = options.host.includes(":") ? `[${options.host}]` : options.host;
      const url = options.publicUrl ?? `http://${host === "0.0.0.0" ? "127.0.0.1" : host}:${port}/`;
      let webhook: Schemas["WebhookCreated"];
      try {
        webhook = await client.webhooks.create({ url, events });
      } catch (error) {
        server.close();
        const field = (error as { details?: { errors?: { path?: string }[] } }).details?.errors?.[0]?.path;
        if (field === "/body/url" && !options.publicUrl) {
          throw new CliError(
            `the server refused ${url}: it accepts HTTP and loopback addresses only with WEBHOOKS_ALLOW_PRIVATE_URLS=true; otherwise give --public-url https://… (a tunnel to port ${port})`,
            EXIT.usage,
            "usage",
          );
        }
        throw error;
      }
      secret = webhook.secret;
      keepProcessAlive();
      ctx.out.notice(`Ready: webhook ${webhook.id} delivers ${events.join(", ")} to ${url}${options.forwardTo ? `, forwarded to ${options.forwardTo}` : ""}. Ctrl-C stops and removes it.`);
      let stopping = false;
      const stop = async () => {
        if (stopping) return;
        stopping = true;
        try {
          await client.webhooks.delete(webhook.id);
          ctx.out.notice(`Removed webhook ${webhook.id}.`);
        } catch (error) {
          ctx.out.notice(`Could not remove webhook ${webhook.id}: ${(error as Error).message}`);
        }
        server.closeAllConnections();
        server.close(() => process.exit(EXIT.ok));
      };
      process.once("SIGINT", () => void stop());
      process.once("SIGTERM", () => void stop());
    });
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function pick(headers: Record<string, string>, names: string[]): Record<string, string> {
  return Object.fromEntries(names.filter((name) => headers[name] !== undefined).map((name) => [name, headers[name]!]));
}
