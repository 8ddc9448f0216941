import type { Child } from "./processes.ts";

/**
 * The child processes of one bench run: stopped in reverse order on `stopAll()` (idempotent), and
 * on SIGINT/SIGTERM, so an interrupted bench leaves nothing running.
 */
export function childGroup(): { add: (child: Child) => Child; stopAll: () => Promise<void>; dump: () => void } {
  const children: Child[] = [];
  let stopping: Promise<void> | undefined;
  const stopAll = () =>
    (stopping ??= (async () => {
      for (const child of children.splice(0).reverse()) {
        const how = await child.stop();
        console.log(`stopped ${child.name} (SIGTERM): ${how}`);
      }
    })());
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: stopping child processes`);
      void stopAll().finally(() => process.exit(130));
    });
  }
  return {
    add: (child) => (children.push(child), child),
    stopAll,
    dump: () => {
      for (const child of children) {
        const output = child.output().trim();
        if (output) console.error(`--- ${child.name} output ---\n${output.slice(-4000)}`);
      }
    },
  };
}
