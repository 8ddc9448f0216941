import { describe, expect, it } from "vitest";
import { loudnessGain, MAX_GAIN, normalizeLoudness, PEAK_CEILING_DBFS, rmsOf, TARGET_RMS_DBFS } from "../../server/toolkit/providers/speech/loudness.ts";

// The offline voices' loudness normalizer (issue 34, item 11): every sentence is scaled to one RMS
// before it is MP3-encoded, never past the peak ceiling and never by more than MAX_GAIN.
const db = (fraction: number) => 20 * Math.log10(fraction);
const peakOf = (pcm: Int16Array) => pcm.reduce((peak, sample) => Math.max(peak, Math.abs(sample)), 0) / 32768;

/** A 16 kHz sine of `amplitude` (fraction of full scale), with `bursts` loud clicks of `burst` on top. */
function sine(amplitude: number, seconds = 0.5, burst = 0): Int16Array {
  const pcm = new Int16Array(Math.round(16000 * seconds));
  for (let i = 0; i < pcm.length; i++) pcm[i] = Math.round(amplitude * 32767 * Math.sin((2 * Math.PI * 220 * i) / 16000));
  if (burst > 0) for (let i = 0; i < pcm.length; i += 4000) pcm[i] = Math.round(burst * 32767);
  return pcm;
}

describe("offline voice loudness", () => {
  it("raises a quiet sentence and lowers a loud one to the target RMS", () => {
    for (const amplitude of [0.02, 0.1, 0.5]) {
      const out = normalizeLoudness(sine(amplitude));
      expect(db(rmsOf(out))).toBeCloseTo(TARGET_RMS_DBFS, 1);
      expect(db(peakOf(out))).toBeLessThanOrEqual(PEAK_CEILING_DBFS + 0.01);
    }
  });

  it("stops at the peak ceiling rather than clip a sentence whose peaks are far above its RMS", () => {
    // A quiet tone with full-scale clicks: the RMS target would push the clicks past full scale.
    const input = sine(0.01, 0.5, 0.5);
    const gain = loudnessGain(input);
    expect(gain).toBeLessThan(10 ** (TARGET_RMS_DBFS / 20) / rmsOf(input));
    const out = normalizeLoudness(input);
    expect(db(peakOf(out))).toBeCloseTo(PEAK_CEILING_DBFS, 1);
    expect(out.some((sample) => sample === 32767 || sample === -32768)).toBe(false);
  });

  it("raises a near-silent piece by at most MAX_GAIN, leaves silence as it is and never changes its input", () => {
    const faint = sine(0.0005);
    const copy = Int16Array.from(faint);
    expect(loudnessGain(faint)).toBe(MAX_GAIN);
    expect(rmsOf(normalizeLoudness(faint))).toBeCloseTo(rmsOf(faint) * MAX_GAIN, 4);
    expect(faint).toEqual(copy);
    const silence = new Int16Array(1600);
    expect(normalizeLoudness(silence)).toBe(silence);
    expect(normalizeLoudness(new Int16Array(0))).toHaveLength(0);
  });
});
