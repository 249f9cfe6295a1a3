/**
 * The team directory (lib/people/team-directory.ts) and the team role around it: config.json's teams
 * and the admin API's in one list (the file's win an id in both), members' own caps reaching the
 * admission's member cap, a copy at most about a second old, a failed read keeping the last copy; the
 * memory store's teams in its state file; the store guard bounding each team call.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { TeamConfig } from '../../lib/config/people';
import { createTeamDirectory } from '../../lib/people/team-directory';
import { GatewayError } from '../../lib/http/errors';
import { createStoreGuard } from '../../lib/store/guard';
import { MemoryStore } from '../../lib/store/memory-store';
import { loadMemoryState, saveMemoryState } from '../../lib/store/memory-persistence';
import { teamCapsOf } from '../../lib/store/people-caps';
import type { TeamStore, WithTeamStore } from '../../lib/store/people-types';
import { createCapturingLogger } from '../helpers/gateway';

const team = (id: string, fields: Partial<TeamConfig> = {}): TeamConfig => ({
  id, name: id, oidcGroups: [], adminGroups: [], monthlyCreditCap: null, memberMonthlyCreditCap: null, allowedModels: null, rateLimitPerMinute: null, ...fields,
});

describe('team directory: config.json\'s teams and the admin API\'s', () => {
  it('lists the file\'s teams then the store\'s; an id in both is the file\'s; members\' own caps reach the admission', async () => {
    const store = new MemoryStore();
    const fileTeams = [team('core', { monthlyCreditCap: 100, memberMonthlyCreditCap: 10 })];
    await store.teams.createTeam(team('web', { monthlyCreditCap: 5 }));
    await store.teams.createTeam(team('core', { monthlyCreditCap: 1e9 }));
    await store.teams.setMemberCap('core', 'ada', 2);
    const directory = createTeamDirectory({ store: store.teams, fileTeams: () => fileTeams });
    await directory.refresh();
    const list = directory.list();
    expect(list.map((t) => [t.id, t.declaredIn, t.monthlyCreditCap])).to.deep.equal([['core', 'config.json', 100], ['web', 'admin-api', 5]]);
    expect(directory.list()).to.equal(list, 'the same array until something changes');
    expect(teamCapsOf({ team: 'core', owner: 'ada' }, list)).to.deep.equal({ team: 'core', owner: 'ada', teamCap: 100, memberCap: 2 });
    expect(teamCapsOf({ team: 'core', owner: 'bob' }, list)).to.deep.equal({ team: 'core', owner: 'bob', teamCap: 100, memberCap: 10 });
    // A subject named like an Object.prototype member is a member like any other.
    expect(teamCapsOf({ team: 'core', owner: 'constructor' }, list)!.memberCap).to.equal(10);
    await store.teams.setMemberCap('core', 'ada', null);
    await directory.refresh();
    expect(directory.list()).not.to.equal(list);
    expect(teamCapsOf({ team: 'core', owner: 'ada' }, directory.list())!.memberCap).to.equal(10);
  });

  it('reads the store again once its copy is over maxAgeMs old, and keeps the last copy when a read fails (told once)', async () => {
    let now = 0;
    let down = false;
    const backing = new MemoryStore();
    const store: TeamStore = {
      readTeams: () => (down ? Promise.reject(new Error('ECONNREFUSED')) : backing.teams.readTeams()),
      createTeam: (t) => backing.teams.createTeam(t),
      replaceTeam: (a, b) => backing.teams.replaceTeam(a, b),
      setMemberCap: (t, s, c) => backing.teams.setMemberCap(t, s, c),
    };
    const errors: string[] = [];
    const directory = createTeamDirectory({ store, fileTeams: () => [], maxAgeMs: 1000, now: () => now, onError: (err) => errors.push(err.message) });
    await directory.refresh();
    await backing.teams.createTeam(team('web'));
    now = 999;
    directory.list();
    await new Promise((resolve) => setImmediate(resolve));
    expect(directory.list()).to.deep.equal([], 'under maxAgeMs: the copy stands');
    now = 1000;
    directory.list();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(directory.list().map((t) => t.id)).to.deep.equal(['web']);
    down = true;
    for (let i = 0; i < 3; i++) await directory.refresh().catch(() => undefined);
    expect(directory.list().map((t) => t.id)).to.deep.equal(['web']);
    expect(errors).to.deep.equal(['ECONNREFUSED']);
  });

  it('the memory store keeps the admin API\'s teams and members\' caps in its state file, written at once', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'team-state-'));
    try {
      const store = new MemoryStore();
      let immediate = 0;
      store.onKeysChanged = () => { immediate += 1; };
      await store.teams.createTeam(team('web', { monthlyCreditCap: 7, allowedModels: ['model-haiku-4.5'] }));
      await store.teams.setMemberCap('web', 'ada', 1.5);
      expect(immediate).to.equal(2);
      const file = path.join(dir, 'state.json');
      saveMemoryState(store, file);
      const restarted = new MemoryStore();
      loadMemoryState(restarted, file);
      expect(await restarted.teams.readTeams()).to.deep.equal({
        teams: [team('web', { monthlyCreditCap: 7, allowedModels: ['model-haiku-4.5'] })], memberCaps: [{ team: 'web', subject: 'ada', monthlyCreditCap: 1.5 }],
      });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the store guard bounds each team call by its timeout: a store that does not answer is a 503', async () => {
    const backing = new MemoryStore();
    const never = () => new Promise<never>(() => undefined);
    Object.assign(backing.teams, { readTeams: never, createTeam: never });
    const { logger } = createCapturingLogger();
    const guarded = createStoreGuard(backing, { logger, timeoutMs: 50 }) as unknown as WithTeamStore;
    for (const call of [() => guarded.teams!.readTeams(), () => guarded.teams!.createTeam(team('web'))]) {
      const started = Date.now();
      const err = await call().then(() => null, (e: unknown) => e);
      expect(err).to.be.instanceOf(GatewayError);
      expect((err as GatewayError).status).to.equal(503);
      expect(Date.now() - started).to.be.below(1000);
    }
    expect(await guarded.teams!.setMemberCap('web', 'ada', 1)).to.equal(null);
  });
});
