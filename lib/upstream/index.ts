/** The upstream client and its parts (see client.ts). */
export * from './attempt';
export * from './client';
export { createCredentialRotation, type CredentialRotation, type UpstreamCredential } from './credentials';
export { createUpstreamPool, type UpstreamPool, type UpstreamPoolOptions } from './pool';
export { parseRetryAfter, RETRYABLE_STATUSES } from './retry-policy';
