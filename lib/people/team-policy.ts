/**
 * A team's policy over its keys (issue 44, "self-service keys"): models within the team's
 * `allowedModels`, a monthly credit cap at most the member cap (`memberMonthlyCreditCap`), a rate
 * limit at most the team's default (`rateLimitPerMinute`, else `defaults.rateLimitPerMinute`). A
 * create or edit through the admin API below an organisation admin is refused with 403 naming the
 * limit, never clamped; a key an organisation admin or config.json puts in a team is bounded by it:
 * one function, applyTeamPolicy, in its 'refuse' or 'bound' mode.
 */
import type { TeamConfig } from '../config/people';
import { GatewayError } from '../http/errors';

/** The limits of a key a member or team admin sets (undefined: not given). */
export interface KeyLimits {
  allowedModels?: string[] | null;
  monthlyCreditCap?: number | null;
  rateLimitPerMinute?: number;
}

/** 403 (`permission_error`) naming the limit that a create or edit would pass. */
export function limitRefusal(message: string): GatewayError {
  return new GatewayError(403, 'permission_error', message, { chatCode: 'limit_exceeded' });
}

/** A new key's limits with the team's defaults for those not given (models, member cap, rate limit). */
export function withTeamDefaults(team: TeamConfig, limits: KeyLimits, defaultRateLimit: number): Required<KeyLimits> {
  return {
    allowedModels: limits.allowedModels !== undefined ? limits.allowedModels : team.allowedModels,
    monthlyCreditCap: limits.monthlyCreditCap !== undefined ? limits.monthlyCreditCap : team.memberMonthlyCreditCap,
    rateLimitPerMinute: limits.rateLimitPerMinute ?? team.rateLimitPerMinute ?? defaultRateLimit,
  };
}

/** A key's limits as its team's policy bounds them (applyTeamPolicy's 'bound'). */
export interface TeamBoundLimits {
  /** Catalogue ids; null: every model. */
  allowedModels: string[] | null;
  /** Credits per UTC month; null: none. */
  monthlyCreditCap: number | null;
}

/**
 * Who sets the limits, and so what the policy does with a limit past it: `bound`, an organisation
 * admin or config.json (the limit is brought within the policy); `refuse`, a member or a team admin
 * (a 403 naming the limit, never clamped).
 */
export type TeamPolicyMode = 'bound' | 'refuse';

/**
 * A team key's limits under its team's policy, one rule a limit:
 * - models within the team's: `bound` keeps the intersection (the team's list when the key allows
 *   every model); `refuse` refuses a model outside it, or every model;
 * - its own cap at most the member cap: `bound` lowers it (a key that names none keeps none: the member
 *   cap holds it at each hold, lib/store/people-caps.ts, and a refusal names the member's cap, not a
 *   copy of it); `refuse` refuses a cap above it, or none;
 * - its rate limit at most the team's (`rateLimitPerMinute`, else `defaults.rateLimitPerMinute`):
 *   `refuse` only (an organisation admin may give a key more).
 * In `refuse` a limit not given (undefined) is not judged: for a create, pass the limits after
 * `withTeamDefaults`; for an edit, the fields it changes.
 * @param defaultRateLimit `defaults.rateLimitPerMinute`, requests per minute (`refuse`)
 * @returns `bound`: the bounded limits; `refuse`: nothing (the limits pass as they are)
 * @throws GatewayError 403 (`refuse`) naming `allowedModels`, `monthlyCreditCap` or `rateLimitPerMinute`
 */
export function applyTeamPolicy(team: TeamConfig, limits: TeamBoundLimits, mode: 'bound'): TeamBoundLimits;
export function applyTeamPolicy(team: TeamConfig, limits: KeyLimits, mode: 'refuse', defaultRateLimit: number): void;
export function applyTeamPolicy(team: TeamConfig, limits: KeyLimits, mode: TeamPolicyMode, defaultRateLimit?: number): TeamBoundLimits | void {
  const refuse = mode === 'refuse';
  let { allowedModels, monthlyCreditCap } = limits;
  const teamModels = team.allowedModels;
  if (teamModels !== null && allowedModels !== undefined) {
    if (allowedModels === null) {
      if (refuse) throw limitRefusal(`allowedModels: team "${team.id}" allows only ${teamModels.join(', ')}; a key of the team cannot allow every model`);
      allowedModels = [...teamModels];
    } else {
      const outside = allowedModels.find((model) => !teamModels.includes(model));
      if (refuse && outside !== undefined) throw limitRefusal(`allowedModels: "${outside.slice(0, 100)}" is not among team "${team.id}"'s models (${teamModels.join(', ')})`);
      allowedModels = allowedModels.filter((model) => teamModels.includes(model));
    }
  }
  const memberCap = team.memberMonthlyCreditCap;
  if (memberCap !== null && monthlyCreditCap !== undefined) {
    if (refuse && (monthlyCreditCap === null || monthlyCreditCap > memberCap)) {
      throw limitRefusal(`monthlyCreditCap: the member cap of team "${team.id}" is ${memberCap} credits a month; a key's cap cannot be above it${monthlyCreditCap === null ? ' or absent' : ''}`);
    }
    if (monthlyCreditCap !== null) monthlyCreditCap = Math.min(monthlyCreditCap, memberCap);
  }
  if (!refuse) return { allowedModels: allowedModels ?? null, monthlyCreditCap: monthlyCreditCap ?? null };
  const rateLimit = team.rateLimitPerMinute ?? defaultRateLimit!;
  if (limits.rateLimitPerMinute !== undefined && limits.rateLimitPerMinute > rateLimit) {
    throw limitRefusal(`rateLimitPerMinute: team "${team.id}" allows at most ${rateLimit} requests per minute per key`);
  }
}
