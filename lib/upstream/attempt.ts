/**
 * One attempt at an upstream request, whoever built it (the upstream client's own POST, or http-proxy
 * for the native route): wait for its reply head within the head timeout, cancel it when the client
 * goes away, and watch the reply body for idle gaps.
 */
import type http from 'node:http';
import type { Socket } from 'node:net';

/**
 * What an attempt listens to for cancellation: the part of `AbortSignal` it uses.
 */
export interface CancelSignal {
  readonly aborted: boolean;
  /**
   * When true, an abort spares an attempt whose request has left whole (the upstream may be running
   * it and will bill it): its reply head is still awaited, so its reply can be read for its usage. An
   * attempt not yet sent whole, and any retry wait, are cancelled as always. Default false.
   */
  readonly sparesSent?: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

/**
 * A {@link CancelSignal} its owner aborts: what an AbortController gives, for the one or two listeners
 * an exchange attaches (an attempt's, a retry wait's). Kept for speed: it is made for every upstream
 * request, and an AbortController with its AbortSignal and EventTarget costs about 5 µs more
 * (bench/RESULTS.md, "Mechanisms kept for speed").
 */
export class Cancellation implements CancelSignal {
  aborted = false;
  sparesSent = false;
  private listeners: Array<() => void> = [];

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.listeners.indexOf(listener);
    if (at !== -1) this.listeners.splice(at, 1);
  }

  /** Abort once: every listener still attached is called, in the order attached, and removed. */
  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    const listeners = this.listeners;
    this.listeners = [];
    for (const listener of listeners) listener();
  }
}

export interface UpstreamReply {
  response: http.IncomingMessage;
  /** Destroys the request and its socket (client went away, stream idle). */
  abort(): void;
  /** Id of the upstream target that sent the reply (set by the client's retry loop). */
  target?: string;
  /** The cloud of the target that sent it (providers/provider.ts); absent for the first-party API. */
  provider?: 'bedrock' | 'vertex' | 'foundry';
  /** What was removed from the request for that target (beta flags, body fields): `x-gateway-dropped-params`. */
  dropped?: readonly string[];
}

/** Why an attempt brought no reply head: its socket error, and whether the head timeout caused it. */
export interface AttemptFailure {
  error: NodeJS.ErrnoException;
  timedOut: boolean;
  /** The request went out on a kept-alive socket (a reset there means the upstream closed it while idle). */
  reusedSocket: boolean;
  /**
   * The request's last byte had been handed to its connected socket (`writableFinished`): the upstream
   * may have it whole and be running it. False when the connection, its TLS handshake or the write
   * failed first: the upstream cannot have started a request it never received whole.
   */
  requestSent: boolean;
  /** Milliseconds from the request's last byte leaving to the failure; absent when it never left whole. */
  sinceSentMs?: number;
}

/** What one attempt came back with: a reply head, or a failure. */
export type AttemptOutcome = { status: number; headers: http.IncomingHttpHeaders } | AttemptFailure;

/** The error a reply body is destroyed with when it stays idle too long (`code` `UPSTREAM_IDLE`). */
export function createIdleError(idleMs: number): NodeJS.ErrnoException {
  const error: NodeJS.ErrnoException = new Error(`the upstream sent nothing for ${idleMs} ms`);
  error.code = 'UPSTREAM_IDLE';
  return error;
}

/** Sockets a target's agent made that have not connected yet (TLS: not finished their handshake). */
const connecting = new WeakSet<Socket>();

/**
 * Follow `socket`, just made by a target's agent (target.ts), until it connects (TLS: `secureConnect`):
 * until then nothing written to it has left this process. A kept-alive socket pays nothing per request.
 */
export function trackConnecting(socket: Socket): void {
  connecting.add(socket);
  socket.once('encrypted' in socket ? 'secureConnect' : 'connect', () => connecting.delete(socket));
}

/** True for a socket of a target's agent that has not connected yet; false for any other (it may have). */
function isConnecting(socket: Socket | null): boolean {
  return socket !== null && connecting.has(socket);
}

/** True once the last byte of `request` was handed to a connected socket (AttemptFailure.requestSent). */
function isSentWhole(request: http.ClientRequest): boolean {
  return !isConnecting(request.socket) && request.writableFinished;
}

/**
 * Wait for the reply head of `request` (already sent, or being sent).
 * @param headTimeoutMs time allowed for the head; then the request is destroyed and the attempt fails as timed out
 * @param idleMs longest gap between two chunks of the reply body; then the body is destroyed with an
 *   UPSTREAM_IDLE error. Time the body's reader holds it paused does not count.
 * @param signal destroys the request when it aborts (not one sent whole when it `sparesSent`)
 * @returns the reply head; rejects with an {@link AttemptFailure}
 */
export function awaitReplyHead(request: http.ClientRequest, headTimeoutMs: number, idleMs: number, signal?: CancelSignal): Promise<UpstreamReply> {
  return new Promise((resolve, reject) => {
    let timedOut = false;
    // When the request's last byte left (isIdleSocketReset tells a reset of an idle-closed socket from one mid-run by it).
    let sentAt: number | undefined = request.writableFinished ? Date.now() : undefined;
    if (sentAt === undefined) request.once('finish', () => (sentAt = Date.now()));
    const timer = setTimeout(() => {
      timedOut = true;
      request.destroy();
    }, headTimeoutMs);
    const onAbort = () => {
      if (!signal?.sparesSent || !isSentWhole(request)) request.destroy();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) request.destroy();
    request.once('response', (response) => {
      clearTimeout(timer);
      // The socket's idle timer, not a 'data' listener: the reply stays paused until its reader attaches.
      const onIdle = () => {
        // A body its reader paused (a client slow to take the reply, lib/http/sse.ts) is not idle: the reader
        // bounds that wait, and the limit starts again when it resumes.
        if (response.isPaused()) return void response.once('resume', watchAgain);
        response.destroy(createIdleError(idleMs));
        request.destroy();
      };
      // The request's own `timeout` event fires once: after a pause the socket's is watched, until the body closes.
      const watchAgain = () => {
        const socket = request.socket;
        if (!socket || response.destroyed) return;
        socket.once('timeout', onIdle).setTimeout(idleMs);
        response.once('close', () => socket.off('timeout', onIdle));
      };
      request.setTimeout(idleMs, onIdle);
      response.once('close', () => signal?.removeEventListener('abort', onAbort));
      resolve({ response, abort: () => request.destroy() });
    });
    request.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      const requestSent = isSentWhole(request);
      reject({ error, timedOut, reusedSocket: request.reusedSocket, requestSent, sinceSentMs: requestSent && sentAt !== undefined ? Date.now() - sentAt : undefined } satisfies AttemptFailure);
    });
  });
}
