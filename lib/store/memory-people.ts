/** The people role of the memory store (people-types.ts): one process, lost at restart but for nothing billed. */
import type { Clock } from './month';
import type { PendingSignIn, PeopleStore, SessionRecord, UserRecord } from './people-types';

/** A map whose entries expire at an epoch ms; expired entries are dropped when met and on each write. */
class ExpiringMap<T> {
  private readonly entries = new Map<string, { value: T; expiresAt: number }>();
  constructor(private readonly clock: Clock) {}

  set(id: string, value: T, expiresAt: number): void {
    const now = this.clock();
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
    this.entries.set(id, { value, expiresAt });
  }

  get(id: string): T | null {
    const entry = this.entries.get(id);
    if (!entry) return null;
    if (entry.expiresAt <= this.clock()) {
      this.entries.delete(id);
      return null;
    }
    return entry.value;
  }

  delete(id: string): boolean {
    const live = this.get(id) !== null;
    this.entries.delete(id);
    return live;
  }
}

const copy = <T>(value: T): T => structuredClone(value);

export class MemoryPeopleStore implements PeopleStore {
  private readonly pending: ExpiringMap<PendingSignIn>;
  private readonly sessions: ExpiringMap<SessionRecord>;
  private readonly users = new Map<string, UserRecord>();
  /** team id -> lower-cased emails added by email */
  private readonly emailMembers = new Map<string, Set<string>>();

  constructor(private readonly clock: Clock) {
    this.pending = new ExpiringMap(clock);
    this.sessions = new ExpiringMap(clock);
  }

  async savePendingSignIn(id: string, pending: PendingSignIn, ttlMs: number): Promise<void> {
    this.pending.set(id, copy(pending), this.clock() + ttlMs);
  }

  async takePendingSignIn(id: string): Promise<PendingSignIn | null> {
    const pending = this.pending.get(id);
    this.pending.delete(id);
    return pending;
  }

  async saveSession(idHash: string, session: SessionRecord): Promise<void> {
    this.sessions.set(idHash, copy(session), session.expiresAt);
  }

  async getSession(idHash: string): Promise<SessionRecord | null> {
    const session = this.sessions.get(idHash);
    return session && copy(session);
  }

  async deleteSession(idHash: string): Promise<boolean> {
    return this.sessions.delete(idHash);
  }

  async saveUser(user: UserRecord): Promise<void> {
    this.users.set(user.subject, copy(user));
  }

  async getUser(subject: string): Promise<UserRecord | null> {
    const user = this.users.get(subject);
    return user ? copy(user) : null;
  }

  async listUsers(): Promise<UserRecord[]> {
    return [...this.users.values()].map(copy).sort((a, b) => a.subject.localeCompare(b.subject));
  }

  async addTeamMemberByEmail(teamId: string, email: string): Promise<void> {
    const members = this.emailMembers.get(teamId) ?? new Set<string>();
    members.add(email.toLowerCase());
    this.emailMembers.set(teamId, members);
  }

  async teamsOfEmail(email: string): Promise<string[]> {
    const lower = email.toLowerCase();
    return [...this.emailMembers].filter(([, members]) => members.has(lower)).map(([teamId]) => teamId).sort();
  }
}
