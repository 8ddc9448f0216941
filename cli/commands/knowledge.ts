import { basename } from "node:path";
import type { Command } from "commander";
import type { PersonaClient, Schemas } from "../../sdk/src/index.ts";
import { contextOf } from "../context.ts";
import { describeError, EXIT, type ExitCode } from "../errors.ts";
import { examples } from "../help.ts";
import { plural, printFields, printPageFooter, printTable } from "../output.ts";
import { nonNegativeInt, positiveInt } from "../parse.ts";
import { resolvePersonaId } from "../resolve.ts";
import { createUploadProgress, type FileProgress } from "../upload-progress.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Outcome =
  | { file: string; document: Schemas["DocumentDetail"] | Schemas["KnowledgeDocument"] }
  | { file: string; error: { code: string; message: string } };

/** Polls a document until it leaves `processing`, or the deadline passes (then it is still processing). */
async function waitUntilProcessed(
  client: PersonaClient,
  personaId: string,
  docId: string,
  progress: FileProgress,
  timeoutMs: number,
): Promise<Schemas["DocumentDetail"]> {
  const started = Date.now();
  for (let delay = 250; ; delay = Math.min(delay * 2, 2000)) {
    const document = await client.knowledge.get(personaId, docId);
    if (document.status !== "processing" || Date.now() - started >= timeoutMs) return document;
    progress.processing(Math.round((Date.now() - started) / 1000));
    await sleep(delay);
  }
}

async function uploadOne(
  client: PersonaClient,
  personaId: string,
  path: string,
  progress: FileProgress,
  options: { wait: boolean; timeoutMs: number },
): Promise<{ outcome: Outcome; exitCode: ExitCode }> {
  const file = basename(path);
  try {
    const created = await client.knowledge.upload(personaId, path);
    progress.uploaded(1);
    const document = options.wait ? await waitUntilProcessed(client, personaId, created.id, progress, options.timeoutMs) : created;
    progress.finished(
      document.status === "ready" ? `ready (${plural(document.chunk_count ?? 0, "chunk")})` : document.status === "failed" ? "failed" : "still processing",
    );
    return { outcome: { file, document }, exitCode: document.status === "failed" ? EXIT.error : EXIT.ok };
  } catch (error) {
    progress.finished("failed");
    const code = (error as { code?: unknown }).code;
    const { message, exitCode } = describeError(error);
    return { outcome: { file, error: { code: typeof code === "string" ? code : "error", message } }, exitCode };
  }
}

export function registerKnowledgeCommands(program: Command): void {
  const group = program
    .command("knowledge")
    .description("Upload documents to a persona's knowledge base, list them and query it")
    .addHelpText(
      "after",
      "\nAccepted files: .txt .md .csv .json .pdf, at most 10 MB each.\n" +
        examples([
          "persona knowledge upload Orion star-atlas.pdf notes.md",
          "persona knowledge list Orion",
          "persona knowledge query Orion 'how far is Betelgeuse' --limit 3",
        ]),
    );

  group
    .command("upload")
    .description("Upload files and wait until each is processed (ready or failed), with a progress bar")
    .argument("<persona>", "persona id or name")
    .argument("<files...>", "files to upload")
    .option("--no-wait", "return once uploaded, without waiting for processing")
    .option("--timeout <seconds>", "longest wait for processing, per file", positiveInt, 300)
    .addHelpText("after", examples(["persona knowledge upload Orion *.md --json", "persona knowledge upload 0193a6c4-… atlas.pdf --no-wait"]))
    .action(async (ref: string, files: string[], options: { wait: boolean; timeout: number }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const personaId = await resolvePersonaId(client, ref);
      const progress = createUploadProgress(true);
      const results: { outcome: Outcome; exitCode: ExitCode }[] = [];
      try {
        // One at a time: uploads count against the plan's document limit in order, and the
        // server processes documents in a queue anyway.
        for (const path of files) {
          results.push(await uploadOne(client, personaId, path, progress.file(basename(path)), { wait: options.wait, timeoutMs: options.timeout * 1000 }));
        }
      } finally {
        progress.stop();
      }
      const outcomes = results.map((r) => r.outcome);
      ctx.out.result({ persona_id: personaId, results: outcomes }, () => {
        for (const outcome of outcomes) {
          if ("error" in outcome) ctx.out.line(`${outcome.file}: upload failed: ${outcome.error.message}`);
          else {
            const d = outcome.document;
            const detail = d.status === "failed" && "error" in d ? `: ${d.error}` : d.status === "ready" ? ` (${plural(d.chunk_count ?? 0, "chunk")})` : "";
            ctx.out.line(`${outcome.file}: ${d.status}${detail}  [${d.id}]`);
          }
        }
      });
      const failed = results.filter((r) => r.exitCode !== EXIT.ok);
      if (failed.length) {
        // One shared cause (e.g. 401 for every file) keeps its own exit code; a mix is a plain error.
        const codes = new Set(failed.map((r) => r.exitCode));
        process.exitCode = failed.length === results.length && codes.size === 1 ? failed[0]!.exitCode : EXIT.error;
        ctx.out.notice(`persona: ${failed.length} of ${results.length} file(s) failed`);
      }
    });

  group
    .command("list")
    .description("List a persona's documents")
    .argument("<persona>", "persona id or name")
    .option("--limit <n>", "page size", positiveInt, 20)
    .option("--offset <n>", "skip this many", nonNegativeInt, 0)
    .addHelpText("after", examples(["persona knowledge list Orion --json"]))
    .action(async (ref: string, options: { limit: number; offset: number }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const page = await client.knowledge.list(await resolvePersonaId(client, ref), options);
      ctx.out.result(page, () => {
        printTable(
          page.data,
          [
            { header: "id", value: (d) => d.id },
            { header: "filename", value: (d) => d.filename, max: 40 },
            { header: "status", value: (d) => d.status },
            { header: "chunks", value: (d) => d.chunk_count },
            { header: "bytes", value: (d) => d.size_bytes },
            { header: "created_at", value: (d) => d.created_at },
          ],
          "(no documents)",
        );
        printPageFooter(page.data.length, page.total, page.offset);
      });
    });

  group
    .command("get")
    .description("Show one document with its processing record")
    .argument("<persona>", "persona id or name")
    .argument("<document_id>", "document id")
    .action(async (ref: string, docId: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const d = await client.knowledge.get(await resolvePersonaId(client, ref), docId);
      ctx.out.result(d, () =>
        printFields([
          ["id", d.id],
          ["filename", d.filename],
          ["status", d.status],
          ["error", d.error],
          ["chunks", d.chunk_count],
          ["bytes", d.size_bytes],
          ["created_at", d.created_at],
          ["processing_ms", d.processing.duration_ms],
        ]),
      );
    });

  group
    .command("delete")
    .description("Delete a document and its chunks")
    .argument("<persona>", "persona id or name")
    .argument("<document_id>", "document id")
    .action(async (ref: string, docId: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const deleted = await client.knowledge.delete(await resolvePersonaId(client, ref), docId);
      ctx.out.result(deleted, () => ctx.out.line(`Deleted document ${docId}.`));
    });

  group
    .command("query")
    .description("Find the chunks most relevant to a text")
    .argument("<persona>", "persona id or name")
    .argument("<query>", "text to match")
    .option("--limit <n>", "most chunks", positiveInt, 5)
    .addHelpText("after", examples(["persona knowledge query Orion 'red giant' --limit 3 --json"]))
    .action(async (ref: string, query: string, options: { limit: number }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const answer = await client.knowledge.query(await resolvePersonaId(client, ref), { query, limit: options.limit });
      ctx.out.result(answer, () => {
        if (answer.results.length === 0) ctx.out.line("(no relevant chunks)");
        for (const r of answer.results) {
          ctx.out.line(`${r.similarity.toFixed(3)}  ${r.filename} #${r.chunk_index}`);
          ctx.out.line(`  ${r.content.replace(/\s+/g, " ").slice(0, 300)}`);
        }
      });
    });
}
