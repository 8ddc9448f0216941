import { notLive } from "../http/router.ts";

// Account deletion and data export. Being built.
export const { auth_delete_me, auth_export_data, auth_download_export } = notLive("auth", [
  "auth_delete_me", "auth_export_data", "auth_download_export",
]);
