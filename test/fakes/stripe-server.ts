import { createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A fake Stripe API on loopback speaking Stripe's wire format: form-encoded request bodies in
 * bracket notation (`items[0][price]=...`), JSON objects and lists, Stripe's error bodies and
 * statuses, `Idempotency-Key` replay, and webhook events signed the way Stripe signs them
 * (`Stripe-Signature: t=...,v1=HMAC-SHA256(secret, "t.body")`). The real `stripe` package talks
 * to it through its host, port and protocol options.
 *
 * Paid invoices carry an invoice payment and its PaymentIntent (`GET /v1/invoice_payments`), which
 * `POST /v1/refunds` refunds as Stripe does: the unrefunded rest by default, `charge_already_refunded`
 * and `amount_too_large` when there is not that much left, `charge_disputed` for a disputed payment
 * (`disputePayment`). `failNext(route)` makes the next calls of a route answer Stripe's 500.
 *
 * Time is the fake's own test clock (`now`, Unix seconds), moved with `advanceTo`: renewals,
 * subscription schedule phases and cancellations at the period end happen then, as Stripe's
 * billing clock does. Events are queued, not sent, until the test delivers them (`deliverAll`,
 * `send`), so it can deliver them late, out of order or twice.
 */

type Json = Record<string, unknown>;
type Obj = Json & { id: string };

export interface FakeEvent {
  id: string;
  object: "event";
  type: string;
  created: number;
  api_version: string;
  livemode: false;
  pending_webhooks: number;
  request: { id: null; idempotency_key: null };
  data: { object: Json };
}

export interface RecordedStripeRequest {
  method: string;
  path: string;
  params: Json;
  idempotencyKey: string | undefined;
}

class StripeFailure extends Error {
  readonly status: number;
  readonly body: { type: string; message: string; code?: string; param?: string; decline_code?: string };
  constructor(status: number, body: StripeFailure["body"]) {
    super(body.message);
    this.status = status;
    this.body = body;
  }
}

const missing = (kind: string, id: string) =>
  new StripeFailure(404, { type: "invalid_request_error", code: "resource_missing", message: `No such ${kind}: '${id}'`, param: "id" });
const invalid = (message: string, param?: string) => new StripeFailure(400, { type: "invalid_request_error", message, ...(param ? { param } : {}) });

/** Parses `a[0][b]=1&c[]=2` into nested objects and arrays, as Stripe's API does. */
export function parseStripeForm(text: string): Json {
  const root: Json = {};
  for (const pair of text.split("&")) {
    if (!pair) continue;
    const [rawKey = "", rawValue = ""] = pair.split("=", 2);
    const key = decodeURIComponent(rawKey.replace(/\+/g, " "));
    const value = decodeURIComponent(rawValue.replace(/\+/g, " "));
    const parts = key.includes("[") ? [key.slice(0, key.indexOf("[")), ...[...key.matchAll(/\[([^\]]*)\]/g)].map((m) => m[1]!)] : [key];
    let node: Record<string, unknown> | unknown[] = root;
    parts.forEach((part, index) => {
      const last = index === parts.length - 1;
      const nextIsIndex = !last && /^\d*$/.test(parts[index + 1]!);
      const slot = Array.isArray(node) && part === "" ? node.length : part;
      const container = node as Record<string | number, unknown>;
      if (last) container[slot] = value;
      else {
        container[slot] ??= nextIsIndex ? [] : {};
        node = container[slot] as Record<string, unknown> | unknown[];
      }
    });
  }
  return root;
}

const int = (value: unknown) => (value === undefined || value === "" ? undefined : Number(value));
const bool = (value: unknown) => value === "true";
const list = (data: unknown[], url: string) => ({ object: "list", data, has_more: false, url });

export interface FakeStripeOptions {
  secretKey?: string;
  webhookSecret?: string;
  /** The test clock's start (Unix seconds). Default: now. */
  now?: number;
}

export class FakeStripe {
  readonly secretKey: string;
  readonly webhookSecret: string;
  /** The test clock, Unix seconds. */
  now: number;
  /** Where events are sent (the service's `POST /v1/billing/webhook`). */
  webhookUrl = "";
  /** Payments fail (card declined) while set: renewals go past_due, upgrades with error_if_incomplete answer 402. */
  failPayments = false;
  url = "";
  readonly requests: RecordedStripeRequest[] = [];
  /** Every event made, in order; `queue` holds those not sent yet. */
  readonly events: FakeEvent[] = [];
  queue: FakeEvent[] = [];

  readonly customers = new Map<string, Obj>();
  readonly products = new Map<string, Obj>();
  readonly prices = new Map<string, Obj>();
  readonly sessions = new Map<string, Obj>();
  readonly subscriptions = new Map<string, Obj>();
  readonly schedules = new Map<string, Obj>();
  readonly invoices = new Map<string, Obj>();
  readonly paymentIntents = new Map<string, Obj>();
  readonly invoicePayments = new Map<string, Obj>();
  readonly refunds = new Map<string, Obj>();
  readonly #failures = new Map<string, number>();
  readonly #idempotency = new Map<string, { body: string; status: number; response: unknown }>();
  #invoiceCount = 0;
  #server = createServer((req, res) => void this.#handle(req, res));

  constructor(options: FakeStripeOptions = {}) {
    this.secretKey = options.secretKey ?? `sk_test_${randomBytes(12).toString("hex")}`;
    this.webhookSecret = options.webhookSecret ?? `whsec_${randomBytes(18).toString("base64")}`;
    this.now = options.now ?? Math.floor(Date.now() / 1000);
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }

  // ------------------------------------------------------------ test controls

  /** Creates the six Prices (as `persona billing sync-prices` would), without going through the API. */
  seedPrices(amounts: Record<string, number>): void {
    for (const [key, amount] of Object.entries(amounts)) {
      const [, plan, interval] = /^persona_(\w+)_(month|year)$/.exec(key)!;
      const product = `persona_${plan}`;
      if (!this.products.has(product)) this.products.set(product, { id: product, object: "product", name: `Persona ${plan}`, active: true });
      this.#createPrice({ product, currency: "usd", unit_amount: String(amount), recurring: { interval }, lookup_key: key });
    }
  }

  /** The buyer pays on Stripe's hosted page: the subscription starts, its first invoice is paid, the events are queued. */
  completeCheckout(sessionId: string): Obj {
    const session = this.sessions.get(sessionId);
    if (!session || session.status !== "open") throw new Error(`checkout ${sessionId} is not open`);
    const price = this.prices.get((session.line_items as { price: string }[])[0]!.price)!;
    const subscription = this.#newSubscription(session.customer as string, price, (session.subscription_data as { metadata?: Json } | undefined)?.metadata ?? {});
    Object.assign(session, { status: "complete", payment_status: "paid", subscription: subscription.id });
    const invoice = this.#invoiceFor(subscription, [{ price, amount: price.unit_amount as number, start: this.now, end: this.#item(subscription).current_period_end as number, proration: false }], "subscription_create");
    this.#emit("customer.subscription.created", subscription);
    this.#emit(invoice.status === "paid" ? "invoice.paid" : "invoice.payment_failed", invoice);
    this.#emit("checkout.session.completed", session);
    return subscription;
  }

  /** Moves the clock to `at`, running what Stripe runs meanwhile: schedule phases, renewals, cancellations at period end. */
  advanceTo(at: number): void {
    this.now = at;
    for (const subscription of this.subscriptions.values()) {
      if (!["active", "past_due", "trialing"].includes(subscription.status as string)) continue;
      let item = this.#item(subscription);
      while ((item.current_period_end as number) <= at && ["active", "past_due"].includes(subscription.status as string)) {
        const end = item.current_period_end as number;
        if (subscription.cancel_at_period_end) {
          Object.assign(subscription, { status: "canceled", ended_at: end });
          this.#emit("customer.subscription.deleted", subscription);
          break;
        }
        const schedule = subscription.schedule ? this.schedules.get(subscription.schedule as string) : undefined;
        const phase = (schedule?.phases as Json[] | undefined)?.find((p) => (p.start_date as number) === end);
        if (phase) {
          const price = this.prices.get(((phase.items as Json[])[0]!.price as string))!;
          item.price = price;
          if (phase.metadata) subscription.metadata = { ...(subscription.metadata as Json), ...(phase.metadata as Json) };
          schedule!.current_phase = { start_date: phase.start_date, end_date: phase.end_date };
        }
        const interval = (item.price as { recurring: { interval: string } }).recurring.interval;
        item.current_period_start = end;
        item.current_period_end = addInterval(end, interval);
        // A phase that runs one period and ends with `release` lets the subscription go on its own.
        if (schedule && phase && schedule.end_behavior === "release" && (phase.end_date as number) <= (item.current_period_end as number)) this.#release(schedule);
        const price = item.price as Obj;
        const invoice = this.#invoiceFor(subscription, [{ price, amount: price.unit_amount as number, start: end, end: item.current_period_end as number, proration: false }], "subscription_cycle");
        subscription.status = invoice.status === "paid" ? "active" : "past_due";
        this.#emit("customer.subscription.updated", subscription);
        this.#emit(invoice.status === "paid" ? "invoice.paid" : "invoice.payment_failed", invoice);
        item = this.#item(subscription);
      }
    }
  }

  /**
   * The next `times` calls of `route` (as the fake names them: `POST refunds`,
   * `DELETE subscriptions/:id`, `GET invoice_payments`, ...) answer Stripe's 500 `api_error`.
   */
  failNext(route: string, times = 1): void {
    this.#failures.set(route, (this.#failures.get(route) ?? 0) + times);
  }

  /** The customer disputed the payment of `invoiceId` with their bank: Stripe refuses to refund it. */
  disputePayment(invoiceId: string): void {
    for (const payment of this.invoicePayments.values()) {
      if (payment.invoice !== invoiceId) continue;
      const intent = this.paymentIntents.get((payment.payment as { payment_intent: string }).payment_intent)!;
      intent.disputed = true;
    }
  }

  /** The `Stripe-Signature` header of `payload`, signed at `timestamp` (default: the clock) with `secret` (default: the webhook's). */
  sign(payload: string, options: { timestamp?: number; secret?: string } = {}): string {
    const timestamp = options.timestamp ?? this.now;
    const signature = createHmac("sha256", options.secret ?? this.webhookSecret).update(`${timestamp}.${payload}`, "utf8").digest("hex");
    return `t=${timestamp},v1=${signature}`;
  }

  /** Sends one event to the webhook URL, signed unless told otherwise; answers the receiver's status and body. */
  async send(event: FakeEvent, options: { signature?: string; timestamp?: number; secret?: string } = {}): Promise<{ status: number; body: unknown }> {
    const payload = JSON.stringify(event, null, 2);
    const response = await fetch(this.webhookUrl, {
      method: "POST",
      headers: { "content-type": "application/json; charset=utf-8", "stripe-signature": options.signature ?? this.sign(payload, options), "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)" },
      body: payload,
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  }

  /** Sends every queued event (in order, or reversed), expecting 2xx for each. */
  async deliverAll(options: { reverse?: boolean } = {}): Promise<FakeEvent[]> {
    const batch = options.reverse ? [...this.queue].reverse() : [...this.queue];
    this.queue = [];
    for (const event of batch) {
      const answer = await this.send(event);
      if (answer.status !== 200) throw new Error(`the receiver answered ${answer.status} to ${event.type}: ${JSON.stringify(answer.body)}`);
    }
    return batch;
  }

  // ------------------------------------------------------------ HTTP

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const url = new URL(req.url ?? "/", this.url);
    const params = req.method === "GET" || req.method === "DELETE" ? parseStripeForm(url.search.slice(1)) : parseStripeForm(body);
    const idempotencyKey = req.headers["idempotency-key"] as string | undefined;
    this.requests.push({ method: req.method ?? "GET", path: url.pathname, params, idempotencyKey });
    const send = (status: number, value: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { "content-type": "application/json", "request-id": `req_${randomBytes(7).toString("hex")}`, ...headers });
      res.end(JSON.stringify(value));
    };
    if (req.headers.authorization !== `Bearer ${this.secretKey}`) {
      return send(401, { error: { type: "invalid_request_error", message: "Invalid API Key provided: sk_test_****" } });
    }
    if (idempotencyKey && req.method === "POST") {
      const seen = this.#idempotency.get(idempotencyKey);
      if (seen && seen.body !== body) {
        return send(400, { error: { type: "idempotency_error", message: "Keys for idempotent requests can only be used with the same parameters they were first used with." } });
      }
      if (seen) return send(seen.status, seen.response, { "idempotent-replayed": "true" });
    }
    let status = 200;
    let response: unknown;
    try {
      response = this.#route(req.method ?? "GET", url.pathname, params, url.toString());
    } catch (error) {
      if (!(error instanceof StripeFailure)) throw error;
      status = error.status;
      response = { error: error.body };
    }
    if (idempotencyKey && req.method === "POST" && status < 500) this.#idempotency.set(idempotencyKey, { body, status, response });
    send(status, response);
  }

  #route(method: string, path: string, params: Json, url: string): unknown {
    const [, , resource, id, action] = path.split("/");
    const named = id === "create_preview" ? `/${id}` : id ? "/:id" : "";
    const route = `${method} ${resource}${named}${action ? `/${action}` : ""}`;
    const failures = this.#failures.get(route) ?? 0;
    if (failures > 0) {
      this.#failures.set(route, failures - 1);
      throw new StripeFailure(500, { type: "api_error", message: "An unknown error occurred while processing your request." });
    }
    switch (route) {
      case "POST customers":
        return this.#put(this.customers, { id: this.#id("cus"), object: "customer", email: params.email ?? null, metadata: params.metadata ?? {}, created: this.now });
      case "GET customers/:id":
        return this.#get(this.customers, "customer", id!);
      case "GET products/:id":
        return this.#get(this.products, "product", id!);
      case "POST products":
        if (params.id && this.products.has(params.id as string)) throw invalid(`Product already exists.`, "id");
        return this.#put(this.products, { id: (params.id as string) ?? this.#id("prod"), object: "product", name: params.name, active: true, created: this.now });
      case "GET prices": {
        const keys = (params.lookup_keys as string[] | undefined) ?? [];
        const prices = [...this.prices.values()].filter((p) => (!keys.length || keys.includes(p.lookup_key as string)) && (params.active === undefined || String(p.active) === params.active));
        return list(prices, "/v1/prices");
      }
      case "POST prices":
        return this.#createPrice(params);
      case "GET subscriptions/:id":
        return this.#expanded(this.#get(this.subscriptions, "subscription", id!), params);
      case "POST subscriptions/:id":
        return this.#expanded(this.#updateSubscription(id!, params), params);
      case "DELETE subscriptions/:id":
        return this.#cancelNow(id!);
      case "POST subscription_schedules":
        return this.#createSchedule(params);
      case "GET subscription_schedules/:id":
        return this.#get(this.schedules, "subscription_schedule", id!);
      case "POST subscription_schedules/:id":
        return this.#updateSchedule(id!, params);
      case "POST subscription_schedules/:id/release":
        return this.#release(this.#get(this.schedules, "subscription_schedule", id!));
      case "POST invoices/create_preview":
        return this.#preview(params);
      case "GET invoices/:id":
        return this.#get(this.invoices, "invoice", id!);
      case "GET invoices": {
        const subscriptionOf = (invoice: Obj) => (invoice.parent as { subscription_details?: { subscription?: string } }).subscription_details?.subscription;
        const found = [...this.invoices.values()].filter(
          (i) =>
            (params.customer === undefined || i.customer === params.customer) &&
            (params.subscription === undefined || subscriptionOf(i) === params.subscription) &&
            (params.status === undefined || i.status === params.status),
        );
        return list(found.reverse().slice(0, int(params.limit) ?? 10), "/v1/invoices");
      }
      case "GET invoice_payments": {
        const found = [...this.invoicePayments.values()].filter((p) => (params.invoice === undefined || p.invoice === params.invoice) && (params.status === undefined || p.status === params.status));
        return list(found.slice(0, int(params.limit) ?? 10), "/v1/invoice_payments");
      }
      case "GET invoice_payments/:id":
        return this.#get(this.invoicePayments, "invoice_payment", id!);
      case "POST refunds":
        return this.#refund(params);
      case "GET refunds": {
        const found = [...this.refunds.values()].filter((r) => params.payment_intent === undefined || r.payment_intent === params.payment_intent);
        return list(found.reverse().slice(0, int(params.limit) ?? 10), "/v1/refunds");
      }
      case "GET refunds/:id":
        return this.#get(this.refunds, "refund", id!);
    }
    // Two-segment resources: /v1/checkout/sessions[/:id], /v1/billing_portal/sessions.
    const [, , group, name, subId] = path.split("/");
    if (group === "checkout" && name === "sessions" && method === "POST" && !subId) return this.#createSession(params);
    if (group === "checkout" && name === "sessions" && method === "GET" && subId) return this.#get(this.sessions, "checkout.session", subId);
    if (group === "billing_portal" && name === "sessions" && method === "POST") {
      if (!this.customers.has(params.customer as string)) throw missing("customer", params.customer as string);
      const id = this.#id("bps");
      return { id, object: "billing_portal.session", customer: params.customer, return_url: params.return_url ?? null, created: this.now, url: `${this.url}/p/session/${id}`, livemode: false };
    }
    throw new StripeFailure(404, { type: "invalid_request_error", message: `Unrecognized request URL (${method}: ${url.replace(this.url, "")}).` });
  }

  // ------------------------------------------------------------ objects

  #id(prefix: string): string {
    return `${prefix}_${randomBytes(12).toString("base64url").replace(/[-_]/g, "x")}`;
  }

  #put(map: Map<string, Obj>, object: Obj): Obj {
    map.set(object.id, object);
    return object;
  }

  #get(map: Map<string, Obj>, kind: string, id: string): Obj {
    const found = map.get(id);
    if (!found) throw missing(kind, id);
    return found;
  }

  #createPrice(params: Json): Obj {
    const key = params.lookup_key as string | undefined;
    if (key && [...this.prices.values()].some((p) => p.lookup_key === key)) throw invalid(`A price (\`${key}\`) already uses that lookup key.`, "lookup_key");
    if (!this.products.has(params.product as string)) throw missing("product", params.product as string);
    const recurring = params.recurring as { interval: string } | undefined;
    return this.#put(this.prices, {
      id: this.#id("price"),
      object: "price",
      active: true,
      currency: params.currency,
      unit_amount: int(params.unit_amount),
      lookup_key: key ?? null,
      nickname: params.nickname ?? null,
      product: params.product,
      recurring: recurring ? { interval: recurring.interval, interval_count: 1, usage_type: "licensed" } : null,
      type: recurring ? "recurring" : "one_time",
      created: this.now,
    });
  }

  #createSession(params: Json): Obj {
    if (params.mode !== "subscription") throw invalid("This fake only makes subscription checkouts.", "mode");
    if (!this.customers.has(params.customer as string)) throw missing("customer", params.customer as string);
    const items = params.line_items as { price: string; quantity: string }[];
    if (!items?.length || !this.prices.has(items[0]!.price)) throw missing("price", items?.[0]?.price ?? "");
    for (const field of ["success_url", "cancel_url"]) if (!/^https?:\/\//.test(String(params[field] ?? ""))) throw invalid(`Not a valid URL`, field);
    const id = `cs_test_${randomBytes(24).toString("base64url").replace(/[-_]/g, "x")}`;
    return this.#put(this.sessions, {
      id,
      object: "checkout.session",
      mode: "subscription",
      status: "open",
      payment_status: "unpaid",
      customer: params.customer,
      client_reference_id: params.client_reference_id ?? null,
      metadata: params.metadata ?? {},
      subscription_data: params.subscription_data ?? {},
      line_items: items,
      success_url: params.success_url,
      cancel_url: params.cancel_url,
      subscription: null,
      url: `${this.url}/c/pay/${id}`,
      expires_at: this.now + 24 * 3600,
      created: this.now,
      livemode: false,
    });
  }

  #newSubscription(customer: string, price: Obj, metadata: Json): Obj {
    const interval = (price.recurring as { interval: string }).interval;
    const id = this.#id("sub");
    return this.#put(this.subscriptions, {
      id,
      object: "subscription",
      customer,
      status: "active",
      items: list([{ id: this.#id("si"), object: "subscription_item", price, quantity: 1, subscription: id, current_period_start: this.now, current_period_end: addInterval(this.now, interval), created: this.now }], `/v1/subscription_items?subscription=${id}`),
      cancel_at: null,
      cancel_at_period_end: false,
      canceled_at: null,
      ended_at: null,
      schedule: null,
      metadata,
      currency: "usd",
      created: this.now,
      start_date: this.now,
      livemode: false,
    });
  }

  #item(subscription: Obj): Json {
    return (subscription.items as { data: Json[] }).data[0]!;
  }

  #expanded(subscription: Obj, params: Json): Obj {
    const expand = (params.expand as string[] | undefined) ?? [];
    if (expand.includes("schedule") && subscription.schedule) return { ...subscription, schedule: this.schedules.get(subscription.schedule as string) };
    return subscription;
  }

  #updateSubscription(id: string, params: Json): Obj {
    const subscription = this.#get(this.subscriptions, "subscription", id);
    if (subscription.status === "canceled") throw invalid("A canceled subscription can only update its cancellation_details and metadata.");
    const items = params.items as { id?: string; price?: string }[] | undefined;
    if (subscription.schedule && (items || params.cancel_at_period_end !== undefined)) {
      throw invalid(`The subscription is managed by the subscription schedule \`${subscription.schedule}\`, and updating any cancelation behavior directly is not allowed. Please update the schedule instead.`);
    }
    if (params.cancel_at_period_end !== undefined) {
      const on = bool(params.cancel_at_period_end);
      Object.assign(subscription, { cancel_at_period_end: on, cancel_at: on ? this.#item(subscription).current_period_end : null, canceled_at: on ? this.now : null });
    }
    if (params.metadata) subscription.metadata = { ...(subscription.metadata as Json), ...(params.metadata as Json) };
    if (items?.[0]?.price) {
      const item = this.#item(subscription);
      if (items[0].id !== item.id) throw invalid(`Invalid subscription item: ${items[0].id}`, "items[0][id]");
      const price = this.prices.get(items[0].price);
      if (!price) throw missing("price", items[0].price);
      const at = int(params.proration_date) ?? this.now;
      const lines = this.#prorationLines(subscription, price, at);
      if (params.proration_behavior === "always_invoice") {
        const invoice = this.#invoiceFor(subscription, lines, "subscription_update");
        if (invoice.status !== "paid" && params.payment_behavior === "error_if_incomplete") {
          this.invoices.delete(invoice.id);
          throw new StripeFailure(402, { type: "card_error", code: "card_declined", decline_code: "generic_decline", message: "Your card was declined." });
        }
        item.price = price;
        this.#emit("customer.subscription.updated", subscription);
        this.#emit(invoice.status === "paid" ? "invoice.paid" : "invoice.payment_failed", invoice);
        return subscription;
      }
      item.price = price;
    }
    this.#emit("customer.subscription.updated", subscription);
    return subscription;
  }

  #cancelNow(id: string): Obj {
    const subscription = this.#get(this.subscriptions, "subscription", id);
    if (subscription.status === "canceled") throw invalid(`No such subscription: '${id}'`);
    if (subscription.schedule) this.#release(this.schedules.get(subscription.schedule as string)!);
    Object.assign(subscription, { status: "canceled", ended_at: this.now, canceled_at: subscription.canceled_at ?? this.now });
    this.#emit("customer.subscription.deleted", subscription);
    return subscription;
  }

  /** A refund of a PaymentIntent's payment, as Stripe makes one: the unrefunded rest unless `amount` says less. */
  #refund(params: Json): Obj {
    const intentId = params.payment_intent as string | undefined;
    if (!intentId) throw invalid("You must pass either a charge or a payment intent.", "payment_intent");
    const intent = this.paymentIntents.get(intentId);
    if (!intent) throw missing("payment_intent", intentId);
    if (intent.disputed) {
      throw new StripeFailure(400, { type: "invalid_request_error", code: "charge_disputed", message: `Charge ${intent.latest_charge} has been charged back; cannot issue a refund.` });
    }
    const refunded = [...this.refunds.values()].filter((r) => r.payment_intent === intentId && r.status === "succeeded").reduce((sum, r) => sum + (r.amount as number), 0);
    const left = (intent.amount_received as number) - refunded;
    if (left <= 0) throw new StripeFailure(400, { type: "invalid_request_error", code: "charge_already_refunded", message: `Charge ${intent.latest_charge} has already been refunded.` });
    const amount = int(params.amount) ?? left;
    if (amount > left) {
      throw new StripeFailure(400, { type: "invalid_request_error", code: "amount_too_large", param: "amount", message: `Refund amount ($${amount / 100}) is greater than unrefunded amount on charge ($${left / 100})` });
    }
    const refund = this.#put(this.refunds, {
      id: this.#id("re"),
      object: "refund",
      amount,
      currency: intent.currency,
      payment_intent: intentId,
      charge: intent.latest_charge,
      reason: params.reason ?? null,
      metadata: params.metadata ?? {},
      status: "succeeded",
      created: this.now,
    });
    this.#emit("refund.created", refund);
    return refund;
  }

  #prorationLines(subscription: Obj, price: Obj, at: number) {
    const item = this.#item(subscription);
    const start = item.current_period_start as number;
    const end = item.current_period_end as number;
    const share = (amount: number) => Math.round((amount * (end - at)) / (end - start));
    const old = item.price as Obj;
    return [
      { price: old, amount: -share(old.unit_amount as number), start: at, end, proration: true },
      { price, amount: share(price.unit_amount as number), start: at, end, proration: true },
    ];
  }

  #preview(params: Json): Json {
    const subscription = this.#get(this.subscriptions, "subscription", params.subscription as string);
    const details = params.subscription_details as { items?: { id?: string; price?: string }[]; proration_date?: string } | undefined;
    const priceId = details?.items?.[0]?.price;
    const price = priceId ? this.prices.get(priceId) : undefined;
    if (!price) throw missing("price", priceId ?? "");
    const lines = this.#prorationLines(subscription, price, int(details?.proration_date) ?? this.now);
    return this.#invoiceObject(subscription, lines, "subscription_update", "draft", null);
  }

  #createSchedule(params: Json): Obj {
    const subscription = this.#get(this.subscriptions, "subscription", params.from_subscription as string);
    if (subscription.schedule) throw invalid(`You cannot migrate a subscription that is already attached to a schedule: \`${subscription.schedule}\`.`, "from_subscription");
    const item = this.#item(subscription);
    const schedule = this.#put(this.schedules, {
      id: this.#id("sub_sched"),
      object: "subscription_schedule",
      subscription: subscription.id,
      customer: subscription.customer,
      status: "active",
      end_behavior: "release",
      metadata: {},
      current_phase: { start_date: item.current_period_start, end_date: item.current_period_end },
      phases: [{ start_date: item.current_period_start, end_date: item.current_period_end, items: [{ price: (item.price as Obj).id, quantity: 1 }], metadata: {} }],
      released_subscription: null,
      created: this.now,
    });
    subscription.schedule = schedule.id;
    return schedule;
  }

  #updateSchedule(id: string, params: Json): Obj {
    const schedule = this.#get(this.schedules, "subscription_schedule", id);
    if (schedule.status !== "active" && schedule.status !== "not_started") throw invalid(`You cannot update a subscription schedule that is currently in the \`${schedule.status}\` status.`);
    if (params.end_behavior) schedule.end_behavior = params.end_behavior;
    if (params.metadata) schedule.metadata = { ...(schedule.metadata as Json), ...(params.metadata as Json) };
    if (params.phases) {
      const phases = (params.phases as Json[]).map((phase, index, all) => {
        const start = int(phase.start_date) ?? (index > 0 ? int(all[index - 1]!.end_date) : undefined);
        if (start === undefined) throw invalid("The first phase needs a start_date.", `phases[${index}][start_date]`);
        const duration = phase.duration as { interval: string; interval_count: string } | undefined;
        const end = int(phase.end_date) ?? (duration ? addInterval(start, duration.interval, Number(duration.interval_count ?? 1)) : undefined);
        if (end === undefined || end <= start) throw invalid("Each phase needs an end after its start.", `phases[${index}][end_date]`);
        const items = phase.items as { price: string }[];
        for (const item of items) if (!this.prices.has(item.price)) throw missing("price", item.price);
        return { start_date: start, end_date: end, items: items.map((item) => ({ price: item.price, quantity: 1 })), metadata: phase.metadata ?? {} };
      });
      schedule.phases = phases;
    }
    return schedule;
  }

  #release(schedule: Obj): Obj {
    const subscription = this.subscriptions.get(schedule.subscription as string);
    Object.assign(schedule, { status: "released", released_subscription: schedule.subscription, released_at: this.now });
    if (subscription?.schedule === schedule.id) {
      subscription.schedule = null;
      this.#emit("customer.subscription.updated", subscription);
    }
    return schedule;
  }

  /** A finalized invoice, charged at once: paid, or left open when payments fail. */
  #invoiceFor(subscription: Obj, lines: { price: Obj; amount: number; start: number; end: number; proration: boolean }[], reason: string): Obj {
    const total = lines.reduce((sum, line) => sum + line.amount, 0);
    const paid = !this.failPayments || total <= 0;
    const number = `FAKE-${String(++this.#invoiceCount).padStart(4, "0")}`;
    const invoice = this.#invoiceObject(subscription, lines, reason, paid ? "paid" : "open", number) as Obj;
    this.invoices.set(invoice.id, invoice);
    if (paid && total > 0) this.#payInvoice(invoice, total);
    return invoice;
  }

  /** The payment of a paid invoice: a succeeded PaymentIntent and the invoice payment naming it. */
  #payInvoice(invoice: Obj, amount: number): void {
    const intent = this.#put(this.paymentIntents, {
      id: this.#id("pi"),
      object: "payment_intent",
      amount,
      amount_received: amount,
      currency: "usd",
      customer: invoice.customer,
      latest_charge: this.#id("ch"),
      status: "succeeded",
      created: this.now,
    });
    this.#put(this.invoicePayments, {
      id: this.#id("inpay"),
      object: "invoice_payment",
      invoice: invoice.id,
      amount_paid: amount,
      amount_requested: amount,
      currency: "usd",
      is_default: true,
      payment: { type: "payment_intent", payment_intent: intent.id },
      status: "paid",
      status_transitions: { canceled_at: null, paid_at: this.now },
      created: this.now,
      livemode: false,
    });
  }

  #invoiceObject(subscription: Obj, lines: { price: Obj; amount: number; start: number; end: number; proration: boolean }[], reason: string, status: string, number: string | null): Json {
    const id = number ? this.#id("in") : undefined;
    const total = lines.reduce((sum, line) => sum + line.amount, 0);
    return {
      ...(id ? { id } : {}),
      object: "invoice",
      customer: subscription.customer,
      number,
      status,
      billing_reason: reason,
      currency: "usd",
      total,
      subtotal: total,
      amount_due: Math.max(total, 0),
      amount_paid: status === "paid" ? Math.max(total, 0) : 0,
      created: this.now,
      period_start: Math.min(...lines.map((l) => l.start)),
      period_end: Math.max(...lines.map((l) => l.end)),
      status_transitions: { finalized_at: number ? this.now : null, paid_at: status === "paid" ? this.now : null },
      invoice_pdf: id ? `${this.url}/invoice/${id}/pdf` : null,
      hosted_invoice_url: id ? `${this.url}/invoice/${id}` : null,
      parent: { type: "subscription_details", subscription_details: { subscription: subscription.id, metadata: subscription.metadata ?? {} }, quote_details: null },
      lines: list(
        lines.map((line) => ({
          id: this.#id("il"),
          object: "line_item",
          amount: line.amount,
          currency: "usd",
          period: { start: line.start, end: line.end },
          pricing: { type: "price_details", price_details: { price: line.price.id, product: line.price.product }, unit_amount_decimal: String(line.price.unit_amount) },
          parent: {
            type: "subscription_item_details",
            subscription_item_details: { subscription: subscription.id, subscription_item: this.#item(subscription).id, proration: line.proration, proration_details: null, invoice_item: null },
            invoice_item_details: null,
          },
          quantity: 1,
        })),
        "/v1/invoices/lines",
      ),
      livemode: false,
    };
  }

  #emit(type: string, object: Obj): void {
    const event: FakeEvent = {
      id: `evt_${randomBytes(12).toString("base64url").replace(/[-_]/g, "x")}`,
      object: "event",
      type,
      created: this.now,
      api_version: "2026-10-28.endive",
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      data: { object: structuredClone(object) },
    };
    this.events.push(event);
    this.queue.push(event);
  }
}

/** The same day of the next month or year (clamped to the month's end), as Stripe bills. */
function addInterval(at: number, interval: string, count = 1): number {
  const date = new Date(at * 1000);
  const day = date.getUTCDate();
  date.setUTCDate(1);
  if (interval === "year") date.setUTCFullYear(date.getUTCFullYear() + count);
  else date.setUTCMonth(date.getUTCMonth() + count);
  const last = new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 0)).getUTCDate();
  date.setUTCDate(Math.min(day, last));
  return Math.floor(date.getTime() / 1000);
}

export async function startFakeStripe(options: FakeStripeOptions = {}): Promise<FakeStripe> {
  return new FakeStripe(options).start();
}
