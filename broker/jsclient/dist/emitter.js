// A small typed event emitter shared by the host (Node) and the view
// (browser) modules: Node's EventEmitter is not in browsers, and
// EventTarget cannot type its listeners per event.
/**
 * Typed listeners. A listener that throws does not stop the others: the
 * exception is reported to `queueMicrotask` (an uncaught error, as a DOM
 * listener's would be) so a bad listener cannot wedge the client's reader.
 */
export class Emitter {
    #listeners = new Map();
    /** Adds a listener; returns a function that removes it. */
    on(event, listener) {
        let set = this.#listeners.get(event);
        if (!set) {
            set = new Set();
            this.#listeners.set(event, set);
        }
        set.add(listener);
        return () => this.off(event, listener);
    }
    /** Adds a listener that runs once. */
    once(event, listener) {
        const off = this.on(event, ((...args) => {
            off();
            listener(...args);
        }));
        return off;
    }
    /** Removes a listener. */
    off(event, listener) {
        this.#listeners.get(event)?.delete(listener);
    }
    /** Whether any listener is registered for `event`. */
    listens(event) {
        return (this.#listeners.get(event)?.size ?? 0) > 0;
    }
    emit(event, ...args) {
        const set = this.#listeners.get(event);
        if (!set)
            return;
        for (const l of [...set]) {
            try {
                l(...args);
            }
            catch (err) {
                queueMicrotask(() => {
                    throw err;
                });
            }
        }
    }
}
