/**
 * Who answers a room message. Named personas (`@name`, case-insensitive) answer in the order they
 * are named; when none is named, the one persona most relevant to the message answers, ties going
 * to the persona that spoke least recently (never before counts as longest ago), then to the
 * room's order. At most `MAX_REPLIES` personas answer one message, so personas never chain.
 */

export const MAX_REPLIES = 3;

export interface Candidate {
  persona_id: string;
  name: string;
  description: string;
}

/** The personas the message names with `@name`, in mention order, without repeats. */
export function mentioned<P extends Candidate>(content: string, personas: readonly P[]): P[] {
  const text = content.toLocaleLowerCase();
  const named: P[] = [];
  for (let at = text.indexOf("@"); at !== -1; at = text.indexOf("@", at + 1)) {
    // The longest name that fits here: "@Nova Prime" names Nova Prime, not Nova.
    let best: P | undefined;
    for (const persona of personas) {
      const name = persona.name.toLocaleLowerCase();
      if (!text.startsWith(name, at + 1) || !endsWord(text, at + 1 + name.length)) continue;
      if (!best || name.length > best.name.length) best = persona;
    }
    if (best && !named.includes(best)) named.push(best);
  }
  return named.slice(0, MAX_REPLIES);
}

/** The persona whose name and description share the most words with the message. */
export function mostRelevant<P extends Candidate>(content: string, personas: readonly P[], lastSpoke: ReadonlyMap<string, Date>): P | undefined {
  const words = new Set(wordsOf(content));
  let best: { persona: P; score: number; spoke: number } | undefined;
  for (const persona of personas) {
    const own = new Set(wordsOf(`${persona.name} ${persona.description}`));
    const score = [...words].filter((word) => own.has(word)).length;
    const spoke = lastSpoke.get(persona.persona_id)?.getTime() ?? -Infinity;
    if (!best || score > best.score || (score === best.score && spoke < best.spoke)) best = { persona, score, spoke };
  }
  return best?.persona;
}

function endsWord(text: string, at: number): boolean {
  return at >= text.length || !/[\p{L}\p{N}_]/u.test(text[at]!);
}

// Words too common to say what a message is about.
const STOP = new Set(["the", "and", "for", "you", "are", "what", "who", "how", "why", "with", "this", "that", "your", "have", "was", "but", "not", "can", "does", "about", "from", "will", "tell", "please"]);

function wordsOf(text: string): string[] {
  return text
    .toLocaleLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length >= 3 && !STOP.has(word));
}
