/**
 * The people role's contract (lib/store/people-types.ts), run on each store: spec/unit/people.spec.ts
 * (memory) and people-redis.spec.ts (a real Redis, left out of \`npm run test:unit\`, which has none).
 */
import { expect } from 'chai';
import type { PeopleStore, SessionRecord, UserRecord } from '../../lib/store/people-types';

const user = (subject: string, fields: Partial<UserRecord> = {}): UserRecord => ({
  subject, email: `${subject}@example.com`, name: subject, groups: [], orgAdmin: false, teams: [], adminOf: [],
  firstSignInAt: '2026-01-01T00:00:00.000Z', lastSignInAt: '2026-01-01T00:00:00.000Z', ...fields,
});

const session = (subject: string, expiresAt: number): SessionRecord => ({
  subject, csrfToken: 'csrf', createdAt: 0, expiresAt,
  user: { subject, email: null, name: null, groups: [], orgAdmin: false, teams: [], adminOf: [] },
});

/** Describe the contract on the store `open` gives (a fresh one per test; `wait` moves its clock by `ms`). */
export function describePeopleStoreContract(name: string, open: () => Promise<{ people: PeopleStore; wait(ms: number): Promise<void>; close(): Promise<void> }>) {
  describe(`people store role: ${name}`, () => {
    let fixture: Awaited<ReturnType<typeof open>>;
    beforeEach(async () => { fixture = await open(); });
    afterEach(async () => fixture.close());

    it('serves a pending sign-in once, and not after its time', async () => {
      const pending = { codeVerifier: 'v', state: 's', nonce: 'n', returnTo: '/dashboard/' };
      await fixture.people.savePendingSignIn('a', pending, 60_000);
      await fixture.people.savePendingSignIn('b', pending, 20);
      expect(await fixture.people.takePendingSignIn('a')).to.deep.equal(pending);
      expect(await fixture.people.takePendingSignIn('a')).to.equal(null);
      await fixture.wait(60);
      expect(await fixture.people.takePendingSignIn('b')).to.equal(null);
      expect(await fixture.people.takePendingSignIn('never')).to.equal(null);
    });

    it('keeps a session until it expires or is deleted', async () => {
      const now = Date.now();
      await fixture.people.saveSession('h1', session('bob', now + 60_000));
      await fixture.people.saveSession('h2', session('bob', now + 20));
      expect((await fixture.people.getSession('h1'))?.subject).to.equal('bob');
      await fixture.wait(60);
      expect(await fixture.people.getSession('h2')).to.equal(null);
      expect(await fixture.people.deleteSession('h1')).to.equal(true);
      expect(await fixture.people.getSession('h1')).to.equal(null);
      expect(await fixture.people.deleteSession('h1')).to.equal(false);
    });

    it('records users and members added by email (emails compared lower-cased)', async () => {
      await fixture.people.saveUser(user('carol'));
      await fixture.people.saveUser(user('bob', { teams: ['payments'] }));
      await fixture.people.saveUser(user('bob', { teams: ['payments', 'search'] }));
      expect((await fixture.people.listUsers()).map((u) => [u.subject, u.teams])).to.deep.equal([['bob', ['payments', 'search']], ['carol', []]]);
      expect(await fixture.people.getUser('nobody')).to.equal(null);
      await fixture.people.addTeamMemberByEmail('search', 'Erin@Example.com');
      await fixture.people.addTeamMemberByEmail('payments', 'erin@example.com');
      await fixture.people.addTeamMemberByEmail('payments', 'erin@example.com');
      expect(await fixture.people.teamsOfEmail('ERIN@example.com')).to.deep.equal(['payments', 'search']);
      expect(await fixture.people.teamsOfEmail('someone@example.com')).to.deep.equal([]);
    });
  });
}
