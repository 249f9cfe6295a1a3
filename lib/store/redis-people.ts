/**
 * The people role of the Redis store (people-types.ts). Each call is one-key commands (a cluster
 * routes each by its key): sign-ins under way and sessions as JSON strings with a PX expiry, taken
 * with GETDEL so a callback is served once; users as JSON strings listed in one set; members added by
 * email as one set of team ids per email.
 */
import type { RedisConnection } from './redis-connection';
import type { PendingSignIn, PeopleStore, SessionRecord, UserRecord } from './people-types';

export class RedisPeopleStore implements PeopleStore {
  /**
   * @param prefix the store's prefix (`REDIS_PREFIX`); keys are `<prefix>people:...`
   */
  constructor(private readonly connection: RedisConnection, private readonly prefix: string) {}

  private key(...parts: string[]): string {
    return `${this.prefix}people:${parts.join(':')}`;
  }

  async savePendingSignIn(id: string, pending: PendingSignIn, ttlMs: number): Promise<void> {
    await this.connection.commands.set(this.key('pending', id), JSON.stringify(pending), { PX: Math.max(1, Math.ceil(ttlMs)) });
  }

  async takePendingSignIn(id: string): Promise<PendingSignIn | null> {
    const text = await this.connection.commands.getDel(this.key('pending', id));
    return text === null ? null : (JSON.parse(text) as PendingSignIn);
  }

  async saveSession(idHash: string, session: SessionRecord): Promise<void> {
    const ttlMs = Math.max(1, Math.ceil(session.expiresAt - Date.now()));
    await this.connection.commands.set(this.key('session', idHash), JSON.stringify(session), { PX: ttlMs });
  }

  async getSession(idHash: string): Promise<SessionRecord | null> {
    const text = await this.connection.commands.get(this.key('session', idHash));
    return text === null ? null : (JSON.parse(text) as SessionRecord);
  }

  async deleteSession(idHash: string): Promise<boolean> {
    return (await this.connection.commands.del(this.key('session', idHash))) > 0;
  }

  async saveUser(user: UserRecord): Promise<void> {
    await this.connection.commands.set(this.key('user', user.subject), JSON.stringify(user));
    await this.connection.commands.sAdd(this.key('users'), user.subject);
  }

  async getUser(subject: string): Promise<UserRecord | null> {
    const text = await this.connection.commands.get(this.key('user', subject));
    return text === null ? null : (JSON.parse(text) as UserRecord);
  }

  async listUsers(): Promise<UserRecord[]> {
    const subjects = (await this.connection.commands.sMembers(this.key('users'))).sort();
    const users = await Promise.all(subjects.map((subject) => this.getUser(subject)));
    return users.filter((user): user is UserRecord => user !== null);
  }

  async addTeamMemberByEmail(teamId: string, email: string): Promise<void> {
    await this.connection.commands.sAdd(this.key('email-teams', email.toLowerCase()), teamId);
  }

  async teamsOfEmail(email: string): Promise<string[]> {
    return (await this.connection.commands.sMembers(this.key('email-teams', email.toLowerCase()))).sort();
  }
}
