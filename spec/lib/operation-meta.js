// The implementation of `@meta` (operation-meta.tsp): the metadata becomes the operation's
// `x-persona` OpenAPI extension, which scripts/gen-validators.mjs checks and carries into
// generated/operations.json.
import { setExtension } from "@typespec/openapi";

export const $decorators = {
  Persona: {
    meta(context, target, meta) {
      setExtension(context.program, target, "x-persona", meta);
    },
  },
};
