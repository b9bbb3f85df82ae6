// A small typed event emitter shared by the host (Node) and the view
// (browser) modules: Node's EventEmitter is not in browsers, and
// EventTarget cannot type its listeners per event.

/** Listener signatures by event name. */
export type EventMap = { [event: string]: (...args: any[]) => void };

/**
 * Typed listeners. A listener that throws does not stop the others: the
 * exception is reported to `queueMicrotask` (an uncaught error, as a DOM
 * listener's would be) so a bad listener cannot wedge the client's reader.
 */
export class Emitter<E extends EventMap> {
  #listeners = new Map<keyof E, Set<E[keyof E]>>();

  /** Adds a listener; returns a function that removes it. */
  on<K extends keyof E>(event: K, listener: E[K]): () => void {
    let set = this.#listeners.get(event);
    if (!set) {
      set = new Set();
      this.#listeners.set(event, set);
    }
    set.add(listener);
    return () => this.off(event, listener);
  }

  /** Adds a listener that runs once. */
  once<K extends keyof E>(event: K, listener: E[K]): () => void {
    const off = this.on(event, ((...args: Parameters<E[K]>) => {
      off();
      listener(...args);
    }) as E[K]);
    return off;
  }

  /** Removes a listener. */
  off<K extends keyof E>(event: K, listener: E[K]): void {
    this.#listeners.get(event)?.delete(listener);
  }

  /** Whether any listener is registered for `event`. */
  protected listens(event: keyof E): boolean {
    return (this.#listeners.get(event)?.size ?? 0) > 0;
  }

  protected emit<K extends keyof E>(event: K, ...args: Parameters<E[K]>): void {
    const set = this.#listeners.get(event);
    if (!set) return;
    for (const l of [...set]) {
      try {
        l(...args);
      } catch (err) {
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }
}
