import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { examples } from "../help.ts";
import { withServerServices } from "../internals/database.ts";
import { printFields, printTable } from "../output.ts";

const areaOfAuth = () => import("../../server/areas/auth/index.ts");

/**
 * OAuth client applications. The contract has no endpoint for them (DECISIONS: the admin CLI
 * registers them), so these commands call the auth area's services on the server's database,
 * configured like the server (DATABASE_URL, or the embedded database in PERSONA_DATA_DIR).
 */
export function registerOAuthClientCommands(program: Command): void {
  const group = program
    .command("oauth-clients")
    .description("Register, list and remove OAuth client applications (on the server's database)")
    .addHelpText(
      "after",
      "\nThese commands work on the server's database (DATABASE_URL, or the embedded one in PERSONA_DATA_DIR).\n" +
        "On the embedded default they attach to the running server's database, or open it when no server runs.\n" +
        examples([
          "persona oauth-clients register --name 'Stargazer app' --redirect-uri https://app.example/callback",
          "persona oauth-clients list --json",
          "persona oauth-clients remove oc_…",
        ]),
    );

  group
    .command("register")
    .description("Register an application; prints its client id and secret (the secret is shown only once)")
    .requiredOption("--name <name>", "name shown on the consent page")
    .requiredOption("--redirect-uri <uri...>", "allowed redirect URI (https, or http on loopback); repeatable")
    .addHelpText("after", examples(["persona oauth-clients register --name CI --redirect-uri http://127.0.0.1:8765/cb --json"]))
    .action(async (options: { name: string; redirectUri: string[] }, command: Command) => {
      const { out } = await contextOf(command);
      const { registerOAuthClient } = await areaOfAuth();
      const client = await withServerServices((services) => registerOAuthClient(services, { name: options.name, redirectUris: options.redirectUri }, services.now()));
      const result = { ...client, name: options.name.trim(), redirect_uris: [...new Set(options.redirectUri)] };
      out.result(result, () => {
        printFields([
          ["client_id", result.client_id],
          ["client_secret", result.client_secret],
          ["name", result.name],
          ["redirect_uris", result.redirect_uris],
        ]);
        out.notice("Store the client secret now: it is not shown again.");
      });
    });

  group
    .command("list")
    .description("List registered applications")
    .addHelpText("after", examples(["persona oauth-clients list"]))
    .action(async (_options: unknown, command: Command) => {
      const { out } = await contextOf(command);
      const { listOAuthClients } = await areaOfAuth();
      const clients = await withServerServices(listOAuthClients);
      out.result({ data: clients }, () =>
        printTable(clients, [
          { header: "client_id", value: (c) => c.client_id },
          { header: "name", value: (c) => c.name, max: 40 },
          { header: "created_at", value: (c) => c.created_at },
          { header: "redirect_uris", value: (c) => c.redirect_uris },
        ]),
      );
    });

  group
    .command("remove")
    .description("Remove an application; its pending authorization codes go with it, and the access users granted it is revoked")
    .argument("<client_id>", "the client's oc_… id")
    .addHelpText("after", examples(["persona oauth-clients remove oc_…"]))
    .action(async (clientId: string, _options: unknown, command: Command) => {
      const { out } = await contextOf(command);
      const { removeOAuthClient } = await areaOfAuth();
      const removed = await withServerServices((services) => removeOAuthClient(services, clientId));
      if (!removed) throw new CliError(`OAuth client ${clientId} not found`, EXIT.notFound, "not_found");
      out.result({ client_id: clientId, deleted: true }, () => out.line(`Removed OAuth client ${clientId}.`));
    });
}
