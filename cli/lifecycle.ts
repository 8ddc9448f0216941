/**
 * Whether the process should end once its command's action has returned. One-shot commands end
 * at once, even if a library left a timer or a keep-alive socket behind (fetch's pooled keep-alive
 * connections would otherwise hold the process for seconds); serve and worker keep running until a
 * signal.
 */
let keepAlive = false;

export function keepProcessAlive(): void {
  keepAlive = true;
}

/** Ends a one-shot command's process once stdout has flushed. */
export function exitWhenDone(code: number): void {
  if (keepAlive) return;
  process.stdout.write("", () => process.exit(code));
}
