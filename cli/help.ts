/** The "Examples:" block every command shows after its options in --help. */
export function examples(lines: string[]): string {
  return `\nExamples:\n${lines.map((line) => `  $ ${line}`).join("\n")}\n`;
}
