/**
 * The character-card macros the service fills, SillyTavern's subset that cards and lorebooks use:
 * `{{char}}` and the older `<BOT>` and `<CHAR>` are the persona's name, `{{user}}` and the older
 * `<USER>` the name of the person it answers; in any letter case, with nothing inside the braces but
 * the name (`{{ user }}` stays as written, as in SillyTavern). Every other macro (`{{random}}`,
 * `{{time}}`, `{{group}}`, `{{// comment}}`...) stays as written
 * (docs/adr/0285-card-macros-are-filled-when-a-reply-is-built-stored-text-keeps-them.md).
 */
const MACRO = /\{\{(char|user)\}\}|<(user|bot|char)>/gi;
const USER_MACRO = /\{\{user\}\}|<user>/i;

/** Who the macros name: the persona (`char`) and the person it answers (`user`). */
export interface MacroNames {
  char: string;
  user: string;
}

/**
 * `text` with its macros filled, in one pass: a name that itself looks like a macro is put in as
 * written, never filled again. Text without a macro comes back as it is.
 */
export function fillMacros(text: string, names: MacroNames): string {
  if (!text.includes("{{") && !text.includes("<")) return text;
  return text.replace(MACRO, (_match, curly: string | undefined, legacy: string | undefined) => ((curly ?? legacy)!.toLowerCase() === "user" ? names.user : names.char));
}

/** Whether `text` names the user (`{{user}}` or `<USER>`): only then is the user's name needed. */
export function mentionsUser(text: string | null | undefined): boolean {
  return text ? USER_MACRO.test(text) : false;
}
