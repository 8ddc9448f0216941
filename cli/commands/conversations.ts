import type { Command } from "commander";
import type { Schemas } from "../../sdk/src/index.ts";
import { contextOf } from "../context.ts";
import { examples } from "../help.ts";
import { printFields, printPageFooter, printTable } from "../output.ts";
import { nonNegativeInt, positiveInt } from "../parse.ts";
import { resolvePersonaId } from "../resolve.ts";

/** A transcript, one block per message, as a person reads a chat. */
function printTranscript(messages: Schemas["Message"][]): void {
  for (const m of messages) {
    process.stdout.write(`[${m.created_at}] ${m.role}:\n${m.content.replace(/^/gm, "  ")}\n`);
    if (m.citations?.length) process.stdout.write(`  (sources: ${[...new Set(m.citations.map((c) => c.filename))].join(", ")})\n`);
  }
}

// Search highlights are HTML (matches in <mark>, the rest escaped); a terminal shows them in bold.
function terminalHighlight(html: string): string {
  const bold = process.stdout.isTTY ? ["\x1b[1m", "\x1b[22m"] : ["*", "*"];
  return html
    .replace(/<mark>/g, bold[0]!)
    .replace(/<\/mark>/g, bold[1]!)
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;|&#x27;/g, "'")
    .replace(/&amp;/g, "&");
}

export function registerConversationCommands(program: Command): void {
  const group = program
    .command("conversations")
    .description("List, read, search and delete your conversations (start one with `persona chat`)")
    .addHelpText(
      "after",
      examples([
        "persona conversations list --persona Orion",
        "persona conversations get 0193a9ef-…",
        "persona conversations messages 0193a9ef-… --limit 100 --json",
        "persona conversations search 'orion belt'",
      ]),
    );

  group
    .command("list")
    .description("List your conversations, most recent first")
    .option("--persona <persona>", "only conversations with this persona (id or name)")
    .option("--limit <n>", "page size", positiveInt, 20)
    .option("--offset <n>", "skip this many", nonNegativeInt, 0)
    .addHelpText("after", examples(["persona conversations list --json | jq '.total'"]))
    .action(async (options: { persona?: string; limit: number; offset: number }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const personaId = options.persona ? await resolvePersonaId(client, options.persona) : undefined;
      const page = await client.conversations.list({ limit: options.limit, offset: options.offset, ...(personaId ? { persona_id: personaId } : {}) });
      ctx.out.result(page, () => {
        printTable(
          page.data,
          [
            { header: "id", value: (c) => c.id },
            { header: "persona_id", value: (c) => c.persona_id },
            { header: "messages", value: (c) => c.message_count },
            { header: "updated_at", value: (c) => c.updated_at },
            { header: "title", value: (c) => c.title ?? "(untitled)", max: 50 },
          ],
          "(no conversations yet: start one with `persona chat <persona>`)",
        );
        printPageFooter(page.data.length, page.total, options.offset);
      });
    });

  group
    .command("get")
    .description("Show a conversation with its 50 most recent messages")
    .argument("<id>", "conversation id")
    .addHelpText("after", examples(["persona conversations get 0193a9ef-1a2b-7c3d-8e4f-5a6b7c8d9e01"]))
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const conversation = await ctx.client().conversations.get(id);
      ctx.out.result(conversation, () => {
        printFields([
          ["id", conversation.id],
          ["title", conversation.title ?? "(untitled)"],
          ["persona_id", conversation.persona_id],
          ["messages", conversation.message_count],
          ["created_at", conversation.created_at],
          ["updated_at", conversation.updated_at],
        ]);
        ctx.out.line();
        printTranscript(conversation.messages);
      });
    });

  group
    .command("messages")
    .description("List a conversation's messages, newest first (page back with --before)")
    .argument("<id>", "conversation id")
    .option("--limit <n>", "page size", positiveInt, 50)
    .option("--offset <n>", "skip this many", nonNegativeInt)
    .option("--before <message_id>", "only messages older than this one")
    .addHelpText("after", examples(["persona conversations messages 0193a9ef-… --before 0193a9ef-6c7d-…"]))
    .action(async (id: string, options: { limit: number; offset?: number; before?: string }, command: Command) => {
      const ctx = await contextOf(command);
      const query = Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined));
      const page = await ctx.client().conversations.messages.list(id, query);
      ctx.out.result(page, () => {
        // The API pages newest first; a transcript reads oldest first.
        printTranscript([...page.data].reverse());
        if (page.has_more && page.data.length) ctx.out.line(`(older messages: --before ${page.data[page.data.length - 1]!.id})`);
      });
    });

  group
    .command("search")
    .description("Full-text search over your messages")
    .argument("<query>", "words to find")
    .option("--limit <n>", "page size", positiveInt, 20)
    .option("--offset <n>", "skip this many", nonNegativeInt, 0)
    .addHelpText("after", examples(["persona conversations search 'orion belt' --json"]))
    .action(async (q: string, options: { limit: number; offset: number }, command: Command) => {
      const ctx = await contextOf(command);
      const page = await ctx.client().conversations.search({ q, limit: options.limit, offset: options.offset });
      ctx.out.result(page, () => {
        if (page.data.length === 0) ctx.out.line("(no matches)");
        for (const hit of page.data) {
          ctx.out.line(`${hit.conversation.id}  ${hit.conversation.title ?? "(untitled)"}  [${hit.message.role}, ${hit.message.created_at}]`);
          ctx.out.line(`  ${terminalHighlight(hit.highlight)}`);
        }
        printPageFooter(page.data.length, page.total, options.offset);
      });
    });

  group
    .command("delete")
    .description("Delete a conversation and its messages")
    .argument("<id>", "conversation id")
    .addHelpText("after", examples(["persona conversations delete 0193a9ef-…"]))
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const deleted = await ctx.client().conversations.delete(id);
      ctx.out.result(deleted, () => ctx.out.line(`Deleted conversation ${id}.`));
    });
}
