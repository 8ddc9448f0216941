/**
 * Loudness of the offline voices. Flite's speakers come out at very different levels (kal16, under
 * `shimmer`, about 14 dB below slt, under `alloy`), so every sentence is scaled to one RMS before it
 * is encoded. The gain stops where the sentence's loudest sample would pass the peak ceiling (never
 * a clipped sample) and at `MAX_GAIN` (a near-silent piece is not raised into audible noise).
 */

/** The RMS each sentence is brought to: −21 dBFS, ordinary speech level with room for its peaks. */
export const TARGET_RMS_DBFS = -21;
/** No sample is scaled past −1 dBFS: room for the MP3 encoder's overshoot. */
export const PEAK_CEILING_DBFS = -1;
/** At most +20 dB. */
export const MAX_GAIN = 10;

const FULL_SCALE = 32768;
const fromDb = (db: number) => 10 ** (db / 20);

/** RMS of 16-bit PCM, as a fraction of full scale (0 for no samples). */
export function rmsOf(pcm: Int16Array): number {
  if (pcm.length === 0) return 0;
  let sum = 0;
  for (const sample of pcm) sum += sample * sample;
  return Math.sqrt(sum / pcm.length) / FULL_SCALE;
}

/** The gain that brings `pcm` to the target RMS, within the peak ceiling and `MAX_GAIN`; 1 for silence. */
export function loudnessGain(pcm: Int16Array): number {
  const rms = rmsOf(pcm);
  if (rms === 0) return 1;
  let peak = 0;
  for (const sample of pcm) peak = Math.max(peak, Math.abs(sample));
  const byRms = fromDb(TARGET_RMS_DBFS) / rms;
  const byPeak = (fromDb(PEAK_CEILING_DBFS) * FULL_SCALE) / peak;
  return Math.min(byRms, byPeak, MAX_GAIN);
}

/** `pcm` scaled to the target loudness (a new array; the input is left as it was). */
export function normalizeLoudness(pcm: Int16Array): Int16Array {
  const gain = loudnessGain(pcm);
  if (gain === 1) return pcm;
  const out = new Int16Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = Math.max(-FULL_SCALE, Math.min(FULL_SCALE - 1, Math.round(pcm[i]! * gain)));
  return out;
}
