/**
 * The memory store keeps the people role in its state file: members an operator added by email, users
 * and live sessions come back after a restart, and a sign-out is written at once (a restart must not
 * bring a signed-out session back).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { MemoryStore } from '../../lib/store/memory-store';
import { loadMemoryState, saveMemoryState } from '../../lib/store/memory-persistence';
import type { SessionRecord, UserRecord } from '../../lib/store/people-types';

const user: UserRecord = {
  subject: 'sub-ada', email: 'ada@example.com', name: 'Ada', groups: ['eng'], orgAdmin: false, teams: ['eng'], adminOf: [],
  firstSignInAt: '2026-11-01T00:00:00.000Z', lastSignInAt: '2026-11-02T00:00:00.000Z',
};

describe('memory store: the people role in the state file', () => {
  let dir: string;
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'people-state-')); });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('brings back members added by email, users and live sessions after a restart; an expired session stays gone', async () => {
    let now = 1_000_000;
    const store = new MemoryStore(() => now);
    const session: SessionRecord = { subject: user.subject, csrfToken: 'c'.repeat(32), createdAt: now, expiresAt: now + 60_000, user };
    await store.people.addTeamMemberByEmail('eng', 'Grace@Example.com');
    await store.people.saveUser(user);
    await store.people.saveSession('a'.repeat(64), session);
    await store.people.saveSession('b'.repeat(64), { ...session, expiresAt: now + 10 });
    const file = path.join(dir, 'state.json');
    saveMemoryState(store, file);

    now += 1000;
    const restarted = new MemoryStore(() => now);
    loadMemoryState(restarted, file);
    expect(await restarted.people.teamsOfEmail('grace@example.com')).to.deep.equal(['eng']);
    expect(await restarted.people.getUser('sub-ada')).to.deep.equal(user);
    expect(await restarted.people.getSession('a'.repeat(64))).to.deep.equal(session);
    expect(await restarted.people.getSession('b'.repeat(64))).to.equal(null);
  });

  it('asks for an immediate write on an operator change and a sign-out, and counts a sign-in for the next periodic one', async () => {
    const store = new MemoryStore();
    let immediate = 0;
    store.onKeysChanged = () => { immediate += 1; };
    const before = store.changes;
    await store.people.saveUser(user);
    expect(immediate).to.equal(0);
    expect(store.changes).to.be.greaterThan(before);
    await store.people.addTeamMemberByEmail('eng', 'grace@example.com');
    expect(immediate).to.equal(1);
    await store.people.saveSession('a'.repeat(64), { subject: user.subject, csrfToken: 'c', createdAt: Date.now(), expiresAt: Date.now() + 60_000, user });
    expect(await store.people.deleteSession('a'.repeat(64))).to.equal(true);
    expect(immediate).to.equal(2);
  });
});
