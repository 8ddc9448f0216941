import { responseMeta, type WithResponse } from "./response-meta.ts";

/** A call's outcome once its answer is in and checked: the data and the raw Response. */
export interface Answered<T> {
  data: T;
  response: Response;
}

/**
 * What a helper that sends one request returns: a Promise of its data (await it as before) that
 * also gives the answer's metadata. `.withResponse()` resolves to `{ data, response, requestId,
 * rateLimit }`; it rejects with the same typed error as awaiting the call does. Calling both, or
 * either twice, sends nothing more: the request went out once, when the helper was called.
 *
 * @example
 * const { data: persona, requestId, rateLimit } = await client.personas.get(id).withResponse();
 * console.log(persona.name, requestId, `${rateLimit?.remaining} of ${rateLimit?.limit} left`);
 */
export class APIPromise<T> extends Promise<T> {
  readonly #answered: Promise<Answered<T>>;
  #data: Promise<T> | undefined;

  // Promise's own methods that build a derived promise (e.g. a `then` reached through
  // Promise.prototype) make a plain Promise, not one of these: this constructor takes no executor.
  static override get [Symbol.species](): PromiseConstructor {
    return Promise;
  }

  constructor(answered: Promise<Answered<T>>) {
    // The base promise is a placeholder: then, catch and finally below read `answered` instead.
    super((resolve) => resolve(undefined as T));
    this.#answered = answered;
  }

  /** The data with the raw Response, the request id and the rate-limit state of its answer. */
  withResponse(): Promise<WithResponse<T>> {
    return this.#answered.then(({ data, response }) => ({ data, ...responseMeta(response) }));
  }

  #value(): Promise<T> {
    this.#data ??= this.#answered.then(({ data }) => data);
    return this.#data;
  }

  override then<Result1 = T, Result2 = never>(
    onfulfilled?: ((value: T) => Result1 | PromiseLike<Result1>) | null,
    onrejected?: ((reason: unknown) => Result2 | PromiseLike<Result2>) | null,
  ): Promise<Result1 | Result2> {
    return this.#value().then(onfulfilled, onrejected);
  }

  override catch<Result = never>(onrejected?: ((reason: unknown) => Result | PromiseLike<Result>) | null): Promise<T | Result> {
    return this.#value().catch(onrejected);
  }

  override finally(onfinally?: (() => void) | null): Promise<T> {
    return this.#value().finally(onfinally);
  }
}
