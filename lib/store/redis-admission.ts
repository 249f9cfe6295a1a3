/**
 * The Redis store's side of a request before its upstream call (GatewayStore.identifyKey and admit):
 * one round trip. The auth step may find the key in this process's copy of the records it has seen
 * (no round trip); the admission (the ADMIT script) then checks that copy's version, the secret and
 * the revocation in Redis, counts the request and holds its credits, so a revocation or a change
 * through any instance holds on the next request on every instance.
 */
import crypto from 'node:crypto';
import { fromCreditUnits, toCreditUnits, toCreditUnitsCeil } from './credits';
import { EXPIRED_RESERVATION_MEMORY_MS } from './memory-reservations';
import { utcMonth } from './month';
import { decodeRecord } from './redis-codec';
import type { RedisConnection } from './redis-connection';
import { BUCKET_RETENTION_MS, type RedisKeys } from './redis-keys';
import { admissionInTeam, reserveInTeam } from './redis-team-caps';
import { keyMovingError } from './redis-key-move';
import { ADMIT, FIND_KEY, RESERVE_CREDITS } from './redis-scripts';
import type { AdmissionRequest, AdmissionResult, KeySnapshot, ReserveResult, TeamCaps } from './types';

/**
 * How long before an admission's deadline the script stops admitting, ms, at most (and at most a
 * quarter of the time left): its reply must still reach this process before the caller gives up on
 * it (a hold whose reply comes too late is never settled).
 */
const REPLY_MARGIN_MS = 50;

/** Key records this process keeps as last seen (secret sha256 -> record), at most. */
const SNAPSHOTS_KEPT = 10_000;

export class RedisAdmission {
  /** Secret sha256 -> the key as last read and the secret's state (`current` or its expiry, epoch ms). */
  private readonly snapshots = new Map<string, { snapshot: KeySnapshot; secretState: string }>();

  constructor(
    private readonly connection: RedisConnection,
    private readonly keys: RedisKeys,
  ) {}

  async identifyKey(sha256: string, now: number, fresh = false): Promise<KeySnapshot | null> {
    const seen = fresh ? undefined : this.snapshots.get(sha256);
    if (seen && !seen.snapshot.key.revoked && secretLive(seen.secretState, now)) return seen.snapshot;
    // The key id a secret belongs to never changes: a copy kept, if any, names it.
    const id = this.snapshots.get(sha256)?.snapshot.key.id ?? (await this.connection.commands.get(this.keys.secret(sha256)));
    if (!id) return null;
    let found = (await this.connection.run(FIND_KEY, [this.keys.key(id), this.keys.secrets(id)], [sha256])) as [string[] | 'moved', string] | null;
    // A key in a team lives under its team's tag; `{<id>}:key` points there (redis-key-move.ts).
    if (found?.[0] === 'moved') found = (await this.connection.run(FIND_KEY, [this.keys.key(id, found[1]), this.keys.secrets(id, found[1])], [sha256])) as [string[], string] | null;
    if (!found || !secretLive(found[1], now)) {
      this.snapshots.delete(sha256);
      return null;
    }
    return this.remember(sha256, decodeSnapshot(found[0] as string[]), found[1]);
  }

  async admit(request: AdmissionRequest): Promise<AdmissionResult> {
    const { snapshot, now, reservation } = request;
    const { id } = snapshot.key;
    const hold = reservation && { id: crypto.randomUUID(), units: toCreditUnitsCeil(reservation.credits) };
    const cap = snapshot.key.monthlyCreditCap;
    const team = snapshot.key.team;
    const month = reservation?.month ?? utcMonth(now);
    // A team key's hold touches its member's and team's ledgers too (redis-team-caps.ts); any other runs ADMIT as before.
    const inTeam = hold && reservation!.teamCaps ? admissionInTeam(this.keys, reservation!.teamCaps, month) : null;
    const reply = (await this.connection.run(
      inTeam?.script ?? ADMIT,
      [this.keys.key(id, team), this.keys.secrets(id, team), this.keys.rate(id, team), this.keys.credits(id, month, team), ...(inTeam?.keys ?? [])],
      [request.secretSha256, String(snapshot.version), String(now), String(request.rateLimitWindowMs), String(snapshot.key.rateLimitPerMinute),
        deadlineArg(this.connection, request.deadline),
        ...(hold ? [hold.id, String(hold.units), String(cap === null ? -1 : toCreditUnits(cap)), String(now + reservation!.ttlMs),
          String(EXPIRED_RESERVATION_MEMORY_MS), String(BUCKET_RETENTION_MS), minUnitsArg(reservation!.minCredits)] : []), ...(inTeam?.args ?? [])],
    )) as [string, ...unknown[]];
    // Nothing was counted or held; the caller has most likely answered 503 already.
    if (reply[0] === 'late') throw new Error('the admission reached Redis after its deadline (store.timeoutMs): nothing counted or held');
    // The key's state is being moved to another hash tag (redis-key-move.ts): a 503 the client retries.
    if (reply[0] === 'moving') throw keyMovingError(id);
    if (reply[0] === 'unknown' || reply[0] === 'revoked') {
      this.snapshots.delete(request.secretSha256);
      // Unknown where this copy of the record put it: the key may have moved to or from a team since.
      const moved = reply[0] === 'unknown' ? await this.identifyKey(request.secretSha256, now, true) : null;
      if (moved && (moved.key.team ?? null) !== (team ?? null)) return { outcome: 'changed', snapshot: moved };
      return { outcome: 'refused', reason: reply[0] };
    }
    if (reply[0] === 'changed') {
      const state = this.snapshots.get(request.secretSha256)?.secretState ?? 'current';
      return { outcome: 'changed', snapshot: this.remember(request.secretSha256, decodeSnapshot(reply[1] as string[]), state) };
    }
    const [, hits, leftMs, ok, spent, reserved, held] = reply as [string, number, number, number?, number?, number?, number?];
    const admitted = { outcome: 'admitted' as const, totalHits: hits, resetTime: new Date(now + leftMs) };
    if (!hold || ok === undefined) return { ...admitted, reserved: null };
    if (inTeam) return { ...admitted, reserved: inTeam.result((reply as number[]).slice(3), { ...hold, credits: reservation!.credits }, id, cap) };
    const result: ReserveResult = ok === 1
      ? { ok: true, reservation: { id: hold.id, keyId: id, month: reservation!.month, credits: heldCredits(held!, hold.units, reservation!.credits) }, spent: fromCreditUnits(spent!) }
      : { ok: false, spent: fromCreditUnits(spent!), reserved: fromCreditUnits(reserved!), cap: cap!, limit: 'key' };
    return { ...admitted, reserved: result };
  }

  /**
   * A hold outside an admission (GatewayStore.reserveCredits); a team key's in its member's and team's
   * ledgers too (redis-team-caps.ts).
   * @throws Error when the script reached Redis after `deadline` (epoch ms, this process's clock): nothing held
   */
  async reserve(request: { keyId: string; month: string; credits: number; cap: number | null; now: number; ttlMs: number; minCredits?: number; deadline?: number; teamCaps?: TeamCaps }): Promise<ReserveResult> {
    const { keyId, month, credits, cap, now, ttlMs, teamCaps } = request;
    const [minUnits, deadline] = [minUnitsArg(request.minCredits), deadlineArg(this.connection, request.deadline)];
    if (teamCaps) return reserveInTeam(this.connection, this.keys, { keyId, month, credits, cap, now, ttlMs, minUnits, deadline, teamCaps });
    const id = crypto.randomUUID();
    const units = toCreditUnitsCeil(credits);
    const [ok, spent, reserved, held] = (await this.connection.run(
      RESERVE_CREDITS,
      [this.keys.credits(keyId, month)],
      [id, String(units), String(cap === null ? -1 : toCreditUnits(cap)), String(now), String(now + ttlMs),
        String(EXPIRED_RESERVATION_MEMORY_MS), String(BUCKET_RETENTION_MS), minUnits, deadline],
    )) as [number, number, number, number];
    if (ok === -1) throw new Error('the reservation reached Redis after its deadline (store.timeoutMs): nothing held');
    if (ok === -2) throw keyMovingError(keyId);
    if (ok !== 1) return { ok: false, spent: fromCreditUnits(spent), reserved: fromCreditUnits(reserved), cap: cap!, limit: 'key' };
    return { ok: true, reservation: { id, keyId, month, credits: heldCredits(held, units, credits) }, spent: fromCreditUnits(spent) };
  }

  /** Keep the key as read for `sha256` (the oldest copy goes when SNAPSHOTS_KEPT are kept). */
  private remember(sha256: string, snapshot: KeySnapshot, secretState: string): KeySnapshot {
    this.snapshots.delete(sha256);
    if (this.snapshots.size >= SNAPSHOTS_KEPT) this.snapshots.delete(this.snapshots.keys().next().value!);
    this.snapshots.set(sha256, { snapshot, secretState });
    return snapshot;
  }
}

/** The last moment (epoch ms, this process's clock) the script may admit for a caller giving up at `deadline`, from `now`. */
export function scriptDeadline(deadline: number, now: number): number {
  return deadline - Math.min(REPLY_MARGIN_MS, Math.max(0, (deadline - now) / 4));
}

/** The deadline argument of a script (ADMIT, RESERVE_CREDITS): `deadline` as server epoch ms (scriptDeadline), or -1 for none. */
export function deadlineArg(connection: RedisConnection, deadline: number | undefined): string {
  return deadline === undefined ? '-1' : String(connection.serverTime(scriptDeadline(deadline, Date.now())));
}

/** Whether a secret in state `state` (`current`, or the epoch ms it expires at) works at `now`. */
function secretLive(state: string, now: number): boolean {
  return state === 'current' || Number(state) > now;
}

/** A key record and its version from the record hash as a flat field/value list. */
function decodeSnapshot(flat: string[]): KeySnapshot {
  const at = flat.indexOf('version');
  return { key: decodeRecord(flat), version: at >= 0 && at % 2 === 0 ? Number(flat[at + 1]) : 0 };
}

/** The minimum-credits argument of the reserve scripts: credit units rounded up, or -1 for none. */
export function minUnitsArg(minCredits: number | undefined): string {
  return minCredits === undefined ? '-1' : String(toCreditUnitsCeil(minCredits));
}

/** The credits a reserve script held: the asked `credits` when it held all `askedUnits`, else what it held. */
export function heldCredits(heldUnits: number, askedUnits: number, credits: number): number {
  return heldUnits === askedUnits ? credits : fromCreditUnits(heldUnits);
}
