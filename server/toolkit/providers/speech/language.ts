/**
 * Whisper's `verbose_json` names the language in English ("english", "portuguese"); the contract
 * wants an ISO 639 code. The names come from the platform's own language names (Intl.DisplayNames)
 * for every two-letter code, plus the names Whisper spells its own way.
 */
const WHISPER_NAMES: Record<string, string> = {
  burmese: "my", myanmar: "my", castilian: "es", flemish: "nl", valencian: "ca", moldavian: "ro", moldovan: "ro",
  letzeburgesch: "lb", pushto: "ps", panjabi: "pa", sinhalese: "si", haitian: "ht", "haitian creole": "ht",
  nynorsk: "nn", mandarin: "zh", cantonese: "yue", hawaiian: "haw",
};

const ALPHABET = "abcdefghijklmnopqrstuvwxyz";
let byName: Map<string, string> | undefined;

function names(): Map<string, string> {
  if (byName) return byName;
  byName = new Map(Object.entries(WHISPER_NAMES));
  const display = new Intl.DisplayNames(["en"], { type: "language", fallback: "none" });
  for (const a of ALPHABET) {
    for (const b of ALPHABET) {
      const code = a + b;
      const name = display.of(code)?.toLowerCase();
      if (name && !byName.has(name)) byName.set(name, code);
    }
  }
  return byName;
}

/** An ISO 639 code (with a BCP 47 region when given one) for what the recognizer reported; `und` when unknown. */
export function languageCode(reported: string | undefined | null): string {
  const value = (reported ?? "").trim();
  if (/^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(value)) return value;
  if (/^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})*$/.test(value)) {
    const [lang, ...rest] = value.split(/[-_]/);
    return [lang!.toLowerCase(), ...rest].join("-");
  }
  return names().get(value.toLowerCase()) ?? "und";
}
