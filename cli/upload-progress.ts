import cliProgress from "cli-progress";

/**
 * One bar per file on stderr: the first half is the upload, the second half processing on the
 * server (chunking and embedding report no finer progress than processing/ready/failed, so that
 * half moves only when the document is done). Without a terminal nothing is drawn; the command
 * prints its summary instead.
 */
export interface FileProgress {
  uploaded: (fraction: number) => void;
  processing: (seconds: number) => void;
  finished: (stage: string) => void;
}

export interface UploadProgress {
  file: (name: string) => FileProgress;
  stop: () => void;
}

export function createUploadProgress(enabled: boolean): UploadProgress {
  if (!enabled || !process.stderr.isTTY) {
    const none: FileProgress = { uploaded: () => undefined, processing: () => undefined, finished: () => undefined };
    return { file: () => none, stop: () => undefined };
  }
  const bars = new cliProgress.MultiBar(
    {
      format: " {name} |{bar}| {percentage}% {stage}",
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
      autopadding: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const width = 28;
  return {
    file: (name) => {
      const label = name.length > width ? `…${name.slice(-(width - 1))}` : name.padEnd(width);
      const bar = bars.create(100, 0, { name: label, stage: "uploading" });
      return {
        uploaded: (fraction) => bar.update(Math.round(Math.min(1, fraction) * 50), { stage: fraction >= 1 ? "processing" : "uploading" }),
        processing: (seconds) => bar.update(50, { stage: `processing (${seconds}s)` }),
        finished: (stage) => bar.update(100, { stage }),
      };
    },
    stop: () => bars.stop(),
  };
}
