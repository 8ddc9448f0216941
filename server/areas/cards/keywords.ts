// Which of many keywords occur in a text, in one pass over it (Aho-Corasick), for the lorebook
// (issue 31 H2: a substring search per key cost keys x text, 15 s a reply for a hostile card).
// Written here rather than taken from npm: the one well-used package (modern-ahocorasick) matches
// whole grapheme clusters (`e` is not found in `e` + U+0301), where the lorebook's rule is
// `String.prototype.includes`, and it reports every occurrence, which a text of one repeated letter
// against keys of that letter makes text x key length. This one works on UTF-16 code units, as
// `includes` does, and reports each keyword once: building costs the keywords' length (and a sort),
// a search the text's length plus the states.

/** A compiled set of keywords; `found` tells which occur in a text. */
export class KeywordSet {
  /** Keywords, by the id `found` reports. */
  readonly keywords: readonly string[];
  /** States of the automaton (the trie's nodes): its memory grows with this, 22 bytes each. */
  readonly states: number;
  // The trie's edges, grouped by state and sorted by code unit within a state (a binary search
  // finds one): state s's edges are [edgeStart[s], edgeStart[s + 1]).
  readonly #edgeStart: Int32Array;
  readonly #edgeUnit: Uint16Array;
  readonly #edgeTarget: Int32Array;
  // Per state: its failure link (the state of its longest proper suffix), the nearest state on that
  // suffix chain that ends a keyword (0: none), and the keyword it ends itself (-1: none).
  readonly #fail: Int32Array;
  readonly #nextEnd: Int32Array;
  readonly #ends: Int32Array;

  /** `keywords` must be distinct and non-empty. */
  constructor(keywords: readonly string[]) {
    this.keywords = keywords;
    // In sorted order each keyword shares with the one before it exactly the part of its path that
    // already exists, so the trie is built without looking an edge up, each state's children in order.
    const order = keywords.map((_, id) => id).sort((a, b) => (keywords[a]! < keywords[b]! ? -1 : keywords[a]! > keywords[b]! ? 1 : 0));
    const parent: number[] = [-1];
    const unit: number[] = [0];
    const ends: number[] = [-1];
    const path: number[] = [0];
    let previous = "";
    for (const id of order) {
      const keyword = keywords[id]!;
      if (!keyword) throw new RangeError("A keyword may not be empty");
      if (keyword === previous) throw new RangeError(`The keyword ${JSON.stringify(keyword)} is listed twice`);
      let shared = 0;
      while (shared < previous.length && shared < keyword.length && previous.charCodeAt(shared) === keyword.charCodeAt(shared)) shared++;
      for (let depth = shared; depth < keyword.length; depth++) {
        path[depth + 1] = parent.length;
        parent.push(path[depth]!);
        unit.push(keyword.charCodeAt(depth));
        ends.push(-1);
      }
      ends[path[keyword.length]!] = id;
      previous = keyword;
    }
    const states = parent.length;
    // States are numbered in depth-first order, so each state's children come in order of their unit.
    const edgeStart = new Int32Array(states + 1);
    for (let state = 1; state < states; state++) edgeStart[parent[state]! + 1]!++;
    for (let state = 0; state < states; state++) edgeStart[state + 1]! += edgeStart[state]!;
    const edgeUnit = new Uint16Array(states - 1);
    const edgeTarget = new Int32Array(states - 1);
    const filled = edgeStart.slice(0, states);
    for (let state = 1; state < states; state++) {
      const at = filled[parent[state]!]!++;
      edgeUnit[at] = unit[state]!;
      edgeTarget[at] = state;
    }
    this.states = states;
    this.#ends = Int32Array.from(ends);
    this.#edgeStart = edgeStart;
    this.#edgeUnit = edgeUnit;
    this.#edgeTarget = edgeTarget;
    this.#fail = new Int32Array(states);
    this.#nextEnd = new Int32Array(states);
    this.#linkSuffixes();
  }

  /** Failure links and keyword-end links, breadth first: a state's links (shorter suffixes) are set before its children need them. */
  #linkSuffixes(): void {
    const edgeStart = this.#edgeStart;
    const edgeUnit = this.#edgeUnit;
    const edgeTarget = this.#edgeTarget;
    const fail = this.#fail;
    const nextEnd = this.#nextEnd;
    const ends = this.#ends;
    const queue = new Int32Array(this.states);
    let head = 0;
    let tail = 0;
    for (let at = edgeStart[0]!; at < edgeStart[1]!; at++) queue[tail++] = edgeTarget[at]!;
    while (head < tail) {
      const state = queue[head++]!;
      for (let at = edgeStart[state]!; at < edgeStart[state + 1]!; at++) {
        const child = edgeTarget[at]!;
        queue[tail++] = child;
        const suffix = this.#step(fail[state]!, edgeUnit[at]!);
        fail[child] = suffix;
        nextEnd[child] = ends[suffix] !== -1 ? suffix : nextEnd[suffix]!;
      }
    }
  }

  /** The state the trie's edge for `unit` leads to from `state`, or -1. */
  #edge(state: number, unit: number): number {
    let low = this.#edgeStart[state]!;
    let high = this.#edgeStart[state + 1]! - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const found = this.#edgeUnit[middle]!;
      if (found === unit) return this.#edgeTarget[middle]!;
      if (found < unit) low = middle + 1;
      else high = middle - 1;
    }
    return -1;
  }

  /** The state after reading `unit` in `state`, following failure links where the trie has no edge. */
  #step(state: number, unit: number): number {
    for (;;) {
      const next = this.#edge(state, unit);
      if (next !== -1) return next;
      if (state === 0) return 0;
      state = this.#fail[state]!;
    }
  }

  /**
   * Which keywords occur in `text` (`found[id] === 1`), exactly as `text.includes(keyword)` says
   * for each. Each state's chain of keyword ends is walked once a search, however often the text
   * comes back to it.
   */
  found(text: string): Uint8Array {
    const found = new Uint8Array(this.keywords.length);
    const walked = new Uint8Array(this.states);
    let state = 0;
    for (let i = 0; i < text.length; i++) {
      state = this.#step(state, text.charCodeAt(i));
      for (let at = state; at !== 0 && walked[at] === 0; at = this.#nextEnd[at]!) {
        walked[at] = 1;
        const id = this.#ends[at]!;
        if (id !== -1) found[id] = 1;
      }
    }
    return found;
  }
}
