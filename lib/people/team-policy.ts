/**
 * A team's policy over its members' keys (issue 44, "self-service keys"): models within the team's
 * `allowedModels`, a monthly credit cap at most the member cap (`memberMonthlyCreditCap`), a rate
 * limit at most the team's default (`rateLimitPerMinute`, else `defaults.rateLimitPerMinute`). A
 * create or edit above a limit is refused with 403 naming the limit, never clamped.
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

/**
 * Refuse limits above the team's policy (for a create, after `withTeamDefaults`; for an edit, the
 * fields it changes).
 * @param defaultRateLimit `defaults.rateLimitPerMinute`, requests per minute
 * @throws GatewayError 403 naming `allowedModels`, `monthlyCreditCap` or `rateLimitPerMinute`
 */
export function checkTeamPolicy(team: TeamConfig, limits: KeyLimits, defaultRateLimit: number): void {
  if (team.allowedModels !== null && limits.allowedModels !== undefined) {
    if (limits.allowedModels === null) {
      throw limitRefusal(`allowedModels: team "${team.id}" allows only ${team.allowedModels.join(', ')}; a key of the team cannot allow every model`);
    }
    const outside = limits.allowedModels.find((model) => !team.allowedModels!.includes(model));
    if (outside !== undefined) throw limitRefusal(`allowedModels: "${outside.slice(0, 100)}" is not among team "${team.id}"'s models (${team.allowedModels.join(', ')})`);
  }
  const memberCap = team.memberMonthlyCreditCap;
  if (memberCap !== null && limits.monthlyCreditCap !== undefined) {
    if (limits.monthlyCreditCap === null || limits.monthlyCreditCap > memberCap) {
      throw limitRefusal(`monthlyCreditCap: the member cap of team "${team.id}" is ${memberCap} credits a month; a key's cap cannot be above it${limits.monthlyCreditCap === null ? ' or absent' : ''}`);
    }
  }
  const rateLimit = team.rateLimitPerMinute ?? defaultRateLimit;
  if (limits.rateLimitPerMinute !== undefined && limits.rateLimitPerMinute > rateLimit) {
    throw limitRefusal(`rateLimitPerMinute: team "${team.id}" allows at most ${rateLimit} requests per minute per key`);
  }
}

/** A new key's limits with the team's defaults for those not given (models, member cap, rate limit). */
export function withTeamDefaults(team: TeamConfig, limits: KeyLimits, defaultRateLimit: number): Required<KeyLimits> {
  return {
    allowedModels: limits.allowedModels !== undefined ? limits.allowedModels : team.allowedModels,
    monthlyCreditCap: limits.monthlyCreditCap !== undefined ? limits.monthlyCreditCap : team.memberMonthlyCreditCap,
    rateLimitPerMinute: limits.rateLimitPerMinute ?? team.rateLimitPerMinute ?? defaultRateLimit,
  };
}
