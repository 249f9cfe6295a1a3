/**
 * The audit log's pure parts and the memory store's log: canonical JSON, the hash chain and what its
 * verifier finds (an edited, removed, reordered entry, entries cut off the end), the secret filter,
 * the field diff, config.json's key and team changes as entries, the read scope of each role, and the
 * bounded scan behind `GET /admin/v1/audit`.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { canonicalJson, createAuditVerifier, GENESIS_HASH, hashAuditEntry, sealAuditEntry } from '../../lib/audit/audit-chain';
import { changedFields, recordAudit, recordSignIn, withoutSecrets } from '../../lib/audit/audit-log';
import { scanAudit, verifyAuditLog } from '../../lib/audit/audit-query';
import { draftsOfTeamChanges, recordDeclaredKeyChanges } from '../../lib/audit/config-audit';
import type { AuditEntry } from '../../lib/audit/audit-types';
import { auditScopeOf } from '../../lib/admin/audit-routes';
import type { UserActor } from '../../lib/admin/actor';
import type { TeamConfig } from '../../lib/config/people';
import { MemoryStore } from '../../lib/store/memory-store';
import { GatewayError } from '../../lib/http/errors';
import { loadMemoryState, saveMemoryState } from '../../lib/store/memory-persistence';
import { tempDir } from '../helpers/temp-dir';

/** A chain of `n` entries sealed one after another. */
function chainOf(n: number): AuditEntry[] {
  const entries: AuditEntry[] = [];
  for (let i = 0; i < n; i++) {
    const head = entries.length > 0 ? { id: entries[i - 1].id, hash: entries[i - 1].hash } : null;
    entries.push(sealAuditEntry({ actor: 'admin-token', action: 'key.update', object: { type: 'key', id: `k${i}` }, after: { rateLimitPerMinute: i + 1 } }, head, Date.UTC(2026, 10, 1) + i));
  }
  return entries;
}

const verify = (entries: AuditEntry[], head = entries.length > 0 ? { id: entries[entries.length - 1].id, hash: entries[entries.length - 1].hash } : null) => {
  const verifier = createAuditVerifier();
  verifier.add(entries);
  return verifier.finish(head);
};

const user = (fields: Partial<UserActor>): UserActor => ({
  kind: 'user', subject: 'sub-1', email: 'a@example.com', name: null, groups: [], orgAdmin: false, teams: [], adminOf: [], csrfToken: 'c', sessionId: 's', ...fields,
});

describe('audit log: canonical JSON and the hash chain', () => {
  it('writes object keys in ascending order at every depth, arrays in their order, no whitespace, undefined fields left out', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: null, y: 'x' }], c: true }, u: undefined })).to.equal('{"a":{"c":true,"d":[3,{"y":"x","z":null}]},"b":1}');
    expect(canonicalJson({ b: 1, a: 2 })).to.equal(canonicalJson({ a: 2, b: 1 }));
  });

  it('hashes an entry as the SHA-256 of its canonical JSON without `hash`, prevHash included; the first entry follows 64 zeros', () => {
    const [first, second] = chainOf(2);
    expect(first.id).to.equal(1);
    expect(first.prevHash).to.equal(GENESIS_HASH);
    const { hash, ...rest } = first;
    expect(hash).to.equal(crypto.createHash('sha256').update(canonicalJson(rest)).digest('hex'));
    expect(second).to.include({ id: 2, prevHash: first.hash });
    expect(hashAuditEntry(second)).to.equal(second.hash);
    expect(first.at).to.equal('2026-11-01T00:00:00.000Z');
  });

  it('reports an untouched chain intact, with its length and last hash', () => {
    const entries = chainOf(5);
    expect(verify(entries)).to.deep.equal({ intact: true, entries: 5, lastId: 5, lastHash: entries[4].hash });
    expect(verify([], null)).to.deep.equal({ intact: true, entries: 0, lastId: null, lastHash: null });
  });

  it('finds an edited entry (a field changed, or the hash recomputed after the edit)', () => {
    const edited = chainOf(5);
    (edited[2].after as Record<string, unknown>).rateLimitPerMinute = 1000;
    expect(verify(edited)).to.deep.include({ intact: false, firstBrokenId: 3 });
    // Re-hashing the edited entry breaks the link from the next one instead.
    edited[2].hash = hashAuditEntry(edited[2]);
    expect(verify(edited)).to.deep.include({ intact: false, firstBrokenId: 4 });
    const actor = chainOf(3);
    actor[0].actor = { subject: 'someone-else', email: null };
    expect(verify(actor)).to.deep.include({ intact: false, firstBrokenId: 1 });
  });

  it('finds a removed entry, in the middle, at the start, and at the end (against the head)', () => {
    const entries = chainOf(5);
    expect(verify([...entries.slice(0, 2), ...entries.slice(3)], { id: 5, hash: entries[4].hash })).to.deep.include({ intact: false, firstBrokenId: 3 });
    expect(verify(entries.slice(1), { id: 5, hash: entries[4].hash })).to.deep.include({ intact: false, firstBrokenId: 1 });
    expect(verify(entries.slice(0, 4), { id: 5, hash: entries[4].hash })).to.deep.include({ intact: false, firstBrokenId: 5 });
    expect(verify(entries, null)).to.deep.include({ intact: false, firstBrokenId: 5, reason: 'the log has entries but no head (the head was removed)' });
  });

  it('finds entries reordered, and renumbered to hide it', () => {
    const entries = chainOf(5);
    expect(verify([entries[0], entries[2], entries[1], entries[3], entries[4]])).to.deep.include({ intact: false, firstBrokenId: 2 });
    const renumbered = [entries[0], { ...entries[2], id: 2 }, { ...entries[1], id: 3 }, entries[3], entries[4]];
    expect(verify(renumbered)).to.deep.include({ intact: false, firstBrokenId: 2 });
  });
});

describe('audit log: what an entry holds', () => {
  it('never keeps a secret, a secret hash, a last4, a token or a session field, at any depth', () => {
    const kept = withoutSecrets({
      name: 'k', secret: 'sk-cs4-x', keySha256: 'ab', key: 'sk-cs4-y', last4: 'abcd', nested: { secrets: [{ sha256: 'cd' }], csrfToken: 't', sessionId: 's', adminToken: 'a', keyGroup: 'default' },
      list: [{ passwordHash: 'p', ok: 1 }],
    });
    expect(kept).to.deep.equal({ name: 'k', nested: { keyGroup: 'default' }, list: [{ ok: 1 }] });
  });

  it('recordAudit strips secret fields whatever the caller passes; empty sides become null', async () => {
    const store = new MemoryStore();
    const entry = await recordAudit(store, { actor: 'cli', action: 'key.rotate', object: { type: 'key', id: 'a' }, before: { secret: 'sk-old' }, after: { secret: 'sk-new', gracePeriodSeconds: 0 } });
    expect(entry).to.deep.include({ before: null, after: { gracePeriodSeconds: 0 }, team: null, ip: null, actor: 'cli' });
    expect(JSON.stringify(await store.readAudit(0, 10))).not.to.include('sk-');
  });

  it('changedFields keeps only the fields that differ, before and after', () => {
    expect(changedFields({ a: 1, b: [1], c: null }, { a: 1, b: [2], c: 3 })).to.deep.equal({ before: { b: [1], c: null }, after: { b: [2], c: 3 } });
    expect(changedFields({ a: 1, b: 2 }, { a: 5, b: 3 }, ['b'])).to.deep.equal({ before: { b: 2 }, after: { b: 3 } });
  });

  it('records a sign-in and a failed one with the user as actor and object', async () => {
    const store = new MemoryStore();
    await recordSignIn(store, { subject: 'sub-9', email: 'n@example.com', ip: '10.0.0.1', groups: ['eng'], roles: ['member'] });
    await recordSignIn(store, { subject: null, email: null, ip: '10.0.0.2', failure: 'state mismatch' });
    const [ok, failed] = await store.readAudit(0, 10);
    expect(ok).to.deep.include({ action: 'signin', actor: { subject: 'sub-9', email: 'n@example.com' }, object: { type: 'user', id: 'sub-9' }, ip: '10.0.0.1', after: { groups: ['eng'], roles: ['member'] } });
    expect(failed).to.deep.include({ action: 'signin.failed', after: { reason: 'state mismatch' }, ip: '10.0.0.2' });
  });

  it('records config.json\'s changes to declared keys as one entry per key, actor config, no secret', async () => {
    const store = new MemoryStore();
    await store.createKey({ id: 'filed', secret: { sha256: 'f'.repeat(64), expiresAt: null }, last4: 'abcd', rateLimitPerMinute: 5, allowedModels: null, monthlyCreditCap: null });
    // Keys get a team on the people branches; the store keeps whatever record fields it is given.
    await store.updateKey('filed', { team: 'search' } as never);
    await recordDeclaredKeyChanges(store, [
      { keyId: 'new', field: 'created' },
      { keyId: 'filed', field: 'secret' },
      { keyId: 'filed', field: 'monthlyCreditCap', from: null, to: 9 },
      { keyId: 'filed', field: 'last4', from: 'abcd', to: 'wxyz' },
      { keyId: 'gone', field: 'undeclared' },
    ]);
    const entries = await store.readAudit(0, 10);
    expect(entries.map((e) => [e.actor, e.action, e.object?.id])).to.deep.equal([
      ['config', 'key.create', 'new'], ['config', 'key.rotate', 'filed'], ['config', 'key.update', 'filed'], ['config', 'key.revoke', 'gone'],
    ]);
    expect(entries[1].after).to.deep.equal({ replacedBy: 'config.json' });
    expect(entries[2]).to.deep.include({ before: { monthlyCreditCap: null }, after: { monthlyCreditCap: 9 }, team: 'search' });
    expect(JSON.stringify(entries)).not.to.include('abcd').and.not.to.include('wxyz');
  });

  it('describes config.json\'s team changes as team.create, team.update (changed fields only) and team.remove', () => {
    const team = (id: string, fields: Partial<TeamConfig> = {}): TeamConfig => ({
      id, name: id, oidcGroups: [], adminGroups: [], monthlyCreditCap: null, memberMonthlyCreditCap: null, allowedModels: null, rateLimitPerMinute: null, ...fields,
    });
    const drafts = draftsOfTeamChanges([team('a'), team('b', { monthlyCreditCap: 10 })], [team('b', { monthlyCreditCap: 20 }), team('c')]);
    expect(drafts.map((d) => [d.action, d.object?.id, d.team])).to.deep.equal([['team.update', 'b', 'b'], ['team.create', 'c', 'c'], ['team.remove', 'a', 'a']]);
    expect(drafts[0]).to.deep.include({ before: { monthlyCreditCap: 10 }, after: { monthlyCreditCap: 20 } });
  });
});

describe('audit log: who reads what', () => {
  it('ADMIN_TOKEN and organisation admins read every entry, a team admin their teams\', a member none (403)', () => {
    expect(auditScopeOf({ kind: 'admin-token' })).to.equal(null);
    expect(auditScopeOf(user({ orgAdmin: true, adminOf: ['a'] }))).to.equal(null);
    expect(auditScopeOf(user({ adminOf: ['search'], teams: ['search', 'web'] }))).to.deep.equal(['search']);
    expect(() => auditScopeOf(user({ teams: ['search'] }))).to.throw(GatewayError).with.property('status', 403);
  });

  it('scans in id order with filters and the caller\'s teams, and answers a cursor where it stopped', async () => {
    const store = new MemoryStore();
    for (let i = 0; i < 30; i++) {
      await recordAudit(store, { actor: i % 2 === 0 ? 'cli' : { subject: `s${i}`, email: `u${i}@example.com` }, action: i % 3 === 0 ? 'key.revoke' : 'key.update', object: { type: 'key', id: `k${i}` }, team: i % 5 === 0 ? 'search' : 'web' });
    }
    const page = await scanAudit(store, { visibleTeams: ['search'] }, 0, 3);
    expect(page.entries.map((e) => e.id)).to.deep.equal([1, 6, 11]);
    expect(page.cursor).to.equal(11);
    const rest = await scanAudit(store, { visibleTeams: ['search'] }, page.cursor!, 10);
    expect(rest).to.deep.equal({ entries: rest.entries, cursor: null });
    expect(rest.entries.map((e) => e.id)).to.deep.equal([16, 21, 26]);
    expect((await scanAudit(store, { actor: 'u3@example.com' }, 0, 10)).entries.map((e) => e.id)).to.deep.equal([4]);
    expect((await scanAudit(store, { actor: 'cli', action: 'key.revoke' }, 0, 100)).entries.map((e) => e.id)).to.deep.equal([1, 7, 13, 19, 25]);
    // A sparse filter over more entries than the budget answers what it found and where to go on.
    const budgeted = await scanAudit(store, { objectId: 'k29' }, 0, 10, 12);
    expect(budgeted).to.deep.equal({ entries: [], cursor: 12 });
    expect((await scanAudit(store, { objectId: 'k29' }, 12, 10, 100)).entries.map((e) => e.id)).to.deep.equal([30]);
  });

  it('the memory store keeps the log in its snapshot (the state file), and its verification finds an edit made there', async () => {
    const store = new MemoryStore();
    for (let i = 0; i < 4; i++) await recordAudit(store, { actor: 'admin-token', action: 'key.update', object: { type: 'key', id: `k${i}` }, after: { name: `n${i}` } });
    const snapshot = JSON.parse(JSON.stringify(store.snapshot()));
    const restored = new MemoryStore();
    restored.restore(snapshot);
    expect(await verifyAuditLog(restored)).to.deep.include({ intact: true, entries: 4, lastId: 4 });
    snapshot.audit.entries[1].after.name = 'forged';
    restored.restore(snapshot);
    expect(await verifyAuditLog(restored)).to.deep.include({ intact: false, firstBrokenId: 2 });
    snapshot.audit.entries[1].after.name = 'n1';
    snapshot.audit.entries.pop();
    restored.restore(snapshot);
    expect(await verifyAuditLog(restored)).to.deep.include({ intact: false, firstBrokenId: 4 });
  });

  it('the state file names the audit log\'s own NDJSON file, to which each write appends only the new entries', async () => {
    const dir = tempDir('gw-audit-state-');
    const file = path.join(dir, 'state.json');
    const append = (i: number) => recordAudit(store, { actor: 'cli', action: 'key.update', object: { type: 'key', id: `k${i}` }, after: { name: `n${i}` } });
    const store = new MemoryStore();
    try {
      for (let i = 0; i < 3; i++) await append(i);
      saveMemoryState(store, file);
      const linesFile = path.join(dir, 'state.json.audit.ndjson');
      const firstBytes = fs.statSync(linesFile).size;
      for (let i = 3; i < 5; i++) await append(i);
      saveMemoryState(store, file);
      saveMemoryState(store, file);
      const lines = fs.readFileSync(linesFile, 'utf8').trimEnd().split('\n');
      expect(lines.map((line) => JSON.parse(line).id)).to.deep.equal([1, 2, 3, 4, 5]);
      expect(fs.readFileSync(linesFile).subarray(0, firstBytes).toString()).to.equal(lines.slice(0, 3).join('\n') + '\n');
      const state = JSON.parse(fs.readFileSync(file, 'utf8'));
      expect(state.audit).to.equal(undefined);
      expect(state.auditLogFile).to.deep.include({ name: 'state.json.audit.ndjson', entries: 5, head: await store.readAuditHead() });
      // A crash between the append and the state file's rename leaves bytes past the state's: cut off at load.
      fs.appendFileSync(linesFile, '{"id":6,"half');
      const loaded = new MemoryStore();
      expect(loadMemoryState(loaded, file)).to.equal(true);
      expect(await loaded.readAudit(0, 10)).to.deep.equal(await store.readAudit(0, 10));
      expect(await verifyAuditLog(loaded)).to.deep.include({ intact: true, entries: 5 });
      await recordAudit(loaded, { actor: 'cli', action: 'key.revoke', object: { type: 'key', id: 'k9' } });
      saveMemoryState(loaded, file);
      expect(fs.readFileSync(linesFile, 'utf8').trimEnd().split('\n').map((line) => JSON.parse(line).id)).to.deep.equal([1, 2, 3, 4, 5, 6]);
      const again = new MemoryStore();
      loadMemoryState(again, file);
      expect(await verifyAuditLog(again)).to.deep.include({ intact: true, entries: 6, lastId: 6 });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
