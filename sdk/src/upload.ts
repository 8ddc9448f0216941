/**
 * What an upload accepts: a Blob or File, bytes (a Node Buffer is a Uint8Array), or, in Node only,
 * a filesystem path.
 */
export type Uploadable = Blob | Uint8Array | ArrayBuffer | string;

export interface UploadOptions {
  /** File name sent to the service (it checks the extension); defaults to the File's or path's name. */
  filename?: string;
  /** Content type of the part; defaults to the Blob's type or application/octet-stream. */
  contentType?: string;
}

interface NodeFs {
  readFile(path: string): Promise<Uint8Array>;
}

// A variable specifier keeps bundlers from pulling node:fs into browser builds; the magic comments
// silence webpack and Vite about it. Only the path variant ever loads it.
const fsModule = "node:fs/promises";

async function readPath(path: string): Promise<Uint8Array> {
  let fs: NodeFs;
  try {
    fs = (await import(/* webpackIgnore: true */ /* @vite-ignore */ fsModule)) as NodeFs;
  } catch (error) {
    // A browser or worker: a string would otherwise fail with a module-resolution message that
    // does not say the string was taken for a path.
    throw new TypeError(`A file path (${JSON.stringify(path)}) can be uploaded only in Node.js; pass a Blob, a File or bytes here`, { cause: error });
  }
  return fs.readFile(path);
}

const baseName = (path: string) => path.split(/[\\/]/).pop() || "upload";

/** Turns any Uploadable into a Blob and a file name. */
export async function toBlob(file: Uploadable, options: UploadOptions = {}): Promise<{ blob: Blob; filename: string }> {
  const type = options.contentType;
  if (typeof file === "string") {
    const bytes = await readPath(file);
    return { blob: new Blob([bytes as Uint8Array<ArrayBuffer>], { type: type ?? "" }), filename: options.filename ?? baseName(file) };
  }
  if (file instanceof Blob) {
    const named = (file as Blob & { name?: unknown }).name;
    const blob = type && type !== file.type ? new Blob([file], { type }) : file;
    return { blob, filename: options.filename ?? (typeof named === "string" && named ? named : "upload") };
  }
  return { blob: new Blob([file as Uint8Array<ArrayBuffer>], { type: type ?? "" }), filename: options.filename ?? "upload" };
}

/**
 * The multipart form of an upload: one part named `field` (`file`; `audio` for speech to text) with
 * its file name. The helpers build it themselves; it is exported for multipart calls through `raw`.
 * @example
 * const form = await uploadForm("./notes.md");            // Node: a path
 * const { data, error, response } = await client.raw.POST("/v1/knowledge/{persona_id}/documents", {
 *   params: { path: { persona_id } }, body: form as never, bodySerializer: (body) => body,
 * });
 */
export async function uploadForm(file: Uploadable, options: UploadOptions = {}, field = "file"): Promise<FormData> {
  const { blob, filename } = await toBlob(file, options);
  const form = new FormData();
  form.append(field, blob, filename);
  return form;
}
