/** The upstream client and its parts (see client.ts); sending for a client is in exchange.ts, the reply path every route shares in reply.ts. */
export * from './attempt';
export * from './client';
export { createCredentialRotation, type CredentialRotation, type UpstreamCredential } from './credentials';
export { createUpstreamPool, targetOptionsOf, type KeyGroupUpstreamStatus, type PooledUpstream, type UpstreamPool, type UpstreamPoolOptions } from './pool';
export { isOutcomeUnknown, parseRetryAfter, RETRYABLE_STATUSES } from './retry-policy';
export type { TargetCounters, TargetStatus, UpstreamTarget, UpstreamTargetOptions } from './target';
export { MAX_SESSIONS, type UpstreamRoute } from './target-choice';
export type { TargetState } from './target-health';
