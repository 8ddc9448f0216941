import type { AddressInfo } from "node:net";
import { SMTPServer, type SMTPServerAddress } from "smtp-server";

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
}

export interface SmtpCatcher {
  /** What the service's SMTP_URL is set to. */
  url: string;
  /** Every mail accepted, in order. */
  received: ReceivedMail[];
  close: () => Promise<void>;
}

/**
 * A real SMTP server (smtp-server) on loopback that keeps every mail it accepts. `refuse` decides,
 * per recipient, whether the server answers 550 instead (a mailbox that does not exist).
 */
export async function startSmtpCatcher(options: { refuse?: (address: SMTPServerAddress) => boolean } = {}): Promise<SmtpCatcher> {
  const received: ReceivedMail[] = [];
  const smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS"],
    // A reverse DNS lookup of 127.0.0.1 can take seconds in a sandbox.
    disableReverseLookup: true,
    logger: false,
    onRcptTo(address, _session, callback) {
      if (!options.refuse?.(address)) return callback();
      callback(Object.assign(new Error(`Mailbox ${address.address} unavailable`), { responseCode: 550 }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      stream.on("end", () => {
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
          raw: Buffer.concat(chunks).toString("utf8"),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, "127.0.0.1", resolve));
  const { port } = smtp.server.address() as AddressInfo;
  return {
    url: `smtp://127.0.0.1:${port}?ignoreTLS=true`,
    received,
    close: () => new Promise<void>((resolve) => smtp.close(() => resolve())),
  };
}
