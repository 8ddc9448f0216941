import { exportStartedBody, exportSuspendedAccount } from "../auth/index.ts";
import { pageBody, pageWindow } from "../../toolkit/http/paging.ts";
import type { Handler, HandlerMap } from "../../toolkit/http/router.ts";
import { appeal, listOwnActions } from "./actions.ts";
import { changeContentSettings, contentSettings } from "./content-settings.ts";
import { fileReport, getOwnReport, listOwnReports } from "./reports.ts";
import { toAction, toReport } from "./views.ts";

const reports_create: Handler<"reports_create"> = async ({ services, principal, body }) => ({
  status: 201,
  body: toReport(await fileReport(services, principal.userId, body)),
});

const reports_list: Handler<"reports_list"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  return { status: 200, body: pageBody(await listOwnReports(services, principal.userId, query.status, window), window, toReport) };
};

const reports_get: Handler<"reports_get"> = async ({ services, principal, params }) => ({
  status: 200,
  body: toReport(await getOwnReport(services, principal.userId, params.id)),
});

const moderation_actions_list: Handler<"moderation_actions_list"> = async ({ services, principal, query }) => {
  const window = pageWindow(query);
  return { status: 200, body: pageBody(await listOwnActions(services, principal.userId, window), window, toAction) };
};

const moderation_actions_appeal: Handler<"moderation_actions_appeal"> = async ({ services, principal, params, body }) => ({
  status: 200,
  body: toAction(await appeal(services, principal.userId, params.id, body.message)),
});

const content_settings_get: Handler<"content_settings_get"> = async ({ services, principal }) => ({
  status: 200,
  body: await contentSettings(services, principal.userId),
});

const content_settings_update: Handler<"content_settings_update"> = async ({ services, principal, body }) => ({
  status: 200,
  body: await changeContentSettings(services, principal.userId, body.show_mature),
});

const account_suspension_export_data: Handler<"account_suspension_export_data"> = async ({ services, body }) => ({
  status: 200,
  body: exportStartedBody(await exportSuspendedAccount(services, body.email, body.password)),
});

export const handlers = {
  reports_create,
  reports_list,
  reports_get,
  moderation_actions_list,
  moderation_actions_appeal,
  content_settings_get,
  content_settings_update,
  account_suspension_export_data,
} satisfies Partial<HandlerMap>;
