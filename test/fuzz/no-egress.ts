import dns from "node:dns";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";

// While the fuzzer runs, nothing in this process may reach beyond loopback: every socket connection
// and every name lookup is checked, and an attempt is refused and recorded. The fuzzer feeds the
// service URLs, host names and addresses of every kind; a recorded attempt means some code fetched
// a URL it was given without the SSRF guard (or the guard let it through), and fails the run.

export interface EgressGuard {
  /** What was refused: "connect 10.0.0.1:80", "lookup example.com". */
  attempts: string[];
  restore: () => void;
}

const isLoopback = (address: string) => /^127\./.test(address) || address === "::1" || /^::ffff:127\./i.test(address);
const isLocalName = (host: string) => host === "localhost" || host.endsWith(".localhost");

type LookupCallback = (error: Error | null, address?: string | dns.LookupAddress[], family?: number) => void;
type Lookup = (host: string, options: dns.LookupOptions, callback: LookupCallback) => void;

const refusal = (what: string) => Object.assign(new Error(`egress refused by the fuzz guard: ${what}`), { code: "EFUZZEGRESS" });

export function forbidEgress(): EgressGuard {
  const attempts: string[] = [];
  const originalConnect = net.Socket.prototype.connect;
  const originalLookup = dns.lookup;
  const originalPromiseLookup = dns.promises.lookup;

  const checkedLookup =
    (inner: Lookup | undefined): Lookup =>
    (host, options, callback) => {
      if (!inner) {
        if (!isLocalName(host) && !net.isIP(host)) {
          attempts.push(`lookup ${host}`);
          return process.nextTick(() => callback(refusal(`lookup ${host}`)));
        }
        return (originalLookup as unknown as Lookup)(host, options, callback);
      }
      inner(host, options, (error, address, family) => {
        if (error) return callback(error);
        const list = Array.isArray(address) ? address.map((a) => a.address) : [address ?? ""];
        const outside = list.find((a) => !isLoopback(a));
        if (outside) {
          attempts.push(`connect ${host} (${outside})`);
          return callback(refusal(`${host} resolves to ${outside}`));
        }
        callback(null, address, family);
      });
    };

  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    // net.connect passes its normalized arguments as one array; a direct call passes options or (port, host).
    const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0];
    const options = (first && typeof first === "object" ? first : typeof args[1] === "string" ? { host: args[1] } : {}) as net.TcpNetConnectOpts & { path?: string };
    if (!options.path) {
      const host = options.host ?? "localhost";
      if (net.isIP(host)) {
        if (!isLoopback(host)) {
          attempts.push(`connect ${host}:${String(options.port)}`);
          process.nextTick(() => this.destroy(refusal(`connect ${host}`)));
          return this;
        }
      } else if (first && typeof first === "object") {
        options.lookup = checkedLookup(options.lookup as unknown as Lookup | undefined) as unknown as net.LookupFunction;
      }
    }
    return (originalConnect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof net.Socket.prototype.connect;

  (dns as { lookup: unknown }).lookup = checkedLookup(undefined);
  (dns.promises as { lookup: unknown }).lookup = async (host: string, options?: dns.LookupOptions) => {
    if (!isLocalName(host) && !net.isIP(host)) {
      attempts.push(`lookup ${host}`);
      throw refusal(`lookup ${host}`);
    }
    return originalPromiseLookup(host, options ?? {});
  };
  syncBuiltinESMExports();

  return {
    attempts,
    restore: () => {
      net.Socket.prototype.connect = originalConnect;
      (dns as { lookup: unknown }).lookup = originalLookup;
      (dns.promises as { lookup: unknown }).lookup = originalPromiseLookup;
      syncBuiltinESMExports();
    },
  };
}
