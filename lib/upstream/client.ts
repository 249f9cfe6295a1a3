/**
 * The upstream client: where requests go (its targets: several deployments with their own URL,
 * credentials and weight, see target.ts and target-choice.ts), with which credential, over one
 * keep-alive agent per target, and the one retry loop every upstream route goes through
 * (`exchange`): the head timeout of each attempt, failover to another target and the retry policy
 * (before the first byte only, and only where the upstream cannot have started the request:
 * retry-policy.ts), cancellation when the client goes away, and the idle limit of the
 * reply body. Every route sends through `send`, whose request headers pass the allow list of
 * request-headers.ts: nothing a client sent leaves unless the upstream API defines it.
 */
import type http from 'node:http';
import { errors, GatewayError } from '../http/errors';
import { discardReply, noteAttempt } from './attempt-chain';
import { awaitReplyHead, type AttemptFailure, type AttemptOutcome, type CancelSignal, type UpstreamReply } from './attempt';
import { failedToStart, startCloudAttempt, type StartedAttempt } from './cloud-attempt';
import type { UpstreamCredential } from './credentials';
import { asksStream, featuresNeeded } from './providers/request-for-target';
import { isPassedRequestHeader } from './request-headers';
import { attemptError, isIdleSocketReset, isNotStarted, parseRetryAfter, RETRYABLE_STATUSES } from './retry-policy';
import { createHeldTarget, describeTarget, type HeldTarget, type TargetStatus, type UpstreamTarget } from './target';
import { createTargetChoice, type UpstreamRoute } from './target-choice';
import { UPSTREAM_DEFAULTS, type UpstreamOptions } from './options';

export { faultOptionsOf, UPSTREAM_DEFAULTS, type UpstreamFaultOptions, type UpstreamOptions } from './options';

export interface UpstreamRequest {
  /** Default `POST`. */
  method?: string;
  /** Path on the upstream, e.g. `/v1/messages`. */
  path: string;
  /**
   * Extra headers (lower-case names): only those `isPassedRequestHeader` allows are sent (request-headers.ts);
   * the credential and the framing and content headers are set here.
   */
  headers: Record<string, string>;
  /** The JSON body; none (no content headers) for a GET or DELETE. */
  body?: Buffer;
  /** The body's content type when it is not JSON (a multipart upload). Default `application/json`. */
  contentType?: string;
  /**
   * Requests with the same affinity go to the same credential of a target while it is awake (a prompt
   * cache belongs to the credential's organization; e.g. the key and its `prompt_cache_key`). Default:
   * the rotation.
   */
  affinity?: string;
}

/**
 * Starts one attempt with `credential` at `target`: the request it sent, or (a cloud target's,
 * cloud-attempt.ts) a promise of it, rejected when it could not be sent (the attempt is not started).
 */
export type StartAttempt = (credential: UpstreamCredential, target: UpstreamTarget) => http.ClientRequest | Promise<StartedAttempt>;

export interface UpstreamClient {
  /** The first target's URL and agent. */
  readonly url: URL;
  readonly agent: http.Agent;
  /** Every target, in config order. */
  readonly targets: readonly UpstreamTarget[];
  readonly timeoutMs: number;
  readonly streamIdleTimeoutMs: number;
  /** `text` with every configured credential of every target replaced by `[redacted]`; `text` itself when it holds none. */
  redact(text: string): string;
  /**
   * The retry loop: start attempts until one brings a reply head that is neither retried nor failed
   * over. Each attempt goes to a target chosen for `route` (target-choice.ts); before the first byte, a
   * connection error, a head timeout or a 429/500/502/503/529 marks the target failed (health); the
   * request moves to another available target at once only when the upstream cannot have started it (a
   * connection that failed before the request left whole, a 429/503/529: `isNotStarted`); with none
   * left, the retry policy decides. A head timeout, a socket lost after the request left, a 500 or 502
   * end the request there: it runs once.
   * A reply body that stays idle longer than `streamIdleTimeoutMs` is destroyed with an UPSTREAM_IDLE error.
   * @param signal cancels the attempt under way and any retry wait (the client went away)
   * @param affinity the credential affinity within the chosen target (UpstreamRequest.affinity)
   * @returns the reply, with `target` the id of the target that gave it
   * @throws GatewayError 502 when the upstream cannot be reached, an attempt cannot be started (the
   *   message names the cause; a cloud target's credentials: only its id) or the route's `target` is not
   *   configured, 504 when no head comes in `timeoutMs`, 400 when a cloud target refuses to build the request
   */
  exchange(start: StartAttempt, signal?: CancelSignal, route?: UpstreamRoute, affinity?: string): Promise<UpstreamReply>;
  /** Send `request` (POST unless it says otherwise) through `exchange`. */
  send(request: UpstreamRequest, signal?: CancelSignal, route?: UpstreamRoute): Promise<UpstreamReply>;
  /** True when an HTTP answer (any status) comes back from some target within `timeoutMs` ms. */
  ping(timeoutMs?: number): Promise<boolean>;
  /** Each target's health and counters, by this instance (config order). */
  describeTargets(): TargetStatus[];
}

/** Resolves after `ms`; rejects at once when `signal` aborts. */
function sleep(ms: number, signal?: CancelSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error('aborted'));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Statuses that mark a target failed (its health: cooldown, breaker): the refusals of a request it did
 * not run (RETRYABLE_STATUSES: 429, 503, 529), and 500 and 502. They differ on purpose: a 500 or 502
 * says the target is failing, so it counts against its health, but the upstream may have run the
 * request, so only a refusal is retried or moves the request to another target (retry-policy.ts).
 */
export const TARGET_FAILURE_STATUSES: ReadonlySet<number> = new Set([...RETRYABLE_STATUSES, 500, 502]);

/**
 * Whether an attempt's outcome is the target's failure (not the model's answer), and the cooldown
 * the upstream asked for: undefined when it is no failure, else the `retry-after` in ms or null.
 * A 429 of one credential while another of the target's is awake rests that credential only; a reset
 * kept-alive socket is the socket's fault, not the target's.
 */
function failureOf(target: HeldTarget, credential: UpstreamCredential, outcome: AttemptOutcome, now: () => number): number | null | undefined {
  if ('status' in outcome) {
    if (!TARGET_FAILURE_STATUSES.has(outcome.status)) return undefined;
    if (outcome.status === 429 && credential.index >= 0 && target.credentials.anotherAwake(credential.index)) return undefined;
    return parseRetryAfter(outcome.headers, now()) ?? null;
  }
  if (isIdleSocketReset(outcome)) return undefined;
  return null;
}

/** Destroy the kept-alive sockets `agent` holds idle (not those in use): its next request opens a new connection. */
function dropFreeSockets(agent: http.Agent): void {
  for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
}

/** Create the client for one upstream. */
export function createUpstreamClient(options: UpstreamOptions): UpstreamClient {
  const now = options.now ?? Date.now;
  const settings = { ...UPSTREAM_DEFAULTS, ...Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) };
  const targetSettings = { ...settings, now, random: options.random ?? Math.random, auth: options.auth ?? 'x-api-key' as const, maxSockets: options.maxSockets };
  const configured = options.targets ?? [{ url: options.url!, apiKeys: options.apiKeys ?? (options.apiKey ? [options.apiKey] : []) }];
  if (configured.length === 0) throw new TypeError('an upstream client needs a target');
  const targets = configured.map((target, index) => createHeldTarget(target, index, targetSettings));
  const single = targets.length === 1 ? targets[0] : undefined;
  const choice = createTargetChoice(targets);
  const clouds = targets.some((target) => target.provider !== undefined);

  async function exchange(start: StartAttempt, signal?: CancelSignal, route?: UpstreamRoute, affinity?: string): Promise<UpstreamReply> {
    let tried = 0;
    // The target whose idle kept-alive socket was reset: the request goes to it again, on a fresh socket.
    let again: HeldTarget | undefined;
    for (let retriesDone = 0; ;) {
      // A route naming its target is checked even with one target (the object may be another account's).
      const target = again ?? (single && route?.target === undefined ? single : choice.choose(route, tried, now()));
      again = undefined;
      target.health.take(now);
      target.counters.requests++;
      const credential = target.credentials.pick(affinity);
      let outcome: AttemptOutcome;
      let reply: UpstreamReply | undefined;
      let started: http.ClientRequest | Promise<StartedAttempt>;
      try {
        started = start(credential, target);
      } catch (err) {
        target.health.released();
        // Not a socket failure but a request that could not be built: no retry can help.
        throw errors.upstreamUnreachable(`the upstream request could not be sent: ${(err as Error)?.message ?? String(err)}`);
      }
      try {
        // Only a cloud target's attempt is a promise: a first-party attempt is not awaited here.
        const cloud = started instanceof Promise ? await started.catch(failedToStart) : undefined;
        reply = await awaitReplyHead(cloud ? cloud.request : started as http.ClientRequest, options.timeoutMs, settings.streamIdleTimeoutMs, signal);
        reply.target = target.id;
        if (cloud) {
          reply.response = cloud.adapt(reply.response);
          reply.provider = target.provider!.name as UpstreamReply['provider'];
          if (cloud.dropped.length > 0) reply.dropped = cloud.dropped;
        }
        outcome = { status: reply.response.statusCode ?? 502, headers: reply.response.headers };
      } catch (failure) {
        // A cloud request refused before it was sent (cloud-attempt.ts): the client's 400, not the target's failure.
        if (failure instanceof GatewayError) {
          target.health.released();
          throw failure;
        }
        outcome = failure as AttemptFailure;
      }
      if (signal?.aborted) {
        target.health.released();
        if (reply) return reply;
        // Marked outcome unknown when the request had left whole (a spared attempt's head timeout, say).
        throw attemptError(outcome as AttemptFailure);
      }
      const failure = failureOf(target, credential, outcome, now);
      if (failure === undefined) {
        target.health.succeeded();
        if (route?.sessionId !== undefined && !single) choice.pin(route.sessionId, target);
      } else {
        target.counters.failures++;
        target.health.failed(now(), failure ?? undefined);
      }
      const delay = target.planRetry(credential, outcome, retriesDone);
      // Moved only when the upstream cannot have started the work: a request runs once (retry-policy.ts).
      const mayMove = !single && failure !== undefined && isNotStarted(outcome) && !('status' in outcome && outcome.headers['x-should-retry'] === 'false');
      // Noted once an attempt fails, never on a first attempt that succeeds (attempt-chain.ts).
      const noted = route && (failure !== undefined || delay !== null || route.attempts) ? noteAttempt(route, target.id, outcome) : undefined;
      if (mayMove && choice.hasUntried(route, (tried |= 1 << target.index), now())) {
        target.counters.failovers++;
        discardReply(reply?.response, noted, target.credentials.redact);
        continue;
      }
      if (delay === null) {
        if (reply) return reply;
        throw attemptError(outcome as AttemptFailure);
      }
      retriesDone++;
      discardReply(reply?.response, noted, target.credentials.redact);
      if (isIdleSocketReset(outcome)) {
        // Its idle siblings are as old: dropped, so the attempt again gets a fresh socket (and is not tried a third time).
        dropFreeSockets(target.agent);
        again = target;
      }
      try {
        await sleep(delay, signal);
      } catch {
        if (reply) return reply;
        throw attemptError(outcome as AttemptFailure);
      }
    }
  }

  function send(request: UpstreamRequest, signal?: CancelSignal, route?: UpstreamRoute): Promise<UpstreamReply> {
    const passed: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) if (isPassedRequestHeader(name)) passed[name] = value;
    if (clouds && route?.target === undefined) {
      // A pool with a cloud target: the request goes only where what it needs is offered.
      route ??= {};
      route.needs = featuresNeeded({ path: request.path, headers: passed, body: request.contentType ? undefined : request.body });
      try {
        choice.checkOffered(route);
      } catch (err) {
        return Promise.reject(err);
      }
    }
    const model = route?.model;
    let stream: boolean | undefined;
    return exchange((credential, target) => {
      if (target.provider) {
        const native = { method: request.method ?? 'POST', path: request.path, headers: passed, body: request.body, stream: (stream ??= asksStream(request.body)) };
        return startCloudAttempt(target, native, (model && target.modelIds?.[model.id]) ?? '', request.contentType);
      }
      const { url } = target;
      const body = request.body;
      const req = target.transport.request({
        protocol: url.protocol, hostname: url.hostname, port: url.port || undefined, method: request.method ?? 'POST', path: target.basePath + request.path, agent: target.agent,
        headers: {
          ...passed, ...credential.headers, 'accept-encoding': 'identity',
          ...(body ? { 'content-type': request.contentType ?? 'application/json', 'content-length': String(body.length) } : {}),
        },
      });
      req.end(body);
      return req;
    }, signal, route, request.affinity);
  }

  function pingTarget(target: HeldTarget, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const { url } = target;
      const req = target.transport.request({ protocol: url.protocol, hostname: url.hostname, port: url.port || undefined, method: 'HEAD', path: target.basePath + '/', agent: target.agent });
      const timer = setTimeout(() => req.destroy(), timeoutMs);
      req.once('response', (res) => {
        clearTimeout(timer);
        res.resume();
        resolve(true);
      });
      req.once('error', () => {
        clearTimeout(timer);
        resolve(false);
      });
      req.end();
    });
  }

  return {
    url: targets[0].url, agent: targets[0].agent, targets, timeoutMs: options.timeoutMs, streamIdleTimeoutMs: settings.streamIdleTimeoutMs,
    // The native proxy redacts every reply header: one target's rotation is called directly.
    redact: single ? single.credentials.redact : (text) => {
      let out = text;
      for (const target of targets) out = target.credentials.redact(out);
      return out;
    },
    exchange,
    send,
    async ping(timeoutMs = 2000) {
      return (await Promise.all(targets.map((target) => pingTarget(target, timeoutMs)))).includes(true);
    },
    describeTargets() {
      const at = now();
      return targets.map((target) => describeTarget(target, at));
    },
  };
}
