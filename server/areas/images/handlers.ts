import { HANDLED, type Handler, type HandlerMap } from "../../toolkit/http/router.ts";
import { FILE_CACHE_CONTROL } from "./files.ts";
import { generateImage, imageFile } from "./service.ts";
import { toImage } from "./views.ts";

/** A client that goes away stops the provider call it was waiting for. */
function abortOnClose(res: { on: (event: "close", listener: () => void) => unknown; writableFinished: boolean }): AbortSignal {
  const controller = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) controller.abort();
  });
  return controller.signal;
}

const images_generate: Handler<"images_generate"> = async ({ services, principal, body, res }) => ({
  status: 200,
  body: toImage(await generateImage(services, principal.userId, body, abortOnClose(res)), services.config),
});

const images_file: Handler<"images_file"> = async ({ services, params, res }) => {
  const bytes = await imageFile(services, params.name);
  res.status(200).set({ "content-type": "image/png", "cache-control": FILE_CACHE_CONTROL, "content-length": String(bytes.byteLength) });
  res.end(bytes);
  return HANDLED;
};

export const handlers = { images_generate, images_file } satisfies Partial<HandlerMap>;
