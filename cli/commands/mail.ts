import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { examples } from "../help.ts";
import { withServerServices } from "../internals/database.ts";
import { printFields, printTable } from "../output.ts";
import { positiveInt } from "../parse.ts";

const outbox = () => import("../../server/toolkit/providers/email/outbox-admin.ts");

/**
 * The e-mail outbox: every mail the service sent or, without SMTP_URL, only recorded (verification
 * and reset links, export links). No API endpoint exposes it, so this reads the server's database.
 */
export function registerMailCommands(program: Command): void {
  const group = program
    .command("mail")
    .description("Read the e-mail outbox (on the server's database): verification, reset and export mails")
    .addHelpText(
      "after",
      "\nThese commands work on the server's database (DATABASE_URL, or the embedded one in PERSONA_DATA_DIR).\n" +
        "On the embedded default they attach to the running server's database, or open it when no server runs.\n" +
        examples(["persona mail", "persona mail list --to ada@example.com --json", "persona mail show 0193…"]),
    );

  group
    .command("list", { isDefault: true })
    .description("List mails, newest first (the default subcommand)")
    .option("--to <address>", "only mails to this address")
    .option("--kind <kind>", "only mails of this kind (verify_email, reset_password, data_export, …)")
    .option("--limit <n>", "most mails to show", positiveInt, 20)
    .addHelpText("after", examples(["persona mail list --to ada@example.com --limit 5"]))
    .action(async (options: { to?: string; kind?: string; limit: number }, command: Command) => {
      const { out } = await contextOf(command);
      const { listOutbox } = await outbox();
      const mails = await withServerServices((services) => listOutbox(services, options));
      out.result({ data: mails }, () =>
        printTable(
          mails,
          [
            { header: "id", value: (m) => m.id },
            { header: "created_at", value: (m) => m.created_at },
            { header: "to", value: (m) => m.to, max: 40 },
            { header: "kind", value: (m) => m.kind },
            { header: "sent", value: (m) => (m.sent_at ? "smtp" : "outbox only") },
            { header: "subject", value: (m) => m.subject, max: 60 },
          ],
          "(the outbox is empty)",
        ),
      );
    });

  group
    .command("show")
    .description("Show one mail with its full text")
    .argument("<id>", "the mail's id (from `persona mail`)")
    .addHelpText("after", examples(["persona mail show 0193a6e1-5c2d-7f10-8a4b-3c9d2e1f0a77"]))
    .action(async (id: string, _options: unknown, command: Command) => {
      const { out } = await contextOf(command);
      const { readOutboxMail } = await outbox();
      const kept = await withServerServices((services) => readOutboxMail(services, id));
      if (!kept) throw new CliError(`mail ${id} not found`, EXIT.notFound, "not_found");
      // The outbox keeps a mail's text sealed, and drops it once an SMTP server took the mail (issue 31 M3).
      const mail = { ...kept, text: kept.text ?? "(the text was dropped once the mail was sent)" };
      out.result(mail, () => {
        printFields([
          ["id", mail.id],
          ["to", mail.to],
          ["subject", mail.subject],
          ["kind", mail.kind],
          ["created_at", mail.created_at],
          ["sent_at", mail.sent_at ?? "not sent (outbox only)"],
        ]);
        out.line();
        out.line(mail.text);
      });
    });
}
