/**
 * The people role of the memory store (people-types.ts): one process. Users, sessions and members
 * added by email go into the state file with the rest of the store (memory-persistence.ts), so a
 * restart neither signs everyone out nor forgets an operator's change; sign-ins under way do not.
 */
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

  /** The live entries, oldest first, as plain JSON. */
  snapshot(): Array<{ id: string; value: T; expiresAt: number }> {
    const now = this.clock();
    return [...this.entries].filter(([, entry]) => entry.expiresAt > now).map(([id, entry]) => ({ id, value: copy(entry.value), expiresAt: entry.expiresAt }));
  }
}

/** What the state file keeps of the people role (absent in files written before it existed). */
export interface MemoryPeopleSnapshot {
  users: UserRecord[];
  /** Keyed by the SHA-256 of the session id, as the store keeps them: the file holds no live cookie. */
  sessions: Array<{ id: string; value: SessionRecord; expiresAt: number }>;
  /** team id -> lower-cased emails added by email */
  emailMembers: Record<string, string[]>;
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

  /**
   * @param onChange told of each change worth keeping: `urgent` for an operator's change or a
   *   sign-out (written at once), else a sign-in's (written with the next periodic write)
   */
  constructor(private readonly clock: Clock, private readonly onChange: (urgent: boolean) => void = () => undefined) {
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
    this.onChange(false);
  }

  async getSession(idHash: string): Promise<SessionRecord | null> {
    const session = this.sessions.get(idHash);
    return session && copy(session);
  }

  async deleteSession(idHash: string): Promise<boolean> {
    const live = this.sessions.delete(idHash);
    // A sign-out is written at once: a restart must not bring a stolen cookie back to life.
    if (live) this.onChange(true);
    return live;
  }

  async saveUser(user: UserRecord): Promise<void> {
    this.users.set(user.subject, copy(user));
    this.onChange(false);
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
    this.onChange(true);
  }

  async teamsOfEmail(email: string): Promise<string[]> {
    const lower = email.toLowerCase();
    return [...this.emailMembers].filter(([, members]) => members.has(lower)).map(([teamId]) => teamId).sort();
  }

  /** Users, live sessions and members added by email, as plain JSON (the state file's `people`). */
  snapshot(): MemoryPeopleSnapshot {
    return {
      users: [...this.users.values()].map(copy),
      sessions: this.sessions.snapshot(),
      emailMembers: Object.fromEntries([...this.emailMembers].map(([teamId, emails]) => [teamId, [...emails]])),
    };
  }

  /** Replace users, sessions and members added by email with a snapshot's (none when absent). */
  restore(snapshot: MemoryPeopleSnapshot | undefined): void {
    this.users.clear();
    this.emailMembers.clear();
    for (const user of snapshot?.users ?? []) this.users.set(user.subject, copy(user));
    for (const { id, value, expiresAt } of snapshot?.sessions ?? []) this.sessions.set(id, copy(value), expiresAt);
    for (const [teamId, emails] of Object.entries(snapshot?.emailMembers ?? {})) this.emailMembers.set(teamId, new Set(emails));
  }
}
