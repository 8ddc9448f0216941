// Prints the README's settings table from server/toolkit/config.ts (`npm run -s settings-table`).
import { settings } from "../server/toolkit/config.ts";

const rows = Object.entries(settings).map(([name, { schema, doc }]) => {
  const fallback = (schema as { def?: { defaultValue?: unknown } }).def?.defaultValue;
  const shown = fallback === undefined ? "" : `\`${String(fallback)}\``;
  return `| \`${name}\` | ${shown} | ${doc} |`;
});
process.stdout.write(["| setting | default | what it does |", "|---|---|---|", ...rows].join("\n") + "\n");
