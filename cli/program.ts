import { Command, Option } from "commander";
import { registerApiCommand } from "./commands/api.ts";
import { registerAuthCommands } from "./commands/auth.ts";
import { registerBackupCommands } from "./commands/backup.ts";
import { registerBillingCommands } from "./commands/billing.ts";
import { registerChatCommand } from "./commands/chat.ts";
import { registerConversationCommands } from "./commands/conversations.ts";
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
import { examples } from "./help.ts";

/** The whole command tree; every command group lives in its own file under commands/. */
export function buildProgram(): Command {
  const program = new Command()
    .name("persona")
    .description(
      "Persona: conversational AI characters. Runs the server (serve, worker, migrate) and administers it.\n" +
        "Server settings come from the environment (see the README); client commands use the stored login.",
    )
    .addOption(new Option("--base-url <url>", "server URL (default: PERSONA_BASE_URL, the stored login's, or http://127.0.0.1:3000)"))
    .addOption(new Option("--api-key <key>", "use this API key instead of the stored login (default: PERSONA_API_KEY)"))
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

  registerServerCommands(program);
  registerBackupCommands(program);
  registerAuthCommands(program);
  registerKeyCommands(program);
  registerOAuthClientCommands(program);
  registerUserCommands(program);
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
  registerMediaCommands(program);
  registerApiCommand(program);
  return program;
}
