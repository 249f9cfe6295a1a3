/**
 * The team role of the memory store (people-types.ts, TeamStore): one process. Teams made through the
 * admin API and members' own caps go into the state file with the rest of the store
 * (memory-persistence.ts), written at once after each change, as a key change is.
 */
import type { MemberCapRecord, TeamStore, TeamStoreState } from './people-types';
import { formatTeam, type TeamConfig } from '../config/people';

/** What the state file keeps of the team role (absent in files written before it existed). */
export type MemoryTeamSnapshot = TeamStoreState;

const copy = <T>(value: T): T => structuredClone(value);

export class MemoryTeamStore implements TeamStore {
  private readonly teams = new Map<string, TeamConfig>();
  /** `JSON.stringify([team, subject])` -> the member's cap */
  private readonly memberCaps = new Map<string, MemberCapRecord>();

  /** @param onChange told of each change (the state file is written at once) */
  constructor(private readonly onChange: () => void = () => undefined) {}

  async readTeams(): Promise<TeamStoreState> {
    return this.snapshot();
  }

  async createTeam(team: TeamConfig): Promise<boolean> {
    if (this.teams.has(team.id)) return false;
    this.teams.set(team.id, JSON.parse(formatTeam(team)) as TeamConfig);
    this.onChange();
    return true;
  }

  async replaceTeam(before: TeamConfig, after: TeamConfig): Promise<boolean> {
    const current = this.teams.get(before.id);
    if (!current || formatTeam(current) !== formatTeam(before)) return false;
    this.teams.set(before.id, JSON.parse(formatTeam({ ...after, id: before.id })) as TeamConfig);
    this.onChange();
    return true;
  }

  async setMemberCap(team: string, subject: string, monthlyCreditCap: number | null): Promise<number | null> {
    const name = JSON.stringify([team, subject]);
    const previous = this.memberCaps.get(name)?.monthlyCreditCap ?? null;
    if (monthlyCreditCap === null) this.memberCaps.delete(name);
    else this.memberCaps.set(name, { team, subject, monthlyCreditCap });
    this.onChange();
    return previous;
  }

  /** Teams by id and member caps by team and subject, as plain JSON (the state file's `teams`). */
  snapshot(): MemoryTeamSnapshot {
    return {
      teams: [...this.teams.values()].map(copy).sort((a, b) => a.id.localeCompare(b.id)),
      memberCaps: [...this.memberCaps.values()].map(copy).sort((a, b) => a.team.localeCompare(b.team) || a.subject.localeCompare(b.subject)),
    };
  }

  /** Replace the teams and member caps with a snapshot's (none when absent). */
  restore(snapshot: MemoryTeamSnapshot | undefined): void {
    this.teams.clear();
    this.memberCaps.clear();
    for (const team of snapshot?.teams ?? []) this.teams.set(team.id, copy(team));
    for (const cap of snapshot?.memberCaps ?? []) this.memberCaps.set(JSON.stringify([cap.team, cap.subject]), copy(cap));
  }
}
