import { LOCAL_EMBEDDINGS_MODEL } from "../../config.ts";
import { EMBEDDING_DIMENSIONS, type EmbeddingResult, type EmbeddingsProvider } from "./types.ts";

// Words that carry no subject: left out so that two texts are close because of what they are about.
const STOPWORDS = new Set(
  ("a about above after again against all am an and any are as at be because been before being below between both but by can " +
    "could did do does doing down during each few for from further had has have having he her here hers herself him himself his " +
    "how i if in into is it its itself just me more most my myself no nor not now of off on once only or other our ours ourselves " +
    "out over own same she should so some such than that the their theirs them themselves then there these they this those through " +
    "to too under until up very was we were what when where which while who whom why will with would you your yours yourself " +
    "yourselves also may might must shall us").split(" "),
);

const BIGRAM_WEIGHT = 0.5;

/** Lower-cased letter-or-digit runs, without a possessive `'s`. */
function words(text: string): string[] {
  return (text.toLowerCase().normalize("NFKC").match(/[\p{L}\p{N}]+(?:['’][\p{L}]+)?/gu) ?? []).map((word) => word.replace(/['’]s$/u, "").replace(/['’]/gu, ""));
}

/**
 * A light suffix stemmer (plurals, -ing, -ed, -ly): enough that "planets" meets "planet" and
 * "orbiting" meets "orbit". It only has to be consistent, since documents and queries share it.
 */
export function stem(word: string): string {
  if (word.length <= 3 || /\d/.test(word)) return word;
  let w = word;
  if (w.endsWith("ies") && w.length > 4) w = `${w.slice(0, -3)}y`;
  else if (/(?:ss|us|is)$/.test(w)) return w;
  else if (/(?:sses|xes|zes|ches|shes)$/.test(w)) w = w.slice(0, -2);
  else if (w.endsWith("s")) w = w.slice(0, -1);
  if (w.endsWith("ing") && w.length > 5) w = w.slice(0, -3);
  else if (w.endsWith("ed") && w.length > 4) w = w.slice(0, -2);
  else if (w.endsWith("ly") && w.length > 4) w = w.slice(0, -2);
  // "running" -> "runn" -> "run"; "stopped" -> "stopp" -> "stop".
  if (/([b-df-hj-np-tv-z])\1$/.test(w) && !/(?:ll|ss|zz)$/.test(w)) w = w.slice(0, -1);
  return w;
}

/** 32-bit FNV-1a over the UTF-16 code units. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The weighted features of a text: stemmed content-word unigrams and adjacent-pair bigrams. */
function features(text: string): Map<string, number> {
  const all = words(text);
  let kept = all.filter((word) => !STOPWORDS.has(word));
  // A text of stopwords only ("who are you?") still deserves a vector of its own.
  if (kept.length === 0) kept = all;
  const terms = kept.map(stem);
  const counts = new Map<string, number>();
  const add = (feature: string, weight: number) => counts.set(feature, (counts.get(feature) ?? 0) + weight);
  for (let i = 0; i < terms.length; i++) {
    add(`u:${terms[i]}`, 1);
    if (i > 0) add(`b:${terms[i - 1]} ${terms[i]}`, BIGRAM_WEIGHT);
  }
  return counts;
}

/**
 * The offline embedding: signed feature hashing of the features into 1536 dimensions, with
 * sublinear term frequency (1 + ln tf) and L2 normalisation, so cosine similarity is a weighted
 * overlap of vocabulary. Deterministic, no model files. An empty text gets a fixed unit vector
 * (a zero vector has no cosine distance).
 */
export function lexicalEmbedding(text: string): number[] {
  const vector = new Array<number>(EMBEDDING_DIMENSIONS).fill(0);
  const counts = features(text);
  if (counts.size === 0) counts.set("empty", 1);
  for (const [feature, count] of counts) {
    const hash = fnv1a(feature);
    // The bucket from the hash, the sign from an independent bit so that collisions cancel on average.
    const sign = fnv1a(`±${feature}`) & 1 ? 1 : -1;
    const weight = count >= 1 ? 1 + Math.log(count) : count;
    vector[hash % EMBEDDING_DIMENSIONS]! += sign * weight;
  }
  let norm = 0;
  for (const value of vector) norm += value * value;
  norm = Math.sqrt(norm);
  if (norm === 0) {
    // Features that cancelled out exactly: fall back to the empty text's vector.
    vector[fnv1a("empty") % EMBEDDING_DIMENSIONS] = 1;
    return vector;
  }
  for (let i = 0; i < vector.length; i++) vector[i]! /= norm;
  return vector;
}

/** The offline default: the hashed lexical embedding, computed in-process. */
export class LocalEmbeddings implements EmbeddingsProvider {
  readonly name = "local";
  readonly model = LOCAL_EMBEDDINGS_MODEL;

  async embed(texts: string[], signal?: AbortSignal): Promise<EmbeddingResult> {
    signal?.throwIfAborted();
    let inputTokens = 0;
    const vectors: number[][] = [];
    for (const text of texts) {
      // Issue 31: a batch of 64 chunks of a document took the event loop for 300+ ms; the loop
      // gets a turn between texts.
      if (vectors.length > 0) await new Promise((resolve) => setImmediate(resolve));
      signal?.throwIfAborted();
      inputTokens += words(text).length;
      vectors.push(lexicalEmbedding(text));
    }
    return { vectors, model: this.model, inputTokens };
  }
}
