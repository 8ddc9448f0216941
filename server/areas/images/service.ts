import { v7 as uuidv7 } from "uuid";
import type { components } from "../../../generated/openapi.d.ts";
import { notFound, providerFailure } from "../../toolkit/http/error-catalogue.ts";
import type { ImageRequest } from "../../toolkit/providers/images/types.ts";
import type { Services } from "../../toolkit/services.ts";
import { blobKey, FILES_PATH, newFileName } from "./files.ts";
import { deleteImageRow, fileNamesOfUsers, insertImage, type ImageRow } from "./store.ts";

type ImageGenerate = components["schemas"]["ImageGenerate"];

/**
 * Draws an image with the configured provider, keeps the PNG in the blob store under a random
 * name and records it for the user (the export lists it, the purge deletes it).
 */
export async function createImage(
  services: Services,
  userId: string,
  request: ImageRequest,
  personaId: string | null = null,
): Promise<ImageRow> {
  const { images, blobs } = services.providers;
  const image = await images.generate(request);
  const fileName = newFileName();
  await blobs.put(blobKey(fileName), { bytes: image.png, contentType: "image/png" });
  try {
    return await insertImage(services.db.knex, {
      id: uuidv7(),
      user_id: userId,
      persona_id: personaId,
      file_name: fileName,
      // The path: the link is made absolute when read (server/toolkit/links.ts).
      url: `${FILES_PATH}/${fileName}`,
      width: image.width,
      height: image.height,
      style: request.style,
      aspect_ratio: request.aspectRatio,
      prompt: request.prompt,
      provider: images.name,
      created_at: services.now(),
    });
  } catch (error) {
    await blobs.delete(blobKey(fileName)).catch(() => undefined);
    throw error;
  }
}

/** POST /v1/images/generate. */
export async function generateImage(services: Services, userId: string, input: ImageGenerate, signal?: AbortSignal): Promise<ImageRow> {
  try {
    return await createImage(services, userId, { prompt: input.prompt, style: input.style ?? "avatar", aspectRatio: input.aspect_ratio ?? "1:1", signal });
  } catch (error) {
    throw providerFailure(error);
  }
}

/** An image nobody will use (an automatic avatar the owner replaced meanwhile): its file and its row. */
export async function discardImage(services: Services, image: ImageRow): Promise<void> {
  await deleteImageRow(services.db.knex, image.id);
  await services.providers.blobs.delete(blobKey(image.file_name));
}

/** The PNG behind a link; 404 when there is none (never made, or purged), 502 when the blob store fails. */
export async function imageFile(services: Services, fileName: string): Promise<Uint8Array> {
  const blob = await services.providers.blobs.get(blobKey(fileName)).catch((error: unknown) => {
    throw providerFailure(error);
  });
  if (!blob) throw notFound("Image");
  return blob.bytes;
}

/**
 * Deletes the files of the accounts the purge is about to remove; their rows go with the users
 * (ON DELETE CASCADE). A file that fails to delete is logged and left: the account still goes.
 */
export async function deleteImagesOfUsers(services: Services, userIds: readonly string[]): Promise<number> {
  const names = await fileNamesOfUsers(services.db.knex, userIds);
  let deleted = 0;
  for (const name of names) {
    try {
      await services.providers.blobs.delete(blobKey(name));
      deleted++;
    } catch (error) {
      services.log.warn({ err: error, file: name }, "could not delete a purged account's image");
    }
  }
  return deleted;
}
