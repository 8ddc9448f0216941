import type { Command } from "commander";
import type { Schemas } from "../../sdk/src/index.ts";
import { contextOf } from "../context.ts";
import { usageError } from "../errors.ts";
import { examples } from "../help.ts";
import { printFields, printTable } from "../output.ts";
import { collect, positiveInt } from "../parse.ts";

const FINE = new Set(["personas:read", "personas:write", "conversations:read", "conversations:write", "voice", "admin"]);
const COARSE = new Set(["read", "chat", "admin"]);

/**
 * The API has two creation forms with two scope vocabularies (DECISIONS: Auth); the scopes given
 * pick the form, so one command covers both. `admin` exists in both and alone uses the fine form.
 */
function creationForm(scopes: string[]): "fine" | "coarse" {
  const unknown = scopes.filter((s) => !FINE.has(s) && !COARSE.has(s));
  if (unknown.length) throw usageError(`unknown scope ${unknown.join(", ")}: use ${[...FINE].join(", ")}, or read, chat`);
  const coarse = scopes.some((s) => !FINE.has(s));
  const fine = scopes.some((s) => !COARSE.has(s));
  if (coarse && fine) throw usageError("do not mix read/chat with the fine-grained scopes (personas:read, …) in one key");
  return coarse ? "coarse" : "fine";
}

export function registerKeyCommands(program: Command): void {
  const group = program
    .command("keys")
    .description("Create, list and revoke API keys")
    .addHelpText(
      "after",
      examples([
        "persona keys create --name 'Nightly backup' --scope read --expires-in-days 90",
        "persona keys create --name bot --scope personas:read --scope conversations:write --json",
        "persona keys list",
        "persona keys revoke 0193a6d2-…",
      ]),
    );

  group
    .command("create")
    .description("Create a key; the full key is printed once")
    .requiredOption("--name <name>", "label of the key")
    .option("--scope <scope...>", "scope(s): personas:read, personas:write, conversations:read, conversations:write, voice, admin; or read, chat, admin", collect)
    .option("--expires-in-days <days>", "days until the key expires (default: never)", positiveInt)
    .addHelpText("after", examples(["persona keys create --name ci --scope admin --json | jq -r .key"]))
    .action(async (options: { name: string; scope?: string[]; expiresInDays?: number }, command: Command) => {
      const ctx = await contextOf(command);
      const scopes = [...new Set(options.scope ?? ["admin"])];
      // A usage mistake is reported before credentials are looked at.
      const form = creationForm(scopes);
      const client = ctx.client();
      const expiry = options.expiresInDays === undefined ? {} : { expires_in_days: options.expiresInDays };
      const key =
        form === "fine"
          ? await client.auth.apiKeys.create({ name: options.name, scopes: scopes as Schemas["ApiKeyScope"][], ...expiry })
          : await client.auth.apiKeys.createSimple({ name: options.name, scopes: scopes as Schemas["SimpleApiKeyCreate"]["scopes"], ...expiry });
      ctx.out.result(key, () => {
        printFields([
          ["id", key.id],
          ["name", key.name],
          ["key", key.key],
          ["scopes", key.scopes],
          ["expires_at", key.expires_at ?? "never"],
        ]);
        ctx.out.notice("Store the key now: it is not shown again.");
      });
    });

  group
    .command("list")
    .description("List your live keys (masked)")
    .addHelpText("after", examples(["persona keys list --json"]))
    .action(async (_options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const keys = await ctx.client().auth.apiKeys.list();
      ctx.out.result(keys, () =>
        printTable(keys.data, [
          { header: "id", value: (k) => k.id },
          { header: "name", value: (k) => k.name, max: 30 },
          { header: "key", value: (k) => k.key_hint },
          { header: "scopes", value: (k) => k.scopes },
          { header: "last_used_at", value: (k) => k.last_used_at ?? "never" },
          { header: "expires_at", value: (k) => k.expires_at ?? "never" },
        ]),
      );
    });

  group
    .command("revoke")
    .description("Revoke a key; requests with it fail at once")
    .argument("<id>", "the key's id (from `persona keys list`)")
    .addHelpText("after", examples(["persona keys revoke 0193a6d2-4e8f-7b3a-9c1d-6e5f4a3b2c11"]))
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const revoked = await ctx.client().auth.apiKeys.revoke(id);
      ctx.out.result(revoked, () => ctx.out.line(`Revoked key ${revoked.id}.`));
    });
}
