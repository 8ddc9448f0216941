import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { areas } from "../../server/areas.ts";
import { quotaTables } from "../../server/quota/usage-store.ts";
import { toolkitTables } from "../../server/toolkit/db/tables.ts";

// Table ownership (issue 32): each table belongs to one area, to quota/ or to the toolkit, and
// only its owner's files name it in SQL; another owner's rows are reached through the owner's
// public functions or SQL fragments it exports. The crossings below are the ones that remain,
// each with its reason; the list may only shrink (a crossing no longer made fails the test too).
const root = fileURLToPath(new URL("../..", import.meta.url));
const serverDir = join(root, "server");

const CROSSINGS: Record<string, string> = {
  "billing -> users": "a subscription change sets users.plan in the same transaction as the subscription row",
  "cards -> personas": "a card import creates the persona and its card row in one transaction",
  "conversations -> personas": "the turn statement reads the visible persona and bumps its message count in the chat path's one round trip",
  "conversations -> event_outbox": "the reply's events are written in the same statement as the reply (transactional outbox)",
  "marketplace -> personas": "listings are joined to their personas for visibility and names",
  "marketplace -> users": "listings of deleted accounts are hidden by a join on users",
  "marketplace -> messages": "a listing's conversation counts come from messages",
  "personas -> users": "public persona lists hide deleted creators by a join on users",
  "rooms -> messages": "a room reply reads the persona's one-to-one history shape from messages",
  "rooms -> personas": "room members' personas are joined for names and visibility",
  "rooms -> users": "room member lists join usernames",
  "social -> users": "profiles, follows and the feed join users",
  "social -> personas": "likes and the feed join personas",
  "social -> persona_trending": "explore ranks by the stored trending set",
  "studio -> users": "analytics hide deleted accounts",
  "studio -> messages": "analytics count messages per persona",
  "studio -> ratings": "analytics read the persona's marketplace ratings",
  "studio -> marketplace_listings": "analytics read the persona's listing",
  "studio -> personas": "drafts and variants join the persona they belong to",
  "webhooks -> users": "deliveries skip deleted accounts",
  "webhooks -> event_outbox": "the delivery sweep drains the outbox it owns the delivery of",
  "quota -> users": "the reservation reads the user's plan in the same statement",
  "quota -> billing_subscriptions": "the usage period of a paid plan is the subscription's, read in the reservation statement",
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name))
    // Migrations create every table; config.ts's dotted setting keys ("images.provider") are not SQL.
    .filter((file) => !file.includes(join("toolkit", "db", "migrations")) && !file.endsWith(join("toolkit", "config.ts")));
}

/** Tables a file names in SQL: knex calls, table.column references, and FROM/JOIN/INTO/UPDATE clauses. */
function tablesNamedIn(text: string, known: Set<string>): Set<string> {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:"'`\\])\/\/.*$/gm, "$1");
  const found = new Set<string>();
  const patterns = [
    /\b(?:from|join|into|update|table)\s+"?([a-z_]+)/gi,
    /(?:from|join|Join|into|update|table|Table)\(\s*"([a-z_]+)/g,
    /\b\w+\(\s*"([a-z_]+)(?: as \w+)?"\s*\)/g,
    /["'`\s(,]([a-z_]+)\.(?:[a-z_]+|\*)["'`\s,)=]/g,
  ];
  for (const pattern of patterns) for (const match of code.matchAll(pattern)) if (known.has(match[1]!)) found.add(match[1]!);
  return found;
}

function ownerOfFile(file: string): string | undefined {
  const path = relative(serverDir, file).split("/");
  if (path[0] === "areas" && path.length > 2) return path[1];
  if (path[0] === "quota" || path[0] === "toolkit") return path[0];
  return undefined;
}

const owners = new Map<string, string>();
const claims: string[] = [];
for (const area of areas) for (const table of area.tables ?? []) claims.push(`${table}:${area.name}`);
for (const table of quotaTables) claims.push(`${table}:quota`);
for (const table of toolkitTables) claims.push(`${table}:toolkit`);
for (const claim of claims) {
  const [table, owner] = claim.split(":") as [string, string];
  owners.set(table, owners.has(table) ? `${owners.get(table)},${owner}` : owner);
}

describe("table ownership", () => {
  it("gives every table of the migrations exactly one owner", () => {
    const migrations = readdirSync(join(serverDir, "toolkit", "db", "migrations"));
    const created = new Set<string>();
    for (const file of migrations) {
      for (const match of readFileSync(join(serverDir, "toolkit", "db", "migrations", file), "utf8").matchAll(/createTable\("([a-z_]+)"/g)) created.add(match[1]!);
    }
    expect([...created].filter((table) => !owners.has(table)), "tables no area, quota or the toolkit claims").toEqual([]);
    expect([...owners].filter(([, owner]) => owner.includes(",")), "tables claimed twice").toEqual([]);
    expect([...owners.keys()].filter((table) => !created.has(table)), "claimed tables no migration creates").toEqual([]);
  });

  it("lets a file name only its owner's tables, but for the crossings listed with their reasons", () => {
    const known = new Set(owners.keys());
    const made = new Map<string, string[]>();
    for (const file of sourceFiles(serverDir)) {
      const owner = ownerOfFile(file);
      if (!owner) continue;
      for (const table of tablesNamedIn(readFileSync(file, "utf8"), known)) {
        const tableOwner = owners.get(table)!;
        if (tableOwner === owner) continue;
        const crossing = `${owner} -> ${table}`;
        made.set(crossing, [...(made.get(crossing) ?? []), relative(root, file)]);
      }
    }
    const unlisted = [...made].filter(([crossing]) => !(crossing in CROSSINGS)).map(([crossing, files]) => `${crossing} (${files.join(", ")})`);
    expect(unlisted, "a file names another owner's table: use the owner's public functions").toEqual([]);
    expect(Object.keys(CROSSINGS).filter((crossing) => !made.has(crossing)), "crossings no longer made: remove them from the list").toEqual([]);
  });
});
