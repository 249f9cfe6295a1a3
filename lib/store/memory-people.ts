/** The people role of the memory store (people-types.ts): one process, lost at restart but for nothing billed. */
import type { Clock } from './month';
import type { PendingSignIn, PeopleStore, SessionRecord, UserRecord } from './people-types';

/**
 * A map of at most `maxEntries` whose entries expire at an epoch ms: an expired entry is dropped when
 * met, and all of them when the map is full; a map still full then drops its oldest entry, so memory
 * stays bounded whatever callers do (sign-ins are started before anyone is known).
 */
class ExpiringMap<T> {
  private readonly entries = new Map<string, { value: T; expiresAt: number }>();
  constructor(private readonly clock: Clock, private readonly maxEntries: number) {}

  set(id: string, value: T, expiresAt: number): void {
    this.entries.delete(id);
    if (this.entries.size >= this.maxEntries) {
      const now = this.clock();
      for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    }
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

/** Sign-ins under way kept at most (the oldest goes first). */
export const MAX_PENDING_SIGN_INS = 10_000;
/** Sessions kept at most (the oldest goes first: its user signs in again). */
export const MAX_SESSIONS = 100_000;

export class MemoryPeopleStore implements PeopleStore {
  private readonly pending: ExpiringMap<PendingSignIn>;
  private readonly sessions: ExpiringMap<SessionRecord>;
  private readonly users = new Map<string, UserRecord>();
  /** team id -> lower-cased emails added by email */
  private readonly emailMembers = new Map<string, Set<string>>();

  constructor(private readonly clock: Clock) {
    this.pending = new ExpiringMap(clock, MAX_PENDING_SIGN_INS);
    this.sessions = new ExpiringMap(clock, MAX_SESSIONS);
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
