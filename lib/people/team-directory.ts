/**
 * The teams the gateway holds now (issue 44): config.json's `teams[]` and the teams made through the
 * admin API (the store's team role, lib/store/people-types.ts), with members' own caps. An id in both
 * is the file's. Every reader of `teams()` (admission caps, the admin API, sign-in membership, budget
 * alerts) reads `list()`, synchronously: a request waits for no extra store call.
 *
 * The store's part is a copy, read again every `maxAgeMs` (default 1 s) and after each change this
 * instance makes, so a team made or changed on another instance sharing the store holds here within
 * about a second (plus one store round trip). A read that fails keeps the last copy (and is told once
 * per outage).
 */
import type { TeamConfig } from '../config/people';
import type { TeamStore, TeamStoreState, WithTeamStore } from '../store/people-types';

/** Where a team comes from: config.json (changed there) or the admin API (changed through it). */
export type TeamOrigin = 'config.json' | 'admin-api';

/** A team as the directory lists it. */
export interface DirectoryTeam extends TeamConfig {
  declaredIn: TeamOrigin;
  /** Members' own caps (subject -> credits per UTC month); empty: none. */
  memberCaps: Readonly<Record<string, number>>;
}

export interface TeamDirectoryOptions {
  /** The store's team role; absent (a custom store without it): config.json's teams only. */
  store?: TeamStore;
  /** config.json's teams, now (a reload swaps them). */
  fileTeams: () => readonly TeamConfig[];
  /** Age of the store's copy past which it is read again, in ms. Default 1000. */
  maxAgeMs?: number;
  /** Told when a read of the store fails, once per outage (the last copy stays). */
  onError?: (err: Error) => void;
  /** Epoch ms. Default: the real clock. */
  now?: () => number;
}

export interface TeamDirectory {
  /** The store's team role (absent: teams cannot be made through the admin API). */
  readonly store?: TeamStore;
  /** The teams now: config.json's (in its order), then the store's (by id); the same array until one changes. */
  list(): readonly DirectoryTeam[];
  /**
   * Read the store's teams now (after any read under way: a change made before this call is seen).
   * @throws Error when the store cannot be read
   */
  refresh(): Promise<void>;
  /** Read the store again every `maxAgeMs` until `stop()` (the timer does not keep the process alive). */
  start(): void;
  stop(): void;
}

const EMPTY: TeamStoreState = { teams: [], memberCaps: [] };

/** Merge the file's teams and the store's into the directory's list (see the module comment). */
function mergeTeams(fileTeams: readonly TeamConfig[], state: TeamStoreState): DirectoryTeam[] {
  const capsOf = (id: string) => Object.fromEntries(state.memberCaps.filter((cap) => cap.team === id).map((cap) => [cap.subject, cap.monthlyCreditCap]));
  const declared = new Set(fileTeams.map((team) => team.id));
  return [
    ...fileTeams.map((team) => ({ ...team, declaredIn: 'config.json' as const, memberCaps: capsOf(team.id) })),
    ...state.teams.filter((team) => !declared.has(team.id)).map((team) => ({ ...team, declaredIn: 'admin-api' as const, memberCaps: capsOf(team.id) })),
  ];
}

/** Build the directory (empty of store teams until its first `refresh()`, which `list()` starts). */
export function createTeamDirectory(options: TeamDirectoryOptions): TeamDirectory {
  const { store } = options;
  const maxAgeMs = options.maxAgeMs ?? 1000;
  const now = options.now ?? Date.now;
  let state = EMPTY;
  let stateJson = JSON.stringify(EMPTY);
  let readAt = -Infinity;
  let failing = false;
  let reading: Promise<void> | null = null;
  let merged: { of: readonly TeamConfig[]; state: TeamStoreState; list: DirectoryTeam[] } | null = null;
  let timer: NodeJS.Timeout | undefined;

  const read = async () => {
    try {
      const next = await store!.readTeams();
      const json = JSON.stringify(next);
      // Unchanged: the same state object, so list() hands out the same array (people-caps.ts indexes it).
      if (json !== stateJson) [state, stateJson] = [next, json];
      readAt = now();
      failing = false;
    } catch (err) {
      if (!failing) options.onError?.(err as Error);
      failing = true;
      throw err;
    }
  };
  const refresh = (): Promise<void> => {
    if (!store) return Promise.resolve();
    const run: Promise<void> = (reading ?? Promise.resolve()).catch(() => undefined).then(read).finally(() => {
      if (reading === run) reading = null;
    });
    reading = run;
    return run;
  };
  /** A read in the background when the copy is old and none is under way. */
  const refreshIfOld = () => {
    if (store && !reading && now() - readAt >= maxAgeMs) void refresh().catch(() => undefined);
  };

  return {
    store,
    list() {
      refreshIfOld();
      const fileTeams = options.fileTeams();
      if (merged?.of !== fileTeams || merged.state !== state) merged = { of: fileTeams, state, list: mergeTeams(fileTeams, state) };
      return merged.list;
    },
    refresh,
    start() {
      if (timer || !store) return;
      timer = setInterval(() => {
        if (!reading) void refresh().catch(() => undefined);
      }, maxAgeMs);
      timer.unref();
    },
    stop() {
      clearInterval(timer);
      timer = undefined;
    },
  };
}

/** The team role of `store` (a GatewayStore), or undefined when it has none (a custom store). */
export function teamStoreOf(store: object): TeamStore | undefined {
  return (store as WithTeamStore).teams;
}

/**
 * A gateway's directory over `store`'s team role (none: config.json's teams only): read once now (a
 * failure is told to `onError`, and the directory starts with config.json's teams), then every
 * second until `stop()`.
 */
export async function openTeamDirectory(store: object, fileTeams: () => readonly TeamConfig[], onError: (err: Error) => void, now?: () => number): Promise<TeamDirectory> {
  const directory = createTeamDirectory({ store: teamStoreOf(store), fileTeams, onError, now });
  await directory.refresh().catch(() => undefined);
  directory.start();
  return directory;
}
