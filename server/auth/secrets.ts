// The installation's secrets live with the database (server/db/instance-secrets.ts): the toolkit's
// secret box needs them too, and the toolkit imports no area.
export { instanceSecret } from "../db/instance-secrets.ts";
