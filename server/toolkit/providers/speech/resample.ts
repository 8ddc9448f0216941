/**
 * Raises (factor > 1) or lowers the pitch of 16-bit PCM by reading it faster or slower, with
 * linear interpolation; the result is shorter or longer by the same factor.
 */
export function pitchShift(pcm: Int16Array, factor: number): Int16Array {
  if (factor === 1 || pcm.length === 0) return pcm;
  const length = Math.max(1, Math.floor(pcm.length / factor));
  const out = new Int16Array(length);
  for (let i = 0; i < length; i++) {
    const position = i * factor;
    const index = Math.floor(position);
    const next = Math.min(index + 1, pcm.length - 1);
    const fraction = position - index;
    out[i] = Math.round(pcm[index]! * (1 - fraction) + pcm[next]! * fraction);
  }
  return out;
}
