/**
 * The typed per-request context. Middlewares fill it in pipeline order; integrator hooks read it.
 * It lives on `res.locals.gateway`; no step hangs ad hoc properties on `req`.
 */
import type { RequestHandler, Response } from 'express';
import type { ModelConfig } from '../config';
import type { RouteFormat } from '../http/errors';
import type { AdmissionRequest, AdmissionResult, KeyRecord, Reservation } from '../store/types';
import type { RequestTrace } from '../observability/trace-span';
import type { ErrorReason, UpstreamAttempt } from '../upstream/attempt-chain';

import { emptyUsage, type Usage } from '../../translators/usage';

export { emptyUsage, type Usage };

export interface RequestContext {
  /** `req_` + 24 random base62 characters; also the `request-id` and `x-request-id` reply headers. */
  readonly requestId: string;
  /** Wire format of the route; decides error shapes. */
  format: RouteFormat;
  /**
   * `METHOD /path` with the path as the client sent it, e.g. `POST /v1/messages`: the log line's route.
   * The metrics label it through `routeLabel` (lib/pipeline/route-table.ts), so unknown paths add no series.
   */
  route: string;
  /** `process.hrtime.bigint()` when the request arrived. */
  readonly startedAt: bigint;
  /**
   * The authenticated key (never its secret), possibly as this process last saw it: the rate-limit
   * step's admission checks it against the store before anything is counted or forwarded.
   */
  key?: KeyRecord;
  /** The version of `key` the auth step found, and the SHA-256 of the secret the request carried (for the admission). */
  keyVersion?: number;
  secretSha256?: string;
  /**
   * Read the key from the store again (not a snapshot) and put it on this context: a step about to
   * refuse a request for the key's settings confirms them first. Set by the auth step.
   */
  confirmKey?: () => Promise<void>;
  /** Key group of the key; `default` for `sk-cs4-` keys. */
  keyGroup?: string;
  /** The model named by the client, before alias resolution. */
  requestedModel?: string;
  /** Catalogue entry after alias resolution; its `id` is the canonical model ID. */
  model?: ModelConfig;
  /** Size of the request body as received, in bytes (set by the JSON body step). */
  bodyBytes?: number;
  /** The request body as received (set by the JSON body step): the native proxy forwards it as is. */
  rawBody?: Buffer;
  /**
   * The stored conversation `previous_response_id` names (Responses route, set before the admission by
   * middleware/previous-response.ts) and its size as JSON, in bytes: it goes upstream with the body,
   * so the credit hold counts it.
   */
  previous?: { id: string; items: unknown[]; bytes: number; sessionId?: string };
  /**
   * The signed thinking the gateway kept for the tool call `toolUseId` (lib/store/kept-thinking.ts),
   * loaded before the admission (chat and Responses routes, middleware/kept-thinking.ts) and its size
   * as JSON, in bytes: the route puts it back into the request, so the credit hold counts it.
   */
  keptThinking?: { toolUseId: string; blocks: unknown[]; bytes: number };
  /**
   * What the store knows of the files the body names (their pins: `size_bytes`, `mime_type`), set by
   * the file access step (routes/files.ts): the credit hold bounds what the upstream bills for them.
   */
  files?: Map<string, { sizeBytes?: number; mimeType?: string }>;
  /** Whether the client asked for an SSE reply. */
  stream: boolean;
  /**
   * Settles when the upstream step's handler has returned (for a whole reply: read, usage recorded).
   * The settlement and the reservation renewals wait for it (set by middleware/key-group-dispatch.ts).
   */
  upstreamDone?: Promise<unknown>;
  /** Credit reservation held for this request, settled when the reply ends. */
  reservation?: Reservation;
  /**
   * This request's admission (rate-limit step): the store's answer (its credit hold's result) and the
   * hold it asked for, both read by the credit reservation step.
   */
  admission?: Extract<AdmissionResult, { outcome: 'admitted' }> & { asked: AdmissionRequest['reservation'] };
  /** Usage read from the reply so far (body or stream); undefined when the upstream reported none. */
  usage?: Usage;
  /** Stop reason of the reply, when known. */
  stopReason?: string | null;
  /**
   * Set when the request ended without a reply head although the upstream may have run it (a head
   * timeout, a socket lost after the request left: lib/upstream/retry-policy.ts): billed at its hold.
   */
  upstreamOutcomeUnknown?: boolean;
  /** Upstream HTTP status, when a reply head arrived. */
  upstreamStatus?: number;
  /**
   * The only upstream target this request may go to: the one holding the files it names
   * (routes/files.ts; UpstreamRoute.target). Absent: any target serving the model.
   */
  target?: string;
  /** Id of the upstream target that sent the reply head (lib/upstream/target.ts), when one did. */
  upstreamTarget?: string;
  /** That target's `priceMultiplier` when it is not 1: the settlement multiplies the priced usage by it. */
  priceMultiplier?: number;
  /** Milliseconds from arrival to the first byte written to the client. */
  firstByteMs?: number;
  /** Warnings about lossy conversions, sent in the `x-gateway-warning` header. */
  warnings: string[];
  /** Tool types the Responses route left out (no native counterpart); named in the log line. */
  droppedTools?: string[];
  /** Tags set by integrator hooks (`setTag`); carried to the usage record and the log line. */
  tags: Record<string, string>;
  /** Chat `error.code` of the gateway error the request was answered with, if any (metrics). */
  errorCode?: string;
  /**
   * The error the client got, if any: the gateway's own (type and message, set by the error handler)
   * or the upstream's, relayed (read from its body). Bounded, one line (lib/upstream/attempt-chain.ts).
   */
  error?: ErrorReason;
  /**
   * The upstream attempts, in order, once one of them failed (set by the upstream client's retry loop;
   * lib/upstream/attempt-chain.ts); undefined while the first attempt succeeds.
   */
  attempts?: UpstreamAttempt[];
  /** Set by the last step before the upstream: the request gets a request log record (lib/observability/request-log.ts). */
  upstreamReached?: boolean;
  /** UTC month (`YYYY-MM`) the settlement booked this request's usage in (budget alerts read it). */
  settledMonth?: string;
  /** Credits the settlement charged (the ledger's figure), once it has run. */
  credits?: number;
  /**
   * The client's agent session (lib/observability/session-id.ts; the Responses route falls back to its chain root),
   * set by the upstream mark: a label for the usage by session and the upstream target's session
   * affinity, never trusted for anything else.
   */
  sessionId?: string;
  /** The agent or subagent the request comes from, where the client says (lib/observability/session-id.ts). */
  agentId?: string;
  /** This request's trace, when tracing is on (lib/observability/tracing.ts); undefined otherwise. */
  trace?: RequestTrace;
  /**
   * UTC month whose credit cap this request found used up (refused 402 with no hold in flight and less
   * left than the smallest request's minimal reply costs): budget alerts treat every threshold as reached.
   */
  capExhaustedMonth?: string;
  /**
   * Set when a team key is refused (402) with less credit left under the cap that stopped it (key,
   * member or team, holds in flight counted) than the smallest request costs (`smallestCredits`):
   * its team's cap may be used up too. Budget alerts read the team's month ledger (`month`, UTC
   * `YYYY-MM`) and, when what it leaves of the team's cap cannot pay `smallestCredits`, treat every
   * team threshold as reached.
   */
  teamCapCheck?: { month: string; smallestCredits: number };
}

/** Context of this request (created by the request-id middleware). */
export function getContext(res: Response): RequestContext {
  return res.locals.gateway as RequestContext;
}

/**
 * A step that checks the key's settings: `refusal` gives the error to refuse the request with, or null.
 * A refusal made on a key snapshot (see `confirmKey`) is made again on the key as the store holds it
 * now, so a setting changed on another instance is never refused on a stale copy.
 */
export function createKeySettingsCheck(refusal: (ctx: RequestContext) => Error | null): RequestHandler {
  return (_req, res, next) => {
    const ctx = getContext(res);
    if (refusal(ctx) === null) return next();
    if (!ctx.confirmKey) return next(refusal(ctx));
    const confirm = ctx.confirmKey;
    ctx.confirmKey = undefined;
    confirm().then(() => next(refusal(ctx) ?? undefined), next);
  };
}

/** What a reply showed, for settlement, the log line and the metrics. */
export interface ReplyFacts {
  /** The upstream's HTTP status. */
  status?: number;
  /** The usage so far (a stream's object may be updated in place as events arrive). */
  usage?: Usage;
  stopReason?: string | null;
  /** The first byte of the reply went to the client now. */
  firstByte?: boolean;
}

/** Record what a reply showed on the request's context: the one place every upstream route reports it. */
export function recordReply(ctx: RequestContext, facts: ReplyFacts): void {
  if (facts.status !== undefined) ctx.upstreamStatus = facts.status;
  if (facts.usage !== undefined) ctx.usage = facts.usage;
  if (facts.stopReason !== undefined) ctx.stopReason = facts.stopReason;
  if (facts.firstByte) ctx.firstByteMs ??= Number(process.hrtime.bigint() - ctx.startedAt) / 1e6;
}
