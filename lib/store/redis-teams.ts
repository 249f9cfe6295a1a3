/**
 * The team role of the Redis store (people-types.ts, TeamStore): teams made through the admin API as
 * JSON in one hash (`<prefix>{teams}:records`, field: the team's id) and members' own caps in another
 * (`<prefix>{teams}:member-caps`, field: `JSON.stringify([team, subject])`, value: credits). Both share
 * the hash tag `{teams}`, so on a Redis Cluster they sit in one slot: a read takes both in one
 * transaction, and each change is one command or one script.
 */
import { formatTeam, type TeamConfig } from '../config/people';
import type { MemberCapRecord, TeamStore, TeamStoreState } from './people-types';
import type { RedisConnection } from './redis-connection';

/** Lua: add field ARGV[1] = ARGV[2] to KEYS[1] unless it is there; 1 or 0. */
const CREATE_TEAM = `return redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2])`;

/** Lua: replace field ARGV[1] of KEYS[1] with ARGV[3] only while it holds ARGV[2]; 1 or 0. */
const REPLACE_TEAM = `
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
return 1
`;

/** Lua: set (ARGV[2] not empty) or delete field ARGV[1] of KEYS[1]; returns what it held before (or false). */
const SET_MEMBER_CAP = `
local previous = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[2] == '' then redis.call('HDEL', KEYS[1], ARGV[1]) else redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) end
return previous
`;

export class RedisTeamStore implements TeamStore {
  private readonly records: string;
  private readonly memberCaps: string;

  /** @param prefix the store's prefix (`REDIS_PREFIX`) */
  constructor(private readonly connection: RedisConnection, prefix: string) {
    this.records = `${prefix}{teams}:records`;
    this.memberCaps = `${prefix}{teams}:member-caps`;
  }

  async readTeams(): Promise<TeamStoreState> {
    const [records, caps] = await this.connection.commands.multi().hGetAll(this.records).hGetAll(this.memberCaps).exec() as unknown as [Record<string, string>, Record<string, string>];
    const teams = Object.values(records).map((json) => JSON.parse(json) as TeamConfig).sort((a, b) => a.id.localeCompare(b.id));
    const memberCaps: MemberCapRecord[] = Object.entries(caps).map(([field, value]) => {
      const [team, subject] = JSON.parse(field) as [string, string];
      return { team, subject, monthlyCreditCap: Number(value) };
    });
    memberCaps.sort((a, b) => a.team.localeCompare(b.team) || a.subject.localeCompare(b.subject));
    return { teams, memberCaps };
  }

  async createTeam(team: TeamConfig): Promise<boolean> {
    return Number(await this.connection.run(CREATE_TEAM, [this.records], [team.id, formatTeam(team)])) === 1;
  }

  async replaceTeam(before: TeamConfig, after: TeamConfig): Promise<boolean> {
    const replaced = await this.connection.run(REPLACE_TEAM, [this.records], [before.id, formatTeam(before), formatTeam({ ...after, id: before.id })]);
    return Number(replaced) === 1;
  }

  async setMemberCap(team: string, subject: string, monthlyCreditCap: number | null): Promise<number | null> {
    const previous = await this.connection.run(SET_MEMBER_CAP, [this.memberCaps], [JSON.stringify([team, subject]), monthlyCreditCap === null ? '' : String(monthlyCreditCap)]);
    return typeof previous === 'string' ? Number(previous) : null;
  }
}
