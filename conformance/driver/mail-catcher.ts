import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SMTPServer } from "smtp-server";

/** Decodes the body of a single-part mail as nodemailer writes it (7bit, quoted-printable or base64). */
export function mailText(raw: string): string {
  const split = raw.search(/\r?\n\r?\n/);
  const head = split === -1 ? raw : raw.slice(0, split);
  const body = split === -1 ? "" : raw.slice(split).replace(/^\r?\n\r?\n/, "");
  const encoding = /^content-transfer-encoding:\s*([\w-]+)/im.exec(head)?.[1]?.toLowerCase();
  if (encoding === "base64") return Buffer.from(body.replace(/\s+/g, ""), "base64").toString("utf8");
  if (encoding !== "quoted-printable") return body;
  const bytes = body.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return Buffer.from(bytes, "latin1").toString("utf8");
}

export interface MailCatcher {
  smtpUrl: string;
  dir: string;
  stop: () => Promise<void>;
}

/**
 * An SMTP server on loopback that drops every mail it receives as JSON into a directory: the suite
 * reads verification, reset and export links from there, as a user reads them from their inbox.
 */
export async function startMailCatcher(): Promise<MailCatcher> {
  const dir = mkdtempSync(join(tmpdir(), "persona-conformance-mail-"));
  let count = 0;
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    disableReverseLookup: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        const to = session.envelope.rcptTo.map((rcpt) => rcpt.address.toLowerCase());
        const file = join(dir, `${String(++count).padStart(6, "0")}.json`);
        // Written aside and renamed, so that the suite never reads half a mail.
        writeFileSync(`${file}.part`, JSON.stringify({ to, text: mailText(Buffer.concat(chunks).toString("utf8")) }));
        renameSync(`${file}.part`, file);
        callback();
      });
    },
  });
  await new Promise<void>((listening) => smtp.listen(0, "127.0.0.1", listening));
  const { port } = smtp.server.address() as AddressInfo;
  return {
    smtpUrl: `smtp://127.0.0.1:${port}?ignoreTLS=true`,
    dir,
    stop: async () => {
      await new Promise<void>((closed) => smtp.close(() => closed()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
