/**
 * What config.json changes, in the audit log with actor `config`: the declared keys' changes at every
 * start and reload (lib/store/declared-keys.ts computes them per field; here one entry per key), the
 * teams it declares, and each reload itself (`config.reload`, naming the fields that changed).
 */
import type { GatewayConfig } from '../config';
import { TEAM_FIELDS, type TeamConfig } from '../config/people';
import type { Logger } from '../observability/logger';
import type { DeclaredKeyChange } from '../store/declared-keys';
import type { KeyStore } from '../store/types';
import { recordAudit } from './audit-log';
import type { AuditDraft, AuditLogStore } from './audit-types';

const CONFIG_FILE = { type: 'config', id: 'config.json' } as const;

/** One draft per key a sync changed, in the order the sync first touched it. */
function draftsOfKeyChanges(changes: readonly DeclaredKeyChange[], teams: ReadonlyMap<string, string | null>): AuditDraft[] {
  const byKey = new Map<string, DeclaredKeyChange[]>();
  for (const change of changes) byKey.set(change.keyId, [...(byKey.get(change.keyId) ?? []), change]);
  const drafts: AuditDraft[] = [];
  for (const [keyId, keyChanges] of byKey) {
    const base = { actor: 'config' as const, object: { type: 'key', id: keyId }, team: teams.get(keyId) ?? null };
    const fields = keyChanges.filter((change) => !['created', 'secret', 'undeclared'].includes(change.field));
    const has = (field: string) => keyChanges.some((change) => change.field === field);
    if (has('created')) drafts.push({ ...base, action: 'key.create', after: { declaredIn: 'config.json' } });
    // The file gave the key another secret (the value is never recorded).
    if (has('secret')) drafts.push({ ...base, action: 'key.rotate', after: { replacedBy: 'config.json' } });
    if (has('undeclared')) drafts.push({ ...base, action: 'key.revoke', before: { declaredIn: 'config.json' }, after: { declaredIn: null, revoked: true } });
    if (fields.length > 0) {
      drafts.push({
        ...base, action: 'key.update',
        before: Object.fromEntries(fields.map((change) => [change.field, change.from ?? null])),
        after: Object.fromEntries(fields.map((change) => [change.field, change.to ?? null])),
      });
    }
  }
  return drafts;
}

/**
 * Record the declared keys' changes of one sync (start, reload, or the CLI creating a declared key
 * missing from the store), one entry per key (`key.create`, `key.rotate` when the file replaced the
 * secret, `key.revoke` when it no longer declares it, `key.update` with the fields before and after).
 * @throws Error when the store cannot append
 */
export async function recordDeclaredKeyChanges(store: KeyStore & AuditLogStore, changes: readonly DeclaredKeyChange[]): Promise<void> {
  if (changes.length === 0) return;
  const teams = new Map<string, string | null>();
  for (const keyId of new Set(changes.map((change) => change.keyId))) teams.set(keyId, (await store.getKey(keyId))?.team ?? null);
  for (const draft of draftsOfKeyChanges(changes, teams)) await recordAudit(store, draft);
}


/** `team.create`, `team.update` and `team.remove` drafts for the teams config.json declares, from `previous` to `next`. */
export function draftsOfTeamChanges(previous: readonly TeamConfig[], next: readonly TeamConfig[]): AuditDraft[] {
  const before = new Map(previous.map((team) => [team.id, team]));
  const after = new Map(next.map((team) => [team.id, team]));
  const pick = (team: TeamConfig, fields: ReadonlyArray<keyof TeamConfig> = TEAM_FIELDS) => Object.fromEntries(fields.map((field) => [field, team[field]]));
  const drafts: AuditDraft[] = [];
  for (const team of next) {
    const base = { actor: 'config' as const, object: { type: 'team', id: team.id }, team: team.id };
    const old = before.get(team.id);
    if (!old) drafts.push({ ...base, action: 'team.create', after: pick(team) });
    else {
      const changed = TEAM_FIELDS.filter((field) => JSON.stringify(old[field]) !== JSON.stringify(team[field]));
      if (changed.length > 0) drafts.push({ ...base, action: 'team.update', before: pick(old, changed), after: pick(team, changed) });
    }
  }
  for (const team of previous) {
    if (!after.has(team.id)) drafts.push({ actor: 'config', action: 'team.remove', object: { type: 'team', id: team.id }, team: team.id, before: pick(team) });
  }
  return drafts;
}

/**
 * Record a reload of config.json: its team changes, then `config.reload` naming the top-level fields
 * it applied and those that wait for a restart. Never throws: a failure is logged (the reload stands).
 */
export async function recordConfigReload(
  store: AuditLogStore, previous: GatewayConfig, next: GatewayConfig, change: { reloaded: string[]; needsRestart: string[] }, logger: Pick<Logger, 'error'>,
): Promise<void> {
  try {
    for (const draft of draftsOfTeamChanges(previous.teams, next.teams)) await recordAudit(store, draft);
    await recordAudit(store, { actor: 'config', action: 'config.reload', object: CONFIG_FILE, after: { reloaded: change.reloaded, needsRestart: change.needsRestart } });
  } catch (err) {
    logger.error({ message: 'configuration reloaded, but its audit log entry was not written', reason: (err as Error).message });
  }
}

