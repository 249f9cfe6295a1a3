/**
 * The store contract's team role (lib/store/people-types.ts, TeamStore): teams made through the admin
 * API are kept as given, an id is taken once, a change lands only on the team as it was read (two
 * admins' edits never lose one another), and members' own caps are set, replaced and cleared.
 */
import { expect } from 'chai';
import type { TeamConfig } from '../../../lib/config/people';
import type { WithTeamStore } from '../../../lib/store/people-types';
import type { ContractFixture } from './shared';

const team = (id: string, fields: Partial<TeamConfig> = {}): TeamConfig => ({
  id, name: id, oidcGroups: [], adminGroups: [], monthlyCreditCap: null, memberMonthlyCreditCap: null, allowedModels: null, rateLimitPerMinute: null, ...fields,
});

export function describeTeamStoreContract(fixture: () => ContractFixture<WithTeamStore>): void {
  const teams = () => fixture().store.teams!;

  it('keeps the teams made, by id, and refuses an id taken', async () => {
    expect(await teams().readTeams()).to.deep.equal({ teams: [], memberCaps: [] });
    expect(await teams().createTeam(team('web', { oidcGroups: ['web'], monthlyCreditCap: 12.5, allowedModels: ['model-haiku-4.5'] }))).to.equal(true);
    expect(await teams().createTeam(team('core'))).to.equal(true);
    expect(await teams().createTeam(team('web', { name: 'Other' }))).to.equal(false);
    const { teams: held } = await teams().readTeams();
    expect(held.map((t) => t.id)).to.deep.equal(['core', 'web']);
    expect(held[1]).to.deep.equal(team('web', { oidcGroups: ['web'], monthlyCreditCap: 12.5, allowedModels: ['model-haiku-4.5'] }));
  });

  it('replaces a team only while it is as read (compare and set), never its id', async () => {
    await teams().createTeam(team('web', { monthlyCreditCap: 10 }));
    const [read] = (await teams().readTeams()).teams;
    expect(await teams().replaceTeam(read, { ...read, monthlyCreditCap: 5, id: 'other' })).to.equal(true);
    // A second edit made from the same (now old) reading is refused: it would undo the first.
    expect(await teams().replaceTeam(read, { ...read, name: 'Web' })).to.equal(false);
    expect((await teams().readTeams()).teams).to.deep.equal([team('web', { monthlyCreditCap: 5 })]);
    expect(await teams().replaceTeam(team('gone'), team('gone', { name: 'x' }))).to.equal(false);
    expect((await teams().readTeams()).teams.map((t) => t.id)).to.deep.equal(['web']);
  });

  it('sets, replaces and clears a member\'s own cap, answering the one before', async () => {
    expect(await teams().setMemberCap('web', 'alice', 3)).to.equal(null);
    expect(await teams().setMemberCap('web', 'alice', 0.25)).to.equal(3);
    expect(await teams().setMemberCap('web', 'bob|x:y', 0)).to.equal(null);
    expect((await teams().readTeams()).memberCaps).to.deep.equal([
      { team: 'web', subject: 'alice', monthlyCreditCap: 0.25 }, { team: 'web', subject: 'bob|x:y', monthlyCreditCap: 0 },
    ]);
    expect(await teams().setMemberCap('web', 'alice', null)).to.equal(0.25);
    expect(await teams().setMemberCap('web', 'carol', null)).to.equal(null);
    expect((await teams().readTeams()).memberCaps).to.deep.equal([{ team: 'web', subject: 'bob|x:y', monthlyCreditCap: 0 }]);
  });
}
