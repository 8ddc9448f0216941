import type { Command } from "commander";
import { contextOf } from "../context.ts";
import { credentialsPath, listLogins, loadCredentials, removeLogin, saveLogin } from "../credentials.ts";
import { CliError, EXIT } from "../errors.ts";
import { examples } from "../help.ts";
import { printFields, printTable } from "../output.ts";
import { valueOrAsk } from "../prompt.ts";

/** Reads a whole stream (for --password-stdin). */
async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
}

const isStatus = (error: unknown, status: number) => (error as { status?: unknown }).status === status;

/** A login refused because the account is scheduled for deletion (issue 34): say how to get it back from here. */
function pendingDeletion(error: unknown): CliError | undefined {
  const { code, message, details } = error as { code?: unknown; message?: string; details?: { restorable?: unknown } };
  if (code !== "account_pending_deletion") return undefined;
  const hint = details?.restorable === true ? "; run the same command with --restore to restore it and log in" : "";
  return new CliError(`${message ?? "This account is scheduled for deletion"}${hint}`, EXIT.auth, "account_pending_deletion");
}

/** login, logout, logins, whoami: the stored credentials the other client commands use. */
export function registerAuthCommands(program: Command): void {
  program
    .command("login")
    .description("Log in and store the credentials in your config directory (file mode 600)")
    .option("--email <email>", "account e-mail (prompted for on a terminal)")
    .option("--password <password>", "password (prompted for on a terminal; prefer --password-stdin in scripts)")
    .option("--password-stdin", "read the password from stdin")
    .option("--restore", "restore an account scheduled for deletion (during its 30-day grace period), then log in")
    .addHelpText(
      "after",
      "\nWith the global --api-key, stores that key instead of logging in with a password.\n" +
        "Logins are kept per server (base URL): logging in to another server keeps this one, and the\n" +
        "server logged in to last is the one commands talk to unless --base-url or PERSONA_BASE_URL says.\n" +
        "Profiles (--profile or PERSONA_PROFILE; default: default) each keep their own logins, e.g. an\n" +
        "admin account and a test account on the same server. PERSONA_CONFIG_DIR moves the config directory.\n" +
        "A deleted account can be restored until its grace period ends: --restore brings it back with\n" +
        "everything it owns and the API keys its deletion revoked.\n" +
        examples([
          "persona login",
          "persona --base-url https://persona.example.com login --email ada@example.com",
          "printf '%s' \"$PASSWORD\" | persona login --email ada@example.com --password-stdin --json",
          "persona login --api-key pk_…",
          "persona --profile staging --base-url https://staging.persona.example.com login",
          "persona login --restore --email ada@example.com",
        ]),
    )
    .action(async (options: { email?: string; password?: string; passwordStdin?: boolean; restore?: boolean }, command: Command) => {
      const ctx = await contextOf(command);
      const apiKey = command.optsWithGlobals<{ apiKey?: string }>().apiKey;
      if (apiKey) {
        // Checks the key before storing it. /auth/me needs the admin scope: a narrower key is
        // valid (403, not 401) but cannot say whose it is.
        let user = null;
        try {
          const me = await ctx.client().auth.me();
          user = { id: me.id, email: me.email, username: me.username };
        } catch (error) {
          if (!isStatus(error, 403)) throw error;
        }
        await saveLogin(ctx.env.configDir, ctx.profile, { base_url: ctx.baseUrl, auth: { type: "api_key", api_key: apiKey }, user });
        const result = { base_url: ctx.baseUrl, profile: ctx.profile, auth: "api_key", user, config_file: credentialsPath(ctx.env.configDir) };
        ctx.out.result(result, () => ctx.out.line(`Stored the API key for ${ctx.baseUrl}${user ? ` (${user.username})` : ""}.`));
        return;
      }
      const email = await valueOrAsk(options.email, "--email", "E-mail: ");
      const password = options.passwordStdin ? await readStdin() : await valueOrAsk(options.password, "--password", "Password: ", true);
      const anonymous = ctx.anonymousClient();
      let restored: { api_keys: number } | undefined;
      let answer;
      if (options.restore) {
        answer = await anonymous.auth.restoreMe({ email, password });
        restored = answer.restored;
      } else {
        try {
          answer = await anonymous.auth.login({ email, password });
        } catch (error) {
          throw pendingDeletion(error) ?? error;
        }
      }
      const user = { id: answer.user.id, email: answer.user.email, username: answer.user.username };
      await saveLogin(ctx.env.configDir, ctx.profile, {
        base_url: ctx.baseUrl,
        auth: { type: "session", access_token: answer.access_token, refresh_token: answer.refresh_token },
        user,
      });
      // Tokens stay in the file: printing them would put secrets into shell histories and CI logs.
      const result = { base_url: ctx.baseUrl, profile: ctx.profile, auth: "session", user, config_file: credentialsPath(ctx.env.configDir), ...(restored ? { restored } : {}) };
      ctx.out.result(result, () => {
        if (restored) ctx.out.line(`Restored the account ${user.username} (${user.email}); API keys live again: ${restored.api_keys}.`);
        ctx.out.line(`Logged in to ${ctx.baseUrl} as ${user.username} (${user.email}).`);
      });
    });

  program
    .command("logout")
    .description("Forget the stored login for the server (--all: every server of the profile)")
    .option("--all", "log out of every server the profile has a login for")
    .addHelpText("after", examples(["persona logout", "persona --base-url https://persona.example.com logout", "persona --profile staging logout --all"]))
    .action(async (options: { all?: boolean }, command: Command) => {
      const ctx = await contextOf(command);
      const removed = await removeLogin(ctx.env.configDir, ctx.profile, options.all ? undefined : ctx.baseUrl);
      const result = { logged_out: removed.length > 0, profile: ctx.profile, base_url: options.all ? null : ctx.baseUrl, servers: removed };
      ctx.out.result(result, () => {
        if (removed.length === 0) ctx.out.line(options.all ? `No logins in profile ${ctx.profile}.` : `Not logged in to ${ctx.baseUrl}.`);
        for (const server of removed) ctx.out.line(`Logged out of ${server}.`);
      });
    });

  program
    .command("logins")
    .description("List the stored logins: profile, server, account (never their secrets)")
    .addHelpText("after", "\nThe server marked * is the one its profile's commands talk to by default.\n" + examples(["persona logins", "persona logins --json"]))
    .action(async (_options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const logins = listLogins(await loadCredentials(ctx.env.configDir)).map((login) => ({
        profile: login.profile,
        base_url: login.base_url,
        default: login.default,
        auth: login.auth.type,
        user: login.user,
        updated_at: login.updated_at,
      }));
      ctx.out.result({ data: logins, config_file: credentialsPath(ctx.env.configDir) }, () =>
        printTable(
          logins,
          [
            { header: "PROFILE", value: (login) => login.profile },
            { header: "SERVER", value: (login) => `${login.base_url}${login.default ? " *" : ""}` },
            { header: "ACCOUNT", value: (login) => login.user?.username ?? "-" },
            { header: "AUTH", value: (login) => login.auth },
          ],
          "(no stored logins: run `persona login`)",
        ),
      );
    });

  program
    .command("whoami")
    .description("Show the account the stored login or --api-key acts as")
    .addHelpText("after", examples(["persona whoami", "persona whoami --json"]))
    .action(async (_options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const me = await ctx.client().auth.me();
      ctx.out.result({ base_url: ctx.baseUrl, profile: ctx.profile, user: me }, () =>
        printFields([
          ["server", ctx.baseUrl],
          ["profile", ctx.profile],
          ["id", me.id],
          ["username", me.username],
          ["email", me.email],
          ["email_verified", me.email_verified],
          ["plan", me.plan],
        ]),
      );
    });
}
