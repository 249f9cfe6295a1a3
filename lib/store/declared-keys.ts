/**
 * Keys declared in config.json follow the file. At every start and reload (SIGHUP) each declared key
 * takes the file's secret (the only one it has from then on: a secret no longer in the file stops
 * working at once, with no rotation grace), its limits and its `revoked`; a revocation made at run time
 * (admin API, CLI) is kept apart from the file's and survives every start, undone only by a restore.
 * A key taken out of the file is revoked (restorable at run time). The admin API and the CLI refuse to
 * change what the file sets (DeclaredKeyError).
 */
import type { GatewayConfig, KeyConfig } from '../config';
import { applyTeamPolicy } from '../people/team-policy';
import { hashSecret, lastFour } from '../keys/secrets';
import type { Logger } from '../observability/logger';
import type { KeyPatch, KeyRecord, KeyStore } from './types';

/** The name the records, the admin API and the errors give the file that declares keys. */
export const DECLARING_FILE = 'config.json';

/** One change a sync made to a declared key, for the log (never a secret). */
export interface DeclaredKeyChange {
  keyId: string;
  /** `created`, `secret` (replaced), `undeclared` (no longer in the file), or the record field changed. */
  field: string;
  from?: unknown;
  to?: unknown;
}

/** What the admin API and the CLI may not change on a declared key: the file sets it. */
export class DeclaredKeyError extends Error {}

/** The record fields config.json sets, as the admin API and the CLI name them. */
const FILE_FIELDS = ['name', 'rateLimitPerMinute', 'allowedModels', 'monthlyCreditCap', 'team', 'owner'] as const;

/**
 * Bring the store's keys in line with `config.keys` (see the module comment). With `createOnly`, only
 * keys missing from the store are made (the CLI: it changes nothing it was not asked to).
 * @returns the changes made, one per field (the caller logs them)
 * @throws Error when the store refuses (a secret that belongs to another key)
 */
export async function syncDeclaredKeys(store: KeyStore, config: GatewayConfig, createOnly = false): Promise<DeclaredKeyChange[]> {
  const changes: DeclaredKeyChange[] = [];
  for (const declared of config.keys) {
    const sha256 = declared.keySha256 ?? hashSecret(declared.key!);
    const wanted = wantedFields(declared, config);
    let current = await store.getKey(declared.id);
    if (!current) {
      try {
        await store.createKey({ ...wanted, id: declared.id, secret: { sha256, expiresAt: null }, revoked: wanted.fileRevoked });
        changes.push({ keyId: declared.id, field: 'created' });
        continue;
      } catch (err) {
        // Another instance starting on the same store made it first: brought in line below, as any other.
        current = await store.getKey(declared.id);
        if (!current) throw err;
      }
    }
    if (createOnly) continue;
    if (await store.replaceSecret(declared.id, { sha256, expiresAt: null }, wanted.last4)) changes.push({ keyId: declared.id, field: 'secret' });
    const patch = patchOf(current, wanted, declared);
    if (Object.keys(patch).length === 0) continue;
    const updated = await store.updateKey(declared.id, patch);
    for (const [field, to] of Object.entries(patch)) {
      if (field !== 'fileRevoked' || (current.fileRevoked ?? false) !== to) changes.push({ keyId: declared.id, field, from: current[field as keyof KeyRecord] ?? null, to });
    }
    // Derived by the store as it wrote the patch (records.ts, revokedIsDerived): the file's doing when no
    // run-time revocation came meanwhile (that one is logged by its own caller).
    const atRunTime = current.revokedAtRunTime ?? (current.revoked && current.fileRevoked !== true);
    if (updated.revoked !== current.revoked && updated.revokedAtRunTime === atRunTime) {
      changes.push({ keyId: declared.id, field: 'revoked', from: current.revoked, to: updated.revoked });
    }
  }
  if (createOnly) return changes;
  const ids = new Set(config.keys.map((key) => key.id));
  for (const key of await store.listKeys()) {
    if (!key.declaredIn || ids.has(key.id)) continue;
    // Taken out of the file: it stops working (an operator who deletes a leaked key's entry expects it to),
    // kept with its spend and managed at run time from now on; a restore (admin API, CLI) brings it back,
    // and so does the file declaring it again (the revocation is the file's, not a run-time one).
    await store.updateKey(key.id, { declaredIn: null, fileRevoked: true, revoked: true });
    changes.push({ keyId: key.id, field: 'undeclared' });
  }
  return changes;
}

/**
 * The fields of a declared key as the file sets them (defaults for what it leaves out); a key in a
 * team takes its team's policy (applyTeamPolicy, 'bound': models within the team's, cap at most the member
 * cap, the team's rate limit by default).
 */
function wantedFields(declared: KeyConfig, config: GatewayConfig) {
  const team = declared.team === undefined ? undefined : config.teams.find((candidate) => candidate.id === declared.team);
  const own = { allowedModels: declared.allowedModels ?? null, monthlyCreditCap: declared.monthlyCreditCap ?? null };
  const limits = team ? applyTeamPolicy(team, own, 'bound') : own;
  return {
    name: declared.name ?? declared.id,
    // A key given by its hash has no secret end to show: an empty last4, never the hash's end.
    last4: declared.key ? lastFour(declared.key) : '',
    rateLimitPerMinute: declared.rateLimitPerMinute ?? team?.rateLimitPerMinute ?? config.defaults.rateLimitPerMinute,
    allowedModels: limits.allowedModels,
    monthlyCreditCap: limits.monthlyCreditCap,
    team: team ? team.id : null,
    owner: team ? declared.owner ?? null : null,
    keyGroup: declared.keyGroup ?? 'default',
    declaredIn: DECLARING_FILE,
    fileRevoked: declared.revoked ?? false,
  };
}

/**
 * The patch that gives `current` the file's fields. `revoked` is never in it: the patch carries the
 * file's `fileRevoked` whenever the revocation may change, and the store derives `revoked` from it and
 * the run-time revocation as it writes (records.ts, revokedIsDerived), so a revocation made between
 * the read of `current` and this write stays. A key the file declares for the first time (a record
 * made before keys followed the file, or one taken out of the file earlier) keeps the name and limits
 * set at run time that the file leaves out.
 */
function patchOf(current: KeyRecord, wanted: ReturnType<typeof wantedFields>, declared: KeyConfig): KeyPatch {
  const firstDeclared = current.declaredIn !== DECLARING_FILE;
  const target: KeyPatch = {
    name: wanted.name, rateLimitPerMinute: wanted.rateLimitPerMinute, allowedModels: wanted.allowedModels,
    monthlyCreditCap: wanted.monthlyCreditCap, team: wanted.team, owner: wanted.owner, keyGroup: wanted.keyGroup, declaredIn: wanted.declaredIn, last4: wanted.last4,
  };
  if (firstDeclared) for (const field of FILE_FIELDS) if (declared[field] === undefined) delete target[field];
  const patch: KeyPatch = {};
  for (const [field, value] of Object.entries(target)) {
    if (JSON.stringify(current[field as keyof KeyRecord] ?? null) !== JSON.stringify(value)) (patch as Record<string, unknown>)[field] = value;
  }
  const revokedAtRunTime = current.revokedAtRunTime ?? (current.revoked && current.fileRevoked !== true);
  const revocationMayChange = current.fileRevoked !== wanted.fileRevoked || current.revokedAtRunTime === undefined
    || current.revoked !== (wanted.fileRevoked || revokedAtRunTime);
  if (revocationMayChange) patch.fileRevoked = wanted.fileRevoked;
  return patch;
}

/**
 * Refuse a change to what config.json sets on a declared key: the fields of `changed` the file sets,
 * its secret (`secret`), or a restore while the file itself revokes it (`restore`).
 * @throws DeclaredKeyError naming the file and the fields
 */
export function checkDeclaredKeyChange(key: KeyRecord, changed: readonly string[]): void {
  if (!key.declaredIn) return;
  if (changed.includes('secret')) {
    throw new DeclaredKeyError(`key "${key.id}" is declared in ${key.declaredIn}, which sets its secret: change it there and restart or reload (SIGHUP)`);
  }
  if (changed.includes('restore') && key.fileRevoked) {
    throw new DeclaredKeyError(`key "${key.id}" is revoked in ${key.declaredIn} ("revoked": true): remove that there and reload (SIGHUP)`);
  }
  const fileSet = FILE_FIELDS.filter((field) => changed.includes(field));
  if (fileSet.length > 0) {
    throw new DeclaredKeyError(`key "${key.id}" is declared in ${key.declaredIn}, which sets ${fileSet.join(', ')}: change ${fileSet.length > 1 ? 'them' : 'it'} there and reload (SIGHUP)`);
  }
}

/** Write one log line per change a sync made (settings only, never a secret). */
export function logDeclaredKeyChanges(logger: Pick<Logger, 'info' | 'warn'>, changes: DeclaredKeyChange[]): void {
  for (const { keyId, field, from, to } of changes) {
    if (field === 'created') logger.info({ message: `key declared in ${DECLARING_FILE} created`, key_id: keyId });
    else if (field === 'secret') logger.warn({ message: `key declared in ${DECLARING_FILE}: its secret replaced by the file's (every other secret of the key fails from now on)`, key_id: keyId });
    else if (field === 'undeclared') logger.warn({ message: `key no longer declared in ${DECLARING_FILE}: revoked, kept with its spend and managed at run time (restore it to use it again)`, key_id: keyId });
    else logger.info({ message: `key declared in ${DECLARING_FILE} changed`, key_id: keyId, field, from, to });
  }
}
