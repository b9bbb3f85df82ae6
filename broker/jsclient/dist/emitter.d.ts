/** Listener signatures by event name. */
export type EventMap = {
    [event: string]: (...args: any[]) => void;
};
/**
 * Typed listeners. A listener that throws does not stop the others: the
 * exception is reported to `queueMicrotask` (an uncaught error, as a DOM
 * listener's would be) so a bad listener cannot wedge the client's reader.
 */
export declare class Emitter<E extends EventMap> {
    #private;
    /** Adds a listener; returns a function that removes it. */
    on<K extends keyof E>(event: K, listener: E[K]): () => void;
    /** Adds a listener that runs once. */
    once<K extends keyof E>(event: K, listener: E[K]): () => void;
    /** Removes a listener. */
    off<K extends keyof E>(event: K, listener: E[K]): void;
    /** Whether any listener is registered for `event`. */
    protected listens(event: keyof E): boolean;
    protected emit<K extends keyof E>(event: K, ...args: Parameters<E[K]>): void;
}
