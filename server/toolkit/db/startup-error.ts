/** A start-up failure with a message for the operator (printed without a stack). */
export class StartupError extends Error {
  override name = "StartupError";
}
