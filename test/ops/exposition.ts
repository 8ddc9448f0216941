// Reads Prometheus's text exposition format (what /metrics answers) into samples, for the tests.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const match = LINE.exec(line);
    if (!match) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, name, value] of (match[2] ?? "").matchAll(LABEL)) labels[name!] = value!.replace(/\\(.)/g, (_all, char: string) => (char === "n" ? "\n" : char));
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

/** The metric families the exposition declares (its `# TYPE` lines), by name. */
export function families(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((match) => [match[1]!, match[2]!]));
}

/** The samples named `name` whose labels include `labels`. */
export function select(samples: Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  return samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
}

/** The sum of the samples named `name` whose labels include `labels` (0 when none). */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return select(samples, name, labels).reduce((sum, sample) => sum + sample.value, 0);
}
