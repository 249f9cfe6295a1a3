/**
 * Caps at every level: a key in a team holds each request's credits against three month ledgers in
 * one atomic step, the key's own, its member's (the team and the key's owner) and its team's. The
 * stores (memory-store.ts, redis-team-caps.ts) keep the ledgers; this module holds what they share: the
 * caps a hold is asked with and the one rule that decides it.
 */
import type { TeamConfig } from '../config/people';
import type { CapLevel, KeyRecord, Reservation } from './records';
import { toCreditUnits } from './credits';

/** The caps a team key's hold is checked against besides its own (config `teams[]`, lib/config/people.ts). */
export interface TeamCaps {
  /** The team's id. */
  team: string;
  /** The member (the key's owner, an OIDC subject); null: no member ledger (a team key with no owner). */
  owner: string | null;
  /** The team's cap, credits per UTC month; null: none (its ledger is still kept). */
  teamCap: number | null;
  /** The member's cap, credits per UTC month; null: none. */
  memberCap: number | null;
}

/** One ledger as a hold finds it, in credit units (credits.ts); `cap` null: none. */
export interface LedgerLevel {
  limit: CapLevel;
  spent: number;
  reserved: number;
  cap: number | null;
}

/**
 * Decide a hold over several ledgers (the key's first). It fits when `units` fit under every capped
 * ledger; otherwise, with `minUnits`, it takes all that is left under the tightest ledger when the
 * minimum fits there ("usable to its last credit"). Refused: the tightest ledger, the one that
 * stopped it; of ledgers with the same credit left, the broader one (team, then member, then key):
 * a key whose own cap equals the member cap (a self-service key takes it as its default) is stopped
 * by the member's cap whenever the member's ledger binds, since raising the key's would not help.
 * All figures in credit units. The Redis scripts (redis-team-caps.ts) run the same rule in Lua.
 */
export function decideHold(levels: readonly LedgerLevel[], units: number, minUnits: number | undefined): { ok: true; units: number } | { ok: false; level: LedgerLevel } {
  let tightest: LedgerLevel | undefined;
  let tightestLeft = Infinity;
  for (const level of levels) {
    if (level.cap === null) continue;
    const left = level.cap - level.spent - level.reserved;
    // `<=`: a later (broader) ledger wins a tie (see above).
    if (left <= tightestLeft) {
      tightest = level;
      tightestLeft = left;
    }
  }
  if (tightest === undefined || units <= tightestLeft) return { ok: true, units };
  if (minUnits === undefined || tightestLeft < minUnits) return { ok: false, level: tightest };
  return { ok: true, units: tightestLeft };
}

/**
 * The name of a team's month ledger and of a member's among the memory store's buckets (`<name>|<month>`).
 * Key ids never hold `:` (config and admin schemas), so these never meet a key's bucket; the owner
 * (any string an identity provider gives) is URI-encoded so it cannot hold `|`.
 */
export function teamLedgerName(team: string): string {
  return `team:${team}`;
}

/** See teamLedgerName. */
export function memberLedgerName(team: string, owner: string): string {
  return `member:${team}:${encodeURIComponent(owner)}`;
}

/** Per `teams` list (a config's, swapped whole at each reload): id -> team. */
const teamIndexes = new WeakMap<readonly TeamConfig[], Map<string, TeamConfig>>();

/**
 * The team caps of `key`'s holds: its team's cap and its member cap (the member's own, `memberCaps`,
 * set through the admin API, else the team's `memberMonthlyCreditCap`), looked up in `teams` (config
 * `teams[]` and the admin API's, lib/people/team-directory.ts). Undefined for a key without a team; a
 * key whose team is no longer declared keeps its ledgers (and, on Redis, its place under the team's
 * hash tag) with no caps but its own.
 */
export function teamCapsOf(key: Pick<KeyRecord, 'team' | 'owner'>, teams: readonly TeamConfig[]): TeamCaps | undefined {
  if (!key.team) return undefined;
  let index = teamIndexes.get(teams);
  if (!index) teamIndexes.set(teams, (index = new Map(teams.map((team) => [team.id, team]))));
  const team = index.get(key.team);
  const own = key.owner && team?.memberCaps && Object.hasOwn(team.memberCaps, key.owner) ? team.memberCaps[key.owner] : undefined;
  return { team: key.team, owner: key.owner ?? null, teamCap: team?.monthlyCreditCap ?? null, memberCap: own ?? team?.memberMonthlyCreditCap ?? null };
}

/**
 * The ledgers a hold of key `keyId` is checked against (memory store), the key's first, by bucket name
 * (without the month); caps in credit units (credits.ts), null: none.
 */
export function ledgersOf(keyId: string, cap: number | null, teamCaps: TeamCaps | undefined): Array<Omit<LedgerLevel, 'spent' | 'reserved'> & { name: string }> {
  const units = (credits: number | null) => (credits === null ? null : toCreditUnits(credits));
  const key = { limit: 'key' as const, name: keyId, cap: units(cap) };
  if (!teamCaps) return [key];
  const team = { limit: 'team' as const, name: teamLedgerName(teamCaps.team), cap: units(teamCaps.teamCap) };
  return teamCaps.owner === null ? [key, team] : [key, { limit: 'member' as const, name: memberLedgerName(teamCaps.team, teamCaps.owner), cap: units(teamCaps.memberCap) }, team];
}

/** The bucket names (without the month) a reservation holds credits in (memory store), the key's first. */
export function bucketNamesOf(reservation: Reservation): string[] {
  if (!reservation.team) return [reservation.keyId];
  const team = teamLedgerName(reservation.team);
  return reservation.owner ? [reservation.keyId, memberLedgerName(reservation.team, reservation.owner), team] : [reservation.keyId, team];
}
