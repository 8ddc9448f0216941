import type { Command } from "commander";
import type { Schemas } from "../../sdk/src/index.ts";
import { contextOf, type Context } from "../context.ts";
import { enumOption } from "../contract-enums.ts";

type ReplyMode = Schemas["RoomReplyMode"];
const replyModeOption = () => enumOption("--reply-mode <mode>", "who answers a message that names no persona", "RoomReplyMode");
import { examples } from "../help.ts";
import { printFields, printPageFooter, printTable } from "../output.ts";
import { booleanValue, collect, nonNegativeInt, positiveInt } from "../parse.ts";
import { resolvePersonaId } from "../resolve.ts";
import { runRoomChat } from "../room-chat.ts";
import { resolveUserId } from "./social.ts";

const listColumns = [
  { header: "name", value: (room: Schemas["RoomListItem"]) => room.name, max: 30 },
  { header: "members", value: (room: Schemas["RoomListItem"]) => room.member_count },
  { header: "personas", value: (room: Schemas["RoomListItem"]) => room.persona_count },
  { header: "last message", value: (room: Schemas["RoomListItem"]) => room.last_message_at ?? "-" },
  { header: "public", value: (room: Schemas["RoomListItem"]) => (room.is_public ? "yes" : "no") },
  { header: "id", value: (room: Schemas["RoomListItem"]) => room.id },
];

function printRoom(room: Schemas["Room"]): void {
  printFields([
    ["name", room.name],
    ["id", room.id],
    ["description", room.description || "-"],
    ["public", room.is_public ? "yes" : "no"],
    ["reply mode", room.reply_mode],
    ["owner", room.owner_id],
    ["members", room.members.map((member) => `${member.user_id}${member.role === "owner" ? " (owner)" : ""}`).join(", ")],
    ["personas", room.personas.map((persona) => persona.name).join(", ") || "-"],
  ]);
}

/** A sent message's replies, one per line, as a person reads a group chat. */
function printReplies(ctx: Context, sent: Schemas["RoomMessageSent"]): void {
  if (sent.persona_responses.length === 0) ctx.out.line("(no persona answered)");
  for (const reply of sent.persona_responses) ctx.out.line(`${reply.persona_name}: ${reply.content}`);
}

export function registerRoomCommands(program: Command): void {
  program
    .command("room")
    .description("Join a room in the terminal: its messages and replies live, your lines sent as messages")
    .argument("<room>", "room id")
    .option("--history <n>", "earlier messages to show first", nonNegativeInt, 10)
    .addHelpText(
      "after",
      "\nIn the room: type a message and press Enter (@name asks a persona); /exit, Ctrl-D or Ctrl-C leaves.\n" +
        "Replies appear as they are written; so do other members' messages. Lines piped on stdin are sent\n" +
        "one by one, and the command ends once their replies have arrived. With --json, every event is one\n" +
        "JSON line (NDJSON).\n" +
        examples(["persona room 0193a6d2-…", "echo '@Captain Nova, which planet is that?' | persona room 0193a6d2-… --json"]),
    )
    .action(async (id: string, options: { history: number }, command: Command) => {
      const ctx = await contextOf(command);
      await runRoomChat({ client: ctx.client(), baseUrl: ctx.baseUrl, out: ctx.out, roomId: id, history: options.history });
    });

  const group = program
    .command("rooms")
    .description("Group rooms: several people and personas in one conversation")
    .addHelpText(
      "after",
      "\nA <room> is a room id; a <user> an id or a username; a <persona> an id or the name of one of yours.\n" +
        examples(["persona rooms create 'Stargazers' --persona 'Captain Nova'", "persona rooms send <room> '@Captain Nova, which planet is that?'", "persona rooms list --json"]),
    );

  group
    .command("list")
    .description("Your rooms, the most recently active first")
    .option("--limit <n>", "page size (1-100)", positiveInt, 20)
    .option("--offset <n>", "skip this many", nonNegativeInt, 0)
    .addHelpText("after", examples(["persona rooms list", "persona rooms list --json | jq -r '.data[].name'"]))
    .action(async (options: { limit: number; offset: number }, command: Command) => {
      const ctx = await contextOf(command);
      const page = await ctx.client().rooms.list({ limit: options.limit, offset: options.offset });
      ctx.out.result(page, () => {
        printTable(page.data, listColumns, "(no rooms yet: make one with `persona rooms create`)");
        printPageFooter(page.data.length, page.total, page.offset);
      });
    });

  group
    .command("create")
    .description("Create a room; you become its owner")
    .argument("<name>", "1-100 characters")
    .option("--description <text>", "up to 500 characters")
    .option("--public", "readable by any signed-in user")
    .option("--persona <persona>", "a persona to add (repeatable)", collect)
    .addOption(replyModeOption())
    .addHelpText("after", examples(["persona rooms create 'Stargazers' --persona 'Captain Nova' --persona 0193a6f1-…", "persona rooms create Lobby --public --json"]))
    .action(async (name: string, options: { description?: string; public?: boolean; persona?: string[]; replyMode?: ReplyMode }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const personaIds = [];
      for (const ref of options.persona ?? []) personaIds.push(await resolvePersonaId(client, ref));
      const room = await client.rooms.create({
        name,
        ...(options.description !== undefined ? { description: options.description } : {}),
        ...(options.public ? { is_public: true } : {}),
        ...(personaIds.length > 0 ? { persona_ids: personaIds } : {}),
        ...(options.replyMode ? { reply_mode: options.replyMode } : {}),
      });
      ctx.out.result(room, () => printRoom(room));
    });

  group
    .command("show")
    .description("A room with its members and personas")
    .argument("<room>", "room id")
    .addHelpText("after", examples(["persona rooms show 0193a6d2-…"]))
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const room = await ctx.client().rooms.get(id);
      ctx.out.result(room, () => printRoom(room));
    });

  group
    .command("update")
    .description("Change a room's name, description or visibility (owner only)")
    .argument("<room>", "room id")
    .option("--name <name>", "1-100 characters")
    .option("--description <text>", "up to 500 characters")
    .option("--public <bool>", "true or false", booleanValue)
    .addOption(replyModeOption())
    .addHelpText("after", examples(["persona rooms update 0193a6d2-… --name 'Stargazers (Fridays)' --public true"]))
    .action(async (id: string, options: { name?: string; description?: string; public?: boolean; replyMode?: ReplyMode }, command: Command) => {
      const ctx = await contextOf(command);
      const room = await ctx.client().rooms.update(id, {
        ...(options.name !== undefined ? { name: options.name } : {}),
        ...(options.description !== undefined ? { description: options.description } : {}),
        ...(options.public !== undefined ? { is_public: options.public } : {}),
        ...(options.replyMode ? { reply_mode: options.replyMode } : {}),
      });
      ctx.out.result(room, () => ctx.out.line(`Updated ${room.name} (${room.is_public ? "public" : "private"}).`));
    });

  group
    .command("delete")
    .description("Delete a room with all its messages (owner only)")
    .argument("<room>", "room id")
    .addHelpText("after", examples(["persona rooms delete 0193a6d2-…"]))
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const result = await ctx.client().rooms.delete(id);
      ctx.out.result(result, () => ctx.out.line(`Deleted room ${id}.`));
    });

  group
    .command("messages")
    .description("A room's messages, newest first")
    .argument("<room>", "room id")
    .option("--limit <n>", "page size (1-200)", positiveInt, 50)
    .option("--offset <n>", "skip this many", nonNegativeInt, 0)
    .option("--before <time>", "only messages before this ISO 8601 instant")
    .addHelpText("after", examples(["persona rooms messages 0193a6d2-… --limit 10", "persona rooms messages 0193a6d2-… --before 2026-11-21T21:00:00Z --json"]))
    .action(async (id: string, options: { limit: number; offset: number; before?: string }, command: Command) => {
      const ctx = await contextOf(command);
      const page = await ctx.client().rooms.messages(id, { limit: options.limit, offset: options.offset, ...(options.before ? { before: options.before } : {}) });
      ctx.out.result(page, () => {
        printTable(page.data, [
          { header: "when", value: (message) => message.created_at },
          { header: "from", value: (message) => `${message.sender.name}${message.sender.type === "persona" ? " (persona)" : ""}`, max: 30 },
          { header: "message", value: (message) => message.content, max: 80 },
        ], "(no messages yet)");
        printPageFooter(page.data.length, page.total, page.offset);
      });
    });

  group
    .command("send")
    .description("Post a message and print the personas' replies (@name picks who answers)")
    .argument("<room>", "room id")
    .argument("<message...>", "1-4,000 characters")
    .addHelpText("after", examples(["persona rooms send 0193a6d2-… '@Captain Nova, which planet is that?'", "persona rooms send 0193a6d2-… hello all --json"]))
    .action(async (id: string, words: string[], _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const sent = await ctx.client().rooms.send(id, { content: words.join(" ") });
      ctx.out.result(sent, () => printReplies(ctx, sent));
    });

  group
    .command("add-member")
    .description("Add a user to your room (owner only)")
    .argument("<room>", "room id")
    .argument("<user>", "id or username")
    .addHelpText("after", examples(["persona rooms add-member 0193a6d2-… @mira"]))
    .action(async (id: string, ref: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const member = await client.rooms.addMember(id, await resolveUserId(client, ref));
      ctx.out.result(member, () => ctx.out.line(`Added ${ref} to the room.`));
    });

  group
    .command("remove-member")
    .description("Remove a member from your room (owner only)")
    .argument("<room>", "room id")
    .argument("<user>", "id or username")
    .addHelpText("after", examples(["persona rooms remove-member 0193a6d2-… @mira"]))
    .action(async (id: string, ref: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const removed = await client.rooms.removeMember(id, await resolveUserId(client, ref));
      ctx.out.result(removed, () => ctx.out.line(`Removed ${ref} from the room.`));
    });

  group
    .command("leave")
    .description("Leave a room you are a member of")
    .argument("<room>", "room id")
    .addHelpText("after", examples(["persona rooms leave 0193a6d2-…"]))
    .action(async (id: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const removed = await client.rooms.removeMember(id, (await client.auth.me()).id);
      ctx.out.result(removed, () => ctx.out.line("You left the room."));
    });

  group
    .command("add-persona")
    .description("Add one of your personas or a public one to a room you are in")
    .argument("<room>", "room id")
    .argument("<persona>", "id, or the name of one of yours")
    .addHelpText("after", examples(["persona rooms add-persona 0193a6d2-… 'Captain Nova'"]))
    .action(async (id: string, ref: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const added = await client.rooms.addPersona(id, await resolvePersonaId(client, ref));
      ctx.out.result(added, () => ctx.out.line(`${added.name} joined the room.`));
    });

  group
    .command("remove-persona")
    .description("Take a persona out of a room (the owner any, a member the ones it added)")
    .argument("<room>", "room id")
    .argument("<persona>", "id, or the name of one of yours")
    .addHelpText("after", examples(["persona rooms remove-persona 0193a6d2-… 'Captain Nova'"]))
    .action(async (id: string, ref: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const removed = await client.rooms.removePersona(id, await resolvePersonaId(client, ref));
      ctx.out.result(removed, () => ctx.out.line("The persona left the room."));
    });
}
