/**
 * Which target an attempt goes to: the session's target while it is available, else a target serving
 * the model, chosen by weight with smooth weighted round-robin (nginx's: exact shares, evenly
 * interleaved, no random streaks), preferring targets not yet tried for this request and skipping
 * those cooling down or with an open breaker. When every target serving the model is down, the one
 * back first takes the attempt (as a single upstream always did).
 *
 * A route naming a `target` (an object the upstream keeps in one account: a message batch, a file)
 * goes to that target only, whatever its health, and never fails over to another account.
 *
 * Sessions (lib/observability/session-id.ts) are remembered per instance, the most recent `MAX_SESSIONS` of them.
 */
import { errors } from '../http/errors';
import { featureNames } from './providers/capabilities';
import type { AttemptChainHolder } from './attempt-chain';
import type { HeldTarget } from './target';

/** Sessions remembered (oldest forgotten first). */
export const MAX_SESSIONS = 10_000;

/** What an attempt is routed by (the request context is one: no object is made per request). */
export interface UpstreamRoute extends AttemptChainHolder {
  /** Catalogue entry, by its canonical `id`: only targets serving it are chosen. Absent: any target. */
  readonly model?: { readonly id: string };
  /** The request's session (lib/observability/session-id.ts): it stays on one target while that target is healthy. */
  sessionId?: string;
  /**
   * The id of the only target the attempt may go to (the account holding the object it is about); no
   * failover to another. Absent: any target serving the model.
   */
  readonly target?: string;
  /**
   * The features the request needs (providers/capabilities.ts FEATURES bits): only targets offering
   * them all are chosen. Set by the client for pools with a cloud target; absent: none.
   */
  needs?: number;
}

/** A bit per target index (at most 16 targets, lib/config/upstream-targets.ts). */
const bit = (target: HeldTarget) => 1 << target.index;

export interface TargetChoice {
  /**
   * The target for the next attempt.
   * @param tried bit mask of the targets this request already failed on
   * @param now epoch ms
   * @throws GatewayError 502 when the route names a `target` that is not one of these (gone from config)
   */
  choose(route: UpstreamRoute | undefined, tried: number, now: number): HeldTarget;
  /** True when a target serving the route's model that was not tried yet is available at `now`. */
  hasUntried(route: UpstreamRoute | undefined, tried: number, now: number): boolean;
  /** The session's requests go to `target` from now on. */
  pin(sessionId: string, target: HeldTarget): void;
  /**
   * Check that some target serving the route's model offers every feature it needs.
   * @throws GatewayError 400 naming the features missing and what each target serving the model offers
   */
  checkOffered(route: UpstreamRoute | undefined): void;
}

/**
 * The choice over one client's targets (at most 16: their indexes are the bits of `tried`).
 * @param targets the client's targets, in config order (their `current` weights are updated in place)
 */
export function createTargetChoice(targets: readonly HeldTarget[]): TargetChoice {
  const sessions = new Map<string, HeldTarget>();
  const servesModel = (target: HeldTarget, route: UpstreamRoute | undefined) =>
    target.models === null || route?.model === undefined || target.models.has(route.model.id);
  // A request without needs (every first-party pool's) is not checked further.
  const serves = (target: HeldTarget, route: UpstreamRoute | undefined) =>
    servesModel(target, route) && (!route?.needs || (route.needs & ~target.capabilities.features) === 0);

  /** Smooth weighted round-robin over the targets passing `eligible`; undefined when none does. */
  function byWeight(route: UpstreamRoute | undefined, tried: number, now: number, skipTried: boolean): HeldTarget | undefined {
    let total = 0;
    let best: HeldTarget | undefined;
    for (const target of targets) {
      if (!serves(target, route) || (skipTried && (tried & bit(target)) !== 0) || !target.health.available(now)) continue;
      target.current += target.weight;
      total += target.weight;
      if (!best || target.current > best.current) best = target;
    }
    if (best) best.current -= total;
    return best;
  }

  function firstBack(route: UpstreamRoute | undefined): HeldTarget {
    let best: HeldTarget | undefined;
    for (const target of targets) {
      if (serves(target, route) && (!best || target.health.backAt() < best.health.backAt())) best = target;
    }
    // Config validation makes sure some target serves every model of its key group.
    return best ?? targets[0];
  }

  function named(id: string): HeldTarget {
    const target = targets.find((candidate) => candidate.id === id);
    if (!target) throw errors.upstreamUnreachable(`upstream target "${id.slice(0, 100)}", which holds this object, is not configured (upstream.targets)`);
    return target;
  }

  return {
    choose(route, tried, now) {
      if (route?.target !== undefined) return named(route.target);
      const pinned = route?.sessionId === undefined ? undefined : sessions.get(route.sessionId);
      if (pinned && (tried & bit(pinned)) === 0 && serves(pinned, route) && pinned.health.available(now)) return pinned;
      return byWeight(route, tried, now, true) ?? byWeight(route, tried, now, false) ?? firstBack(route);
    },
    hasUntried(route, tried, now) {
      return route?.target === undefined && targets.some((target) => (tried & bit(target)) === 0 && serves(target, route) && target.health.available(now));
    },
    checkOffered(route) {
      const needs = route?.needs;
      if (!needs || route.target !== undefined || targets.some((target) => serves(target, route))) return;
      const serving = targets.filter((target) => servesModel(target, route));
      const missing = featureNames(needs & ~serving.reduce((all, target) => all | target.capabilities.features, 0));
      const offers = serving.map((target) => `"${target.id}" (${target.provider?.name ?? 'anthropic'}: ${featureNames(needs & target.capabilities.features).join(', ') || 'none of them'})`);
      throw errors.invalidRequest(
        `this request needs ${featureNames(needs).join(', ')}; no upstream target ${route.model ? `serving ${route.model.id} ` : ''}offers ` +
          `${missing.length > 0 ? missing.join(', ') : 'them all together'}. Targets: ${offers.join('; ')}`,
      );
    },
    pin(sessionId, target) {
      if (sessions.get(sessionId) === target) return;
      sessions.delete(sessionId);
      if (sessions.size >= MAX_SESSIONS) sessions.delete(sessions.keys().next().value!);
      sessions.set(sessionId, target);
    },
  };
}
