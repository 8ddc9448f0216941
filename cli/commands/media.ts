import { writeFile } from "node:fs/promises";
import { Writable } from "node:stream";
import type { Command } from "commander";
import type { Schemas } from "../../sdk/src/index.ts";
import { contextOf } from "../context.ts";
import { enumOption } from "../contract-enums.ts";
import { examples } from "../help.ts";
import { printFields } from "../output.ts";
import { binarySink } from "../sink.ts";

/** Text to speech, speech to text and image generation. */
export function registerMediaCommands(program: Command): void {
  program
    .command("say")
    .description("Speak text as MP3 (streamed as it is synthesised) to stdout or a file")
    .argument("<text>", "what to say (1 to 5,000 characters)")
    .addOption(enumOption("--voice <voice>", "voice", "VoiceId").default("alloy"))
    .option("-o, --output <file>", "write the MP3 here instead of stdout")
    .addHelpText("after", examples(['persona say "Welcome aboard, cadet!" --voice nova > out.mp3', 'persona say "Hello" -o hello.mp3']))
    .action(async (text: string, options: { voice: Schemas["VoiceId"]; output?: string }, command: Command) => {
      const ctx = await contextOf(command);
      const sink = binarySink(options.output, "The audio");
      const stream = await ctx.client().voice.tts({ text, voice_id: options.voice }, { stream: true });
      // stdout must stay open for whatever runs after; a file is closed when the stream ends.
      await stream.pipeTo(Writable.toWeb(sink), { preventClose: sink === process.stdout });
      if (options.output) ctx.out.notice(`Wrote ${options.output}`);
    });

  program
    .command("transcribe")
    .description("Transcribe an mp3, wav, ogg or webm recording (at most 25 MB) and detect its language")
    .argument("<file>", "the recording")
    .addHelpText("after", examples(["persona transcribe question.wav", "persona transcribe memo.webm --json | jq -r .text"]))
    .action(async (file: string, _options: unknown, command: Command) => {
      const ctx = await contextOf(command);
      const heard = await ctx.client().voice.stt(file);
      ctx.out.result(heard, () => {
        ctx.out.line(heard.text);
        ctx.out.notice(`(language ${heard.language}, confidence ${heard.confidence.toFixed(2)})`);
      });
    });

  program
    .command("image")
    .description("Generate an image from a prompt; prints its link, and saves the PNG with -o")
    .argument("<prompt>", "what to draw (3 to 500 characters)")
    .addOption(enumOption("--style <style>", "composition", "ImageStyle").default("avatar"))
    .addOption(enumOption("--aspect <ratio>", "aspect ratio (sets the size)", "ImageAspectRatio").default("1:1"))
    .option("-o, --output <file>", "save the PNG here")
    .addHelpText("after", examples(['persona image "Portrait of a wise owl" -o owl.png', 'persona image "A harbour at dusk" --style banner --aspect 16:9']))
    .action(async (prompt: string, options: { style: Schemas["ImageStyle"]; aspect: Schemas["ImageAspectRatio"]; output?: string }, command: Command) => {
      const ctx = await contextOf(command);
      const client = ctx.client();
      const image = await client.images.generate({ prompt, style: options.style, aspect_ratio: options.aspect });
      if (options.output) await writeFile(options.output, await client.images.download(image.url));
      ctx.out.result({ ...image, ...(options.output ? { file: options.output } : {}) }, () => {
        printFields([
          ["url", image.url],
          ["size", `${image.width}x${image.height}`],
          ...(options.output ? ([["file", options.output]] as [string, unknown][]) : []),
        ]);
      });
    });
}
