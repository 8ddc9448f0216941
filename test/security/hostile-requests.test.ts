import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { normalizedContentType } from "../../server/toolkit/http/validator.ts";
import { startTestService, type TestService } from "../support/service.ts";
import { registerUser, type TestUser } from "../support/users.ts";
import { sleep } from "../support/wait.ts";

// Issue 31 H3, H5, M2: a request is not worked on, read or parsed before its caller is known, and a
// slow or hostile body holds nothing of the service's.

const ADMISSION_PLACES = 2;
let service: TestService;
let user: TestUser;

beforeAll(async () => {
  service = await startTestService({
    env: {
      ADMISSION_MAX_IN_FLIGHT: String(ADMISSION_PLACES),
      ADMISSION_QUEUE: "4",
      ADMISSION_QUEUE_MS: "500",
      BODY_TIMEOUT_MS: "2000",
      UPLOAD_IDLE_TIMEOUT_MS: "2000",
    },
  });
  user = await registerUser(service);
});

afterAll(async () => {
  await service?.close();
});

interface RawAnswer {
  status: number;
  head: string;
  body: string;
  /** The server closed the connection after answering. */
  closed: boolean;
}

/** A connection to the service on which the test writes bytes by hand. */
function rawConnection(): Promise<{ socket: Socket; answer: Promise<RawAnswer> }> {
  const { port, hostname } = new URL(service.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      let received = "";
      const answer = new Promise<RawAnswer>((done) => {
        const finish = (closed: boolean) => {
          const [head = "", body = ""] = received.split("\r\n\r\n");
          done({ status: Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1] ?? 0), head, body, closed });
        };
        socket.on("data", (chunk) => {
          received += chunk.toString("latin1");
          // One answer is all a test waits for: a full head and as many bytes as it declares.
          const length = Number(/content-length: (\d+)/i.exec(received)?.[1] ?? -1);
          const split = received.indexOf("\r\n\r\n");
          if (split >= 0 && length >= 0 && received.length - split - 4 >= length && !/connection: close/i.test(received.slice(0, split))) finish(false);
        });
        socket.on("close", () => finish(true));
        socket.on("error", () => undefined);
      });
      resolve({ socket, answer });
    });
    socket.on("error", reject);
  });
}

const head = (lines: string[]) => `${lines.join("\r\n")}\r\n\r\n`;

describe("slow bodies (issue 31 H3)", () => {
  it("hold no admission place: other clients are served while more slow bodies than places trickle in", async () => {
    const slow = await Promise.all(Array.from({ length: ADMISSION_PLACES + 2 }, () => rawConnection()));
    for (const { socket } of slow) {
      socket.write(head(["POST /v1/auth/login HTTP/1.1", "Host: x", "Content-Type: application/json", "Content-Length: 200"]));
      socket.write('{"email":');
    }
    // Each of these would wait behind the slow bodies for a place, then get 429, if a slow body held one.
    const others = await Promise.all(Array.from({ length: ADMISSION_PLACES + 2 }, () => service.fetch("/v1/auth/me", { headers: user.auth })));
    expect(others.map((response) => response.status)).toEqual(Array(ADMISSION_PLACES + 2).fill(200));

    // The slow bodies are cut at their deadline: 408 in the envelope, and the connection closed.
    for (const { answer } of slow) {
      const { status, body, head, closed } = await answer;
      expect(status).toBe(408);
      expect(head).toMatch(/connection: close/i);
      expect(JSON.parse(body)).toMatchObject({ error: { code: "invalid_request", message: "The request body did not arrive within 2 s" } });
      expect(closed).toBe(true);
    }
  });

  it("an upload that keeps sending is not cut by the small bodies' deadline; one that stalls is", async () => {
    const { socket, answer } = await rawConnection();
    const boundary = "b0undary";
    const file = Buffer.alloc(64 * 1024, "a");
    const before = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="notes.txt"\r\nContent-Type: text/plain\r\n\r\n`);
    const after = Buffer.from(`\r\n--${boundary}--\r\n`);
    socket.write(head([`POST /v1/knowledge/00000000-0000-7000-8000-000000000000/documents HTTP/1.1`, "Host: x", `Authorization: ${user.auth.authorization}`,
      `Content-Type: multipart/form-data; boundary=${boundary}`, `Content-Length: ${before.length + file.length + after.length}`]));
    socket.write(before);
    // 3 s in all, past BODY_TIMEOUT_MS, but never 2 s without a byte: the fixed pace is the point.
    for (let sent = 0; sent < 6; sent++) {
      socket.write(file.subarray(sent * 1024, (sent + 1) * 1024));
      await sleep(500);
    }
    socket.write(file.subarray(6 * 1024));
    socket.write(after);
    // It reached its handler, which knows no such persona of the caller's.
    expect((await answer).status).toBe(404);
    socket.destroy();

    const stalled = await rawConnection();
    stalled.socket.write(head([`POST /v1/knowledge/00000000-0000-7000-8000-000000000000/documents HTTP/1.1`, "Host: x", `Authorization: ${user.auth.authorization}`,
      `Content-Type: multipart/form-data; boundary=${boundary}`, `Content-Length: ${before.length + file.length + after.length}`]));
    stalled.socket.write(before);
    const cut = await stalled.answer;
    expect(cut.status).toBe(408);
    expect(JSON.parse(cut.body).error.message).toBe("The upload sent nothing for 2 s");
  });
});

describe("multipart bodies (issue 31 H5)", () => {
  const boundary = "b0undary";
  const uploadHead = (authorization: string, length: number) =>
    head(["POST /v1/voice/stt HTTP/1.1", "Host: x", `Authorization: ${authorization}`, `Content-Type: multipart/form-data; boundary=${boundary}`, `Content-Length: ${length}`]);
  const field = (name: string, value: string) => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`;

  it("without a valid credential are answered 401 before they are read", async () => {
    const { socket, answer } = await rawConnection();
    // 150 fields of 1 MB declared; only the first few bytes are ever sent.
    socket.write(uploadHead("Bearer not-a-token", 150 * 1024 * 1024));
    socket.write(field("f0", "x".repeat(1000)));
    const { status, body } = await answer;
    expect(status).toBe(401);
    expect(JSON.parse(body).error.code).toBe("unauthorized");
    socket.destroy();
  });

  it("are refused 413 past their part limits, and past the upload size before a byte is read", async () => {
    const tooMany = Array.from({ length: 20 }, (_, i) => field(`f${i}`, "x")).join("") + `--${boundary}--\r\n`;
    const many = await service.fetch("/v1/voice/stt", { method: "POST", headers: { ...user.auth, "content-type": `multipart/form-data; boundary=${boundary}` }, body: tooMany });
    expect(many.status).toBe(413);
    expect((await many.json()).error.code).toBe("payload_too_large");

    const bigField = field("f0", "x".repeat(1024 * 1024)) + `--${boundary}--\r\n`;
    const big = await service.fetch("/v1/voice/stt", { method: "POST", headers: { ...user.auth, "content-type": `multipart/form-data; boundary=${boundary}` }, body: bigField });
    expect(big.status).toBe(413);

    const { socket, answer } = await rawConnection();
    socket.write(uploadHead(user.auth.authorization, 150 * 1024 * 1024));
    const declared = await answer;
    expect(declared.status).toBe(413);
    expect(JSON.parse(declared.body).error.message).toBe(`An upload may be at most ${25 * 1024 * 1024} bytes`);
    socket.destroy();
  });
});

describe("content types (issue 31 M2)", () => {
  it("are read in one pass, however many empty parameters they hold", async () => {
    const header = `text/plain${"; ".repeat(500_000)}charset=UTF-8; a=b`;
    expect(normalizedContentType(header)).toBe("text/plain; a=b; charset=utf-8");
    const response = await service.fetch("/v1/auth/login", { method: "POST", headers: { "content-type": `text/plain${"; ".repeat(7_000)}` }, body: "{}" });
    expect(response.status).toBe(415);
    expect((await response.json()).error.message).toBe("unsupported media type text/plain");
  });
});
