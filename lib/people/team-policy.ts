/**
 * A team's policy over its keys (issue 44, "self-service keys"): models within the team's
 * `allowedModels`, a monthly credit cap at most the member cap (`memberMonthlyCreditCap`), a rate
 * limit at most the team's default (`rateLimitPerMinute`, else `defaults.rateLimitPerMinute`). A
 * create or edit through the admin API below an organisation admin is refused with 403 naming the
 * limit, never clamped (checkTeamPolicy); a key an organisation admin or config.json puts in a team
 * is bounded by it (applyTeamPolicy).
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

/** A key's limits as its team's policy bounds them (applyTeamPolicy). */
export interface TeamBoundLimits {
  /** Catalogue ids; null: every model. */
  allowedModels: string[] | null;
  /** Credits per UTC month; null: none. */
  monthlyCreditCap: number | null;
}

/**
 * A team key's limits under its team's policy: its models within the team's (the intersection; the
 * team's list when the key names none), its own cap at most the member cap (a key that names none
 * keeps none: the member cap holds it at each hold, lib/store/people-caps.ts, and a refusal names
 * the member's cap, not a copy of it).
 */
export function applyTeamPolicy(limits: TeamBoundLimits, team: TeamConfig): TeamBoundLimits {
  const allowedModels = team.allowedModels === null ? limits.allowedModels
    : limits.allowedModels === null ? [...team.allowedModels] : limits.allowedModels.filter((model) => team.allowedModels!.includes(model));
  const memberCap = team.memberMonthlyCreditCap;
  const monthlyCreditCap = memberCap === null || limits.monthlyCreditCap === null ? limits.monthlyCreditCap : Math.min(limits.monthlyCreditCap, memberCap);
  return { allowedModels, monthlyCreditCap };
}
