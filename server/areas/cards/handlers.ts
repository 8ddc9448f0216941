import { missingMultipartField } from "../../toolkit/http/error-catalogue.ts";
import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import { toPersona } from "../personas/index.ts";
import { exportCard, exportCardPng, importCard } from "./service.ts";

const cards_import: Handler<"cards_import"> = async ({ services, principal: { userId }, req }) => {
  const files = (req.files ?? []) as { fieldname: string; buffer: Buffer }[];
  const file = files.find((part) => part.fieldname === "file");
  if (!file) throw missingMultipartField("file");
  return { status: 201, body: toPersona(await importCard(services, userId, file.buffer), userId, services.config) };
};

const cards_export: Handler<"cards_export"> = async ({ services, principal: { userId }, params, query, res }) => {
  const { persona, card } = await exportCard(services, userId, params.id);
  if ((query.format ?? "json") === "json") return { status: 200, body: card };
  const png = await exportCardPng(services, persona, card);
  res.status(200).set({ "content-type": "image/png", "content-length": String(png.byteLength) });
  res.end(png);
  return HANDLED;
};

export const handlers = { cards_import, cards_export } satisfies Partial<HandlerMap>;
