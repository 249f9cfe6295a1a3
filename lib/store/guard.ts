/**
 * The store guard: what the gateway does when its store (Redis) cannot be reached.
 *
 * - Every store call (the people role's too: sign-ins, sessions, users) is bounded by `timeoutMs`, so a
 *   server that does not answer cannot hang requests. The connection keeps no offline queue (redis-connection.ts): a call made while
 *   disconnected fails at once, and a call answered 503 never runs later. An admission or a credit
 *   reservation sent to a server that is connected but stalled carries its deadline (the call's
 *   start plus `timeoutMs`), which its script checks: run after it, it counts and holds nothing.
 * - Fail closed (the default): a request whose key lookup, rate-limit count or credit reservation
 *   fails gets 503 (native `api_error`, chat `service_unavailable`) instead of passing unmetered.
 *   The `store unreachable` line (operation, cause) travels on that error and is written by the error
 *   handler with the request id: lines about a request name it without a request scope (see
 *   `needsRequestScope` in lib/gateway.ts).
 * - Fail open (`store.failOpen: true`): keys seen in the last `keyCacheMs` still authenticate from
 *   memory, rate limits and credit caps are skipped, and every such request is logged at warn level
 *   (these lines are written here, inside the request's scope, which fail open therefore keeps).
 * - Settlements that fail are kept and retried until the store answers again (each reservation
 *   settles once, so a retry never double-bills), and once more when the gateway shuts down; their
 *   lines name the request from its reservation.
 * - `/health` reports the store unreachable (its ping fails), and the guard recovers by itself: the
 *   next call that succeeds is served normally.
 */
import { SettlementRefusedError } from './credits';
import { GatewayError } from '../http/errors';
import type { Logger } from '../observability/logger';
import type { AdmissionRequest, GatewayStore, KeyRecord, KeySnapshot, Reservation, TeamCaps, UsageEntry } from './types';
import type { PeopleStore, TeamStore, WithPeopleStore, WithTeamStore } from './people-types';

export interface StoreGuardOptions {
  logger: Logger;
  /** Serve requests unmetered while the store is unreachable. Default false (fail closed). */
  failOpen?: boolean;
  /** Longest wait for one store call, in ms. Default 2000. */
  timeoutMs?: number;
  /** How long a key found in the store may authenticate from memory during an outage (fail open only), in ms. Default 600000. */
  keyCacheMs?: number;
  /** Interval of settlement retries, in ms. Default 1000. */
  retryEveryMs?: number;
}

/**
 * The error a request gets when the store cannot be reached and the gateway fails closed. Its operator
 * line (`store unreachable`, the operation and the cause) is written by the error handler, with the
 * request id.
 */
export function storeUnavailable(operation: string, cause: string): GatewayError {
  return new GatewayError(503, 'api_error', 'the gateway cannot reach its usage store; try again shortly', {
    chatCode: 'service_unavailable', headers: { 'retry-after': '1' },
    log: { message: 'store unreachable', operation, error: cause },
  });
}

/** A reservation made while the store is unreachable (fail open): settling it records nothing. */
function unmeteredReservation(keyId: string, month: string): Reservation {
  return { id: `unmetered-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}`, keyId, month, credits: 0 };
}

/**
 * Whether `err` is the store's own answer rather than an outage: a GatewayError without the outage line
 * (a key whose state is being moved, lib/store/redis-key-move.ts). Never served unmetered.
 */
function isStoreRefusal(err: unknown): boolean {
  return err instanceof GatewayError && err.log === undefined;
}

/** Settlements waiting for the store, at most this many (older ones are dropped, and logged). */
const MAX_PENDING_SETTLEMENTS = 100_000;

/** `promise`, or a rejection once `ms` ms pass first. One promise per call (this runs on every store call). */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`store call took longer than ${ms} ms`)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

/** Every call of the people role (people-types.ts), each bounded by the guard. */
const PEOPLE_CALLS = [
  'savePendingSignIn', 'takePendingSignIn', 'saveSession', 'getSession', 'deleteSession', 'saveUser', 'getUser', 'listUsers',
  'addTeamMemberByEmail', 'teamsOfEmail',
] as const satisfies ReadonlyArray<keyof PeopleStore>;

/** Wrap a store with the outage behaviour above. */
export function createStoreGuard(store: GatewayStore, options: StoreGuardOptions): GatewayStore {
  const { logger } = options;
  const failOpen = options.failOpen ?? false;
  const timeoutMs = options.timeoutMs ?? 2000;
  const keyCacheMs = options.keyCacheMs ?? 600_000;
  const keyCache = new Map<string, { key: KeyRecord; version: number; until: number }>();
  const pending: Array<{ reservation: Reservation; usage: UsageEntry }> = [];
  let retrying: NodeJS.Timeout | undefined;

  // A failed call becomes the 503 of the request that made it, and its line is written with that
  // request's id by the error handler (the guard does not know the request). Calls made outside a
  // request (hold renewals) write their own line.
  const call = <T>(operation: string, run: () => Promise<T>): Promise<T> =>
    withTimeout(run(), timeoutMs).catch((err: Error) => {
      if (err instanceof GatewayError) throw err;
      throw storeUnavailable(operation, err.message);
    });

  /**
   * A key lookup, bounded; when it fails and the gateway fails open, the key as last found (for at
   * most `keyCacheMs`). Found keys are remembered only when failing open.
   */
  async function identify(operation: string, sha256: string, lookup: () => Promise<KeySnapshot | null>): Promise<KeySnapshot | null> {
    try {
      const found = await call(operation, lookup);
      if (found && failOpen) keyCache.set(sha256, { ...found, until: Date.now() + keyCacheMs });
      else keyCache.delete(sha256);
      return found;
    } catch (err) {
      const cached = failOpen ? keyCache.get(sha256) : undefined;
      if (!cached || cached.until < Date.now()) throw err;
      servedUnmetered(err, operation, { key_id: cached.key.id });
      return { key: cached.key, version: cached.version };
    }
  }

  /** Fail open: the outage line the error handler would have written, then the warning. */
  const servedUnmetered = (failure: unknown, operation: string, detail: Record<string, unknown> = {}) => {
    if (failure instanceof GatewayError && failure.log) logger.error(failure.log);
    logger.warn({ message: 'store unreachable: request served unmetered (store.failOpen)', operation, ...detail });
  };

  async function flushSettlements(): Promise<void> {
    while (pending.length > 0) {
      const next = pending[0];
      try {
        await withTimeout(store.settleCredits(next.reservation, next.usage), timeoutMs);
      } catch {
        return;
      }
      pending.shift();
      if (pending.length === 0) logger.info({ message: 'store reachable again: delayed settlements recorded' });
    }
  }

  function scheduleRetry() {
    if (retrying) return;
    retrying = setInterval(() => {
      void flushSettlements().then(() => {
        if (pending.length === 0 && retrying) {
          clearInterval(retrying);
          retrying = undefined;
        }
      });
    }, options.retryEveryMs ?? 1000);
    retrying.unref();
  }

  /**
   * Ledger and key reads (admin API, budget alerts) and the spend visibility calls: bounded by `timeoutMs`
   * like the rest (a stalled server answers nothing; a finish step or the alert dispatcher must
   * not wait for ever, or a shutdown would). A failure is a 503 for an admin request; the finish step
   * and the dispatcher log it.
   */
  const bounded = <K extends 'getKey' | 'listKeys' | 'getUsage' | 'getMonthSpend' | 'getTeamMonthSpend' | 'getDailyUsage' | 'appendRequestLog' | 'readRequestLog' | 'claimBudgetAlert' | 'leaseBudgetAlert' | 'retryBudgetAlert' | 'finishBudgetAlert' | 'readAudit' | 'readAuditHead'>(name: K) =>
    ((...args: unknown[]) => call(name, () => (store[name] as (...a: unknown[]) => Promise<unknown>).apply(store, args))) as GatewayStore[K];

  const overrides: Partial<GatewayStore> = {
    getKey: bounded('getKey'),
    listKeys: bounded('listKeys'),
    getUsage: bounded('getUsage'),
    getMonthSpend: bounded('getMonthSpend'),
    getTeamMonthSpend: bounded('getTeamMonthSpend'),
    getDailyUsage: bounded('getDailyUsage'),
    appendRequestLog: bounded('appendRequestLog'),
    readRequestLog: bounded('readRequestLog'),
    // Audit reads are bounded; an append is a change, unbounded as the key changes are (a timeout would not stop it landing).
    readAudit: bounded('readAudit'),
    readAuditHead: bounded('readAuditHead'),
    claimBudgetAlert: bounded('claimBudgetAlert'),
    leaseBudgetAlert: bounded('leaseBudgetAlert'),
    retryBudgetAlert: bounded('retryBudgetAlert'),
    finishBudgetAlert: bounded('finishBudgetAlert'),
    async findKeyBySecretHash(sha256: string, now?: number) {
      const found = await identify('findKey', sha256, () => store.findKeyBySecretHash(sha256, now).then((key) => key && { key, version: -1 }));
      return found?.key ?? null;
    },
    identifyKey(sha256: string, now: number, fresh?: boolean) {
      return identify('findKey', sha256, () => store.identifyKey(sha256, now, fresh));
    },
    async admit(request: AdmissionRequest) {
      try {
        // The deadline travels with the admission: a stalled Redis that runs it after this guard has
        // answered 503 holds and counts nothing (redis-admission.ts).
        return await call('admit', () => store.admit({ ...request, deadline: Date.now() + timeoutMs }));
      } catch (err) {
        if (!failOpen || isStoreRefusal(err)) throw err;
        servedUnmetered(err, 'admit', { key_id: request.snapshot.key.id });
        const reserved = request.reservation && { ok: true as const, spent: 0, reservation: unmeteredReservation(request.snapshot.key.id, request.reservation.month) };
        return { outcome: 'admitted' as const, totalHits: 1, resetTime: new Date(Date.now() + request.rateLimitWindowMs), reserved };
      }
    },
    async reserveCredits(keyId: string, month: string, credits: number, cap: number | null, ttlMs: number, minCredits?: number, _deadline?: number, teamCaps?: TeamCaps) {
      try {
        return await call('reserveCredits', () => store.reserveCredits(keyId, month, credits, cap, ttlMs, minCredits, Date.now() + timeoutMs, teamCaps));
      } catch (err) {
        if (!failOpen || isStoreRefusal(err)) throw err;
        servedUnmetered(err, 'reserveCredits', { key_id: keyId });
        return { ok: true as const, spent: 0, reservation: unmeteredReservation(keyId, month) };
      }
    },
    async renewReservation(reservation: Reservation, ttlMs: number) {
      if (reservation.id.startsWith('unmetered-')) return false;
      try {
        return await call('renewReservation', () => store.renewReservation(reservation, ttlMs));
      } catch (err) {
        if (err instanceof GatewayError && err.log) logger.error({ ...err.log, request_id: reservation.requestId, key_id: reservation.keyId });
        throw err;
      }
    },
    async settleCredits(reservation: Reservation, usage: UsageEntry) {
      if (reservation.id.startsWith('unmetered-')) {
        logger.warn({ message: 'unmetered request finished (store.failOpen): usage not in the ledger', request_id: reservation.requestId, key_id: reservation.keyId, model: usage.model, input_tokens: usage.inputTokens, output_tokens: usage.outputTokens });
        return;
      }
      try {
        await withTimeout(store.settleCredits(reservation, usage), timeoutMs);
      } catch (err) {
        // Figures the store refuses (credits.ts checkSettledFigures) would fail every retry, and hold up the queue.
        if (err instanceof SettlementRefusedError) throw err;
        if (pending.length >= MAX_PENDING_SETTLEMENTS) {
          const dropped = pending.shift()!;
          logger.error({ message: 'delayed settlement dropped (too many waiting)', key_id: dropped.reservation.keyId, credits: dropped.usage.credits });
        }
        pending.push({ reservation, usage });
        logger.error({ message: 'settlement delayed: store unreachable; retrying until it answers', request_id: reservation.requestId, key_id: reservation.keyId, error: (err as Error).message });
        scheduleRetry();
      }
    },
    // Stored responses (the Responses route): bounded like every call; an outage is a 503.
    saveResponse: (record, ttlMs, maxKeyBytes) => call('saveResponse', () => store.saveResponse(record, ttlMs, maxKeyBytes)),
    getResponse: (id) => call('getResponse', () => store.getResponse(id)),
    deleteResponse: (id) => call('deleteResponse', () => store.deleteResponse(id)),
    // Pins (message batches, files): as stored responses; an outage is a 503.
    savePin: (pin, ttlMs) => call('savePin', () => store.savePin(pin, ttlMs)),
    getPin: (kind, id) => call('getPin', () => store.getPin(kind, id)),
    getPins: (kind, ids) => call('getPins', () => store.getPins(kind, ids)),
    deletePin: (kind, id) => call('deletePin', () => store.deletePin(kind, id)),
    ping() {
      return withTimeout(store.ping(), timeoutMs);
    },
    async close() {
      if (retrying) clearInterval(retrying);
      await withTimeout(flushSettlements(), timeoutMs * 2).catch(() => undefined);
      if (pending.length > 0) logger.error({ message: 'settlements not recorded at shutdown: store unreachable', count: pending.length });
      await withTimeout(store.close(), Math.max(timeoutMs, 5000)).catch((err: Error) => logger.error({ message: 'store did not close cleanly', error: err.message }));
    },
  };
  // The team role (teams made through the admin API, read every second by lib/people/team-directory.ts):
  // each call bounded like the rest; an outage is a 503 for an admin call, and the directory keeps what it read last.
  const backingTeams = (store as WithTeamStore).teams;
  const teams: TeamStore | undefined = backingTeams && {
    readTeams: () => call('readTeams', () => backingTeams.readTeams()),
    createTeam: (team) => call('createTeam', () => backingTeams.createTeam(team)),
    replaceTeam: (before, after) => call('replaceTeam', () => backingTeams.replaceTeam(before, after)),
    setMemberCap: (team, subject, cap) => call('setMemberCap', () => backingTeams.setMemberCap(team, subject, cap)),
  };
  // The people role (sign-ins, sessions, users: lib/people/) is bounded too, so a stalled store makes a
  // sign-in or a session's admin call a 503 after timeoutMs rather than hang it (fail open or not:
  // no session is served from memory).
  const people = (store as WithPeopleStore).people;
  if (people) {
    (overrides as { people?: PeopleStore }).people = Object.fromEntries(PEOPLE_CALLS.map((name) => [name,
      (...args: unknown[]) => call(`people.${name}`, () => (people[name] as (...a: unknown[]) => Promise<unknown>).apply(people, args))])) as unknown as PeopleStore;
  }
  // Everything else (key management, ledger reads) is the store's own, bound to it; a proxy keeps
  // `instanceof` and fields of the backing store visible to code that needs them.
  return new Proxy(store, {
    get(target, property, receiver) {
      if (Object.prototype.hasOwnProperty.call(overrides, property)) return overrides[property as keyof GatewayStore];
      if (property === 'teams' && teams) return teams;
      const value = Reflect.get(target, property, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}
