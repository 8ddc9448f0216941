import { Command, Option } from "commander";
import { registerApiCommand } from "./commands/api.ts";
import { registerAuthCommands } from "./commands/auth.ts";
import { registerBackupCommands } from "./commands/backup.ts";
import { registerBillingCommands } from "./commands/billing.ts";
import { registerCostCommands } from "./commands/costs.ts";
import { registerChatCommand } from "./commands/chat.ts";
import { registerConversationCommands } from "./commands/conversations.ts";
import { registerDbCommands } from "./commands/db.ts";
import { registerExportCommand } from "./commands/export.ts";
import { registerImportCommand } from "./commands/cards.ts";
import { registerKeyCommands } from "./commands/keys.ts";
import { registerKnowledgeCommands } from "./commands/knowledge.ts";
import { registerMailCommands } from "./commands/mail.ts";
import { registerMediaCommands } from "./commands/media.ts";
import { registerOAuthClientCommands } from "./commands/oauth-clients.ts";
import { registerUserCommands } from "./commands/users.ts";
import { registerPersonaCommands } from "./commands/personas.ts";
import { registerServerCommands } from "./commands/server.ts";
import { registerWebhookCommands } from "./commands/webhooks.ts";
import { registerIntegrationCommands } from "./commands/integrations.ts";
import { registerSocialCommands } from "./commands/social.ts";
import { registerRoomCommands } from "./commands/rooms.ts";
import { registerStudioCommands } from "./commands/studio.ts";
import { registerAuditCommand } from "./commands/audit.ts";
import { registerRatingCommands } from "./commands/ratings.ts";
import { registerReportCommands } from "./commands/reports.ts";
import { registerSuspensionCommands } from "./commands/suspensions.ts";
import { registerTakedownCommands } from "./commands/takedowns.ts";
import { edition } from "./edition.ts";
import { examples } from "./help.ts";

/**
 * The commands that start the server or work on its database, not through the API: in the
 * installable package (edition "client") they are listed but answer that they need the server.
 */
export const SERVER_COMMANDS = ["serve", "worker", "migrate", "backup", "restore", "users", "oauth-clients", "mail", "billing sync-prices", "costs", "marketplace feature", "marketplace unfeature", "db move", "reports", "takedowns", "ratings", "audit"];

const DESCRIPTION = {
  server:
    "Persona: conversational AI characters. Runs the server (serve, worker, migrate) and administers it.\n" +
    "Server settings come from the environment (see the README); client commands use the stored login.",
  client:
    "Persona: conversational AI characters. Talks to any Persona server through its API, with the stored\n" +
    "login for that server (persona login).",
};

/** The whole command tree; every command group lives in its own file under commands/. */
export function buildProgram(): Command {
  const program = new Command()
    .name("persona")
    .description(DESCRIPTION[edition.kind])
    .version(edition.version, "-V, --version", "print the version")
    .addOption(new Option("--base-url <url>", "server URL (default: PERSONA_BASE_URL, the profile's last login, or http://127.0.0.1:3000)"))
    .addOption(new Option("--api-key <key>", "use this API key instead of the stored login (default: PERSONA_API_KEY)"))
    .addOption(new Option("--profile <name>", "the stored profile whose logins to use (default: PERSONA_PROFILE, or default)"))
    .option("--json", "print the result as JSON on stdout (and nothing else)")
    .configureHelp({ showGlobalOptions: true, sortSubcommands: false })
    // Every command inherits these: errors become exceptions with a code (mapped to exit codes in
    // persona.ts), and commander's own messages get the same "persona: " prefix as ours.
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, "persona: ")) })
    .showHelpAfterError("(run with --help for usage)")
    .addHelpText(
      "after",
      "\nExit codes: 0 ok, 1 error, 2 usage error, 3 authentication (not logged in, 401, 403), 4 not found.\n" +
        examples([
          "persona login --email ada@example.com",
          "persona personas create --name Orion --instructions 'You are a stargazing guide.'",
          "persona chat Orion",
          "persona keys list --json | jq '.data[].id'",
          "persona api personas_list --limit 5",
        ]),
    );
  if (edition.kind === "client") {
    program.addHelpText(
      "after",
      `\nServer commands (${SERVER_COMMANDS.join(", ")}) start the server or work on its database:\n` +
        "they need the server package. Run them from a Persona server installation (npx persona … in its directory).",
    );
  }

  registerServerCommands(program);
  registerBackupCommands(program);
  registerDbCommands(program);
  registerAuthCommands(program);
  registerKeyCommands(program);
  registerOAuthClientCommands(program);
  registerUserCommands(program);
  registerSuspensionCommands(program);
  registerMailCommands(program);
  registerPersonaCommands(program);
  registerConversationCommands(program);
  registerKnowledgeCommands(program);
  registerChatCommand(program);
  registerSocialCommands(program);
  registerRoomCommands(program);
  registerStudioCommands(program);
  registerExportCommand(program);
  registerImportCommand(program);
  registerWebhookCommands(program);
  registerIntegrationCommands(program);
  registerBillingCommands(program);
  registerCostCommands(program);
  registerMediaCommands(program);
  registerReportCommands(program);
  registerTakedownCommands(program);
  registerRatingCommands(program);
  registerAuditCommand(program);
  registerApiCommand(program);
  return program;
}
