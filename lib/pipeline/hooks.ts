/**
 * Integrator hooks: code added at named points of the pipeline without forking it.
 *
 *   afterAuth       after the key is authenticated and, on routes with a JSON body, that body read
 *                   (every route that takes a key, /v1/models included)
 *   beforeUpstream  after every check (validation, alias, whitelist, key group, rate limit, credit
 *                   reservation), just before the request leaves for the upstream
 *   onResponse      once per request when its response has closed, after credit settlement, with the
 *                   final usage
 *
 * Hooks see a read-only view of the per-request context (`GatewayHookContext`); the one thing they may
 * add is tags (`setTag`), which travel to the usage record and the request's log line. A request hook
 * refuses a request by throwing (or rejecting with) a `GatewayError`: the gateway renders it in the
 * route's own error shape. Any other exception is a 500 (and is logged).
 */
import type { Request, RequestHandler, Response } from 'express';
import { priceUsage } from '../config/catalogue';
import { getContext, type RequestContext, type Usage } from './context';
import type { RouteFormat } from '../http/errors';

/** The read-only view of one request that hooks receive. Fields fill in as the pipeline advances. */
export interface GatewayHookContext {
  /** `req_...`; the same id as the reply's `request-id` header and the log lines of the request. */
  readonly requestId: string;
  /** Wire format of the route: `native` (/v1/messages*) or `chat` (/v1/chat/completions). */
  readonly routeFormat: RouteFormat;
  /** Route label, e.g. `POST /v1/messages`. */
  readonly route: string;
  /** Id of the authenticated key (never its secret); undefined before auth. */
  readonly keyId: string | undefined;
  /** Key group of the key (`default` for `sk-cs4-` keys); undefined before auth. */
  readonly keyGroup: string | undefined;
  /** The `model` the client sent (an ID or an alias); undefined before alias resolution. */
  readonly requestedModel: string | undefined;
  /** Canonical catalogue ID after alias resolution. */
  readonly model: string | undefined;
  /** The model name sent upstream. */
  readonly upstreamModel: string | undefined;
  /** Whether the client asked for an SSE reply. */
  readonly stream: boolean;
  /** Tags set so far (a copy). */
  readonly tags: Readonly<Record<string, string>>;
  /**
   * Attach a tag to this request's usage record and log line.
   * @param name 1-64 characters of `[A-Za-z0-9_.-]`
   * @param value a string of at most 256 characters
   * @throws TypeError on a bad name or value (a programming error: the request gets a 500)
   */
  setTag(name: string, value: string): void;
}

/** A request hook. `req.body` is the parsed JSON body (validated by `beforeUpstream`); do not modify it. */
export type RequestHook = (ctx: GatewayHookContext, req: Request) => void | Promise<void>;

/** The final facts of one request, as `onResponse` hooks receive them. */
export interface UsageRecord {
  requestId: string;
  route: string;
  routeFormat: RouteFormat;
  keyId: string | null;
  keyGroup: string | null;
  /** Canonical model ID; null when the request stopped before alias resolution. */
  model: string | null;
  upstreamModel: string | null;
  /** HTTP status sent to the client. */
  status: number;
  stream: boolean;
  /** Token counts (native naming); null when no upstream reply reported any. */
  usage: Usage | null;
  /** Credits the usage costs at the model's prices; null without usage. */
  credits: number | null;
  stopReason: string | null;
  /** Milliseconds from arrival to the response's close. */
  latencyMs: number;
  /** Milliseconds from arrival to the first byte of the reply body, when one was sent. */
  firstByteMs: number | null;
  /** True when the client went away before the reply was complete. */
  aborted: boolean;
  /** Id of the upstream target that served the request (`upstream.targets[].id`); null when none answered. */
  upstreamTarget: string | null;
  /**
   * The client's agent session (lib/observability/session-id.ts: Claude Code's or Codex's session header, the body's
   * `prompt_cache_key`, a Responses chain's root); null when none was sent or the request stopped before
   * the upstream. A client-supplied label: 1-128 characters of `A-Z a-z 0-9 . _ : -`.
   */
  sessionId: string | null;
  /** The agent or subagent the request came from, where the client says (same bounds); null otherwise. */
  agentId: string | null;
  tags: Record<string, string>;
}

/** A response hook: runs once per request, after settlement; failures are logged, never thrown. */
export type ResponseHook = (record: UsageRecord, ctx: GatewayHookContext) => void | Promise<void>;

/** The hook points. Each takes one function or several, run in order. */
export interface GatewayHooks {
  afterAuth?: RequestHook | RequestHook[];
  beforeUpstream?: RequestHook | RequestHook[];
  onResponse?: ResponseHook | ResponseHook[];
}

/** Resolved hooks: every point a list. */
export interface HookLists {
  afterAuth: RequestHook[];
  beforeUpstream: RequestHook[];
  onResponse: ResponseHook[];
}

const asList = <T>(value: T | T[] | undefined): T[] => (value === undefined ? [] : Array.isArray(value) ? value : [value]);

/** Merge several hook sets (e.g. one per example middleware) into lists, keeping their order. */
export function mergeHooks(sets: GatewayHooks | GatewayHooks[] | undefined): HookLists {
  const lists: HookLists = { afterAuth: [], beforeUpstream: [], onResponse: [] };
  for (const set of asList(sets)) {
    lists.afterAuth.push(...asList(set.afterAuth));
    lists.beforeUpstream.push(...asList(set.beforeUpstream));
    lists.onResponse.push(...asList(set.onResponse));
  }
  for (const [point, hooks] of Object.entries(lists)) {
    for (const hook of hooks as unknown[]) {
      if (typeof hook !== 'function') throw new TypeError(`hooks.${point}: every hook must be a function`);
    }
  }
  return lists;
}

const TAG_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** The read-only view of a context; reads are live (a field set later by the pipeline shows up). */
export function createHookContext(ctx: RequestContext): GatewayHookContext {
  return Object.freeze({
    get requestId() { return ctx.requestId; },
    get routeFormat() { return ctx.format; },
    get route() { return ctx.route; },
    get keyId() { return ctx.key?.id; },
    get keyGroup() { return ctx.keyGroup; },
    get requestedModel() { return ctx.requestedModel; },
    get model() { return ctx.model?.id; },
    get upstreamModel() { return ctx.model?.upstreamModel; },
    get stream() { return ctx.stream; },
    get tags() { return Object.freeze({ ...ctx.tags }); },
    setTag(name: string, value: string) {
      if (typeof name !== 'string' || !TAG_NAME.test(name)) throw new TypeError(`tag name "${String(name)}" must be 1-64 characters of [A-Za-z0-9_.-]`);
      if (typeof value !== 'string' || value.length > 256) throw new TypeError(`tag "${name}" must be a string of at most 256 characters`);
      ctx.tags[name] = value;
    },
  });
}

/**
 * A pipeline step that runs request hooks in order; the first that throws or rejects stops the
 * request with its error (rendered in the route's shape by the error handler).
 */
export function createHookStep(hooks: RequestHook[]): RequestHandler {
  return async (req, res, next) => {
    const view = createHookContext(getContext(res));
    try {
      for (const hook of hooks) await hook(view, req);
      next();
    } catch (err) {
      next(err);
    }
  };
}

/** The usage record of a finished request. */
export function createUsageRecord(ctx: RequestContext, res: Response): UsageRecord {
  const usage = ctx.usage ?? null;
  return {
    requestId: ctx.requestId,
    route: ctx.route,
    routeFormat: ctx.format,
    keyId: ctx.key?.id ?? null,
    keyGroup: ctx.keyGroup ?? null,
    model: ctx.model?.id ?? null,
    upstreamModel: ctx.model?.upstreamModel ?? null,
    status: res.statusCode,
    stream: ctx.stream,
    usage: usage ? { ...usage } : null,
    credits: usage && ctx.model ? priceUsage(ctx.model, usage) * (ctx.priceMultiplier ?? 1) : null,
    stopReason: ctx.stopReason ?? null,
    latencyMs: Number(process.hrtime.bigint() - ctx.startedAt) / 1e6,
    firstByteMs: ctx.firstByteMs ?? null,
    aborted: !res.writableFinished,
    upstreamTarget: ctx.upstreamTarget ?? null,
    sessionId: ctx.sessionId ?? null,
    agentId: ctx.agentId ?? null,
    tags: { ...ctx.tags },
  };
}
