// What the SDK writes by hand: the classes of sdk/src/resources/*.ts that extend a generated class
// (`class Personas extends GeneratedPersonas`), with the members each declares. A member declared by
// hand (a method, or a sub-resource's property) is left out of the generated class, so the hand-written
// one is the only definition: the generator reads this, the hand-written files never list anything.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import ts from "typescript";

export interface HandWrittenClass {
  /** The class's name (`Personas`). */
  name: string;
  /** The generated class it extends (`GeneratedPersonas`). */
  extends: string;
  /** Its file, relative to the repository (`sdk/src/resources/personas.ts`). */
  file: string;
  /** Its public instance members (methods, properties, accessors), in source order. */
  members: string[];
}

/** The hand-written classes of `dir` that extend a class whose name starts with `Generated`, by that class's name. */
export function handWrittenClasses(root: string, dir: string): Map<string, HandWrittenClass> {
  const found = new Map<string, HandWrittenClass>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith(".ts")).sort()) {
    const path = join(dir, file);
    const source = ts.createSourceFile(path, readFileSync(path, "utf8"), ts.ScriptTarget.Latest, true);
    for (const statement of source.statements) {
      if (!ts.isClassDeclaration(statement) || !statement.name) continue;
      const base = statement.heritageClauses
        ?.find((clause) => clause.token === ts.SyntaxKind.ExtendsKeyword)
        ?.types[0]?.expression;
      if (!base || !ts.isIdentifier(base) || !base.text.startsWith("Generated")) continue;
      const previous = found.get(base.text);
      if (previous) throw new Error(`${relative(root, path)}: ${statement.name.text} and ${previous.name} (${previous.file}) both extend ${base.text}`);
      found.set(base.text, { name: statement.name.text, extends: base.text, file: relative(root, path), members: publicMembers(statement) });
    }
  }
  return found;
}

function publicMembers(node: ts.ClassDeclaration): string[] {
  const names: string[] = [];
  for (const member of node.members) {
    if (ts.isConstructorDeclaration(member) || !member.name || !ts.isIdentifier(member.name)) continue;
    const modifiers = ts.canHaveModifiers(member) ? (ts.getModifiers(member) ?? []) : [];
    if (modifiers.some((m) => m.kind === ts.SyntaxKind.StaticKeyword || m.kind === ts.SyntaxKind.PrivateKeyword || m.kind === ts.SyntaxKind.ProtectedKeyword)) continue;
    if (!names.includes(member.name.text)) names.push(member.name.text);
  }
  return names;
}
