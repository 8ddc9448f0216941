import { userInfo } from "node:os";
import { Option } from "commander";

// Options of the trust and safety commands, which act on the server's database (docs/adr/0350): who runs them is the
// operator the audit log names. `--as` names them; by default, the system user running the command.

/** `--as <operator>`: the name the audit log records for this action. */
export function operatorOption(): Option {
  return new Option("--as <operator>", "your name in the audit log (default: the system user running the command)");
}

/** `--reason <text>`: why, for the audit log and (for an action on content) its owner. */
export function reasonOption(required = true): Option {
  const option = new Option("--reason <text>", "why: recorded in the audit log and shown to the content's owner");
  return required ? option.makeOptionMandatory() : option;
}

/** The operator and reason of an action, as the safety area takes them. */
export function operatorOf(options: { as?: string; reason?: string }): { operator: string; reason: string } {
  const operator = options.as?.trim() || process.env.USER || userInfo().username;
  return { operator, reason: options.reason?.trim() ?? "" };
}
