/**
 * The upstream credentials of one client, used in turn. A credential the upstream rejected (401) or
 * rate-limited (429) rests for a while, and the others carry the traffic meanwhile.
 */
import { createHash } from 'node:crypto';

/** One upstream credential as the rotation hands it out. */
export interface UpstreamCredential {
  /** Position in the configured list (never the secret), for logs. */
  readonly index: number;
  /** `{ 'x-api-key': secret }` or `{ authorization: 'Bearer ...' }`; `{}` when no credential is configured. */
  readonly headers: Record<string, string>;
}

export interface CredentialRotation {
  /**
   * The next credential in turn, skipping resting ones (when all rest, the one that wakes first). With
   * `affinity`, the search starts at the credential that string hashes to, and the turn is not moved:
   * the same affinity gets the same credential while it is awake.
   */
  pick(affinity?: string): UpstreamCredential;
  /** Leave the credential at `index` out of the rotation until `untilMs` (epoch ms). */
  rest(index: number, untilMs: number): void;
  /** True when a credential other than `index` is not resting. */
  anotherAwake(index: number): boolean;
  /** `text` with every credential replaced by `[redacted]`; `text` itself when it holds none. */
  redact(text: string): string;
}

/** Shortest run of a credential's characters that counts as leaking it (a quoted prefix, a truncated echo). */
export const REDACTED_FRAGMENT_LENGTH = 12;

/**
 * `text` with `secret` replaced by `[redacted]`: the whole secret, its URL-encoded and base64 forms,
 * and any run of at least REDACTED_FRAGMENT_LENGTH of its consecutive characters (an upstream may quote
 * a key truncated or masked in the middle, `sk-abc...xyz`). A secret shorter than that is matched whole only.
 */
export function redactSecret(text: string, secret: string): string {
  let out = text;
  for (const form of new Set([secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64')])) {
    if (out.includes(form)) out = out.split(form).join('[redacted]');
  }
  const size = Math.min(REDACTED_FRAGMENT_LENGTH, secret.length);
  for (let start = 0; start + size <= secret.length; start++) {
    const window = secret.slice(start, start + size);
    for (let at = out.indexOf(window); at !== -1; at = out.indexOf(window, at)) {
      // Grow the match as far as the text keeps following the secret, both ways.
      let from = at;
      let offset = start;
      while (from > 0 && offset > 0 && out[from - 1] === secret[offset - 1]) {
        from -= 1;
        offset -= 1;
      }
      let to = at + size;
      let next = start + size;
      while (to < out.length && next < secret.length && out[to] === secret[next]) {
        to += 1;
        next += 1;
      }
      out = `${out.slice(0, from)}[redacted]${out.slice(to)}`;
      at = from + '[redacted]'.length;
    }
  }
  return out;
}

/**
 * {@link redactSecret} for one secret, prepared once: its encoded forms, and probes that let a text
 * holding no fragment of it pass after a few searches. Any run of REDACTED_FRAGMENT_LENGTH (12)
 * characters of the secret holds one of its 6-character blocks (cut at every 6th character) whole, so
 * a text holding none of them holds no fragment. Kept for speed: every reply header of the native
 * route is redacted, and the full search (one per 12-character window, about 100 for an API key)
 * cost each header value that many searches.
 * @returns `text` with the secret redacted, as redactSecret does
 */
export function createSecretRedaction(secret: string): (text: string) => string {
  const forms = [...new Set([secret, encodeURIComponent(secret), Buffer.from(secret).toString('base64')])];
  const half = Math.floor(REDACTED_FRAGMENT_LENGTH / 2);
  const probes: string[] = [];
  if (secret.length >= REDACTED_FRAGMENT_LENGTH) {
    for (let start = 0; start + half <= secret.length; start += half) probes.push(secret.slice(start, start + half));
  }
  return (text) => {
    let found = false;
    for (const form of forms) found ||= text.includes(form);
    for (let i = 0; i < probes.length && !found; i++) found = text.includes(probes[i]);
    return found ? redactSecret(text, secret) : text;
  };
}

/**
 * @param secrets the credentials; empty strings are ignored, and none sends no credential (the simulated upstream)
 * @param auth how a credential is sent: `x-api-key` (native upstreams) or `bearer` (chat-completions upstreams)
 * @param now clock, epoch ms
 */
export function createCredentialRotation(secrets: string[], auth: 'x-api-key' | 'bearer', now: () => number): CredentialRotation {
  const usable = secrets.filter((secret) => secret !== '');
  const redactions = usable.map(createSecretRedaction);
  // One credential object per secret, made once (the upstream client only reads them).
  const credentials: UpstreamCredential[] = usable.map((secret, index) => ({
    index, headers: (auth === 'bearer' ? { authorization: `Bearer ${secret}` } : { 'x-api-key': secret }) as Record<string, string>,
  }));
  const none: UpstreamCredential = { index: -1, headers: {} };
  const restingUntil = usable.map(() => 0);
  let turn = 0;
  return {
    pick(affinity?: string): UpstreamCredential {
      if (usable.length === 0) return none;
      const at = now();
      // One credential: no choice to make, so no hash of the affinity.
      const start = affinity === undefined || usable.length === 1 ? turn : createHash('sha256').update(affinity).digest().readUInt32BE(0) % usable.length;
      let chosen = -1;
      for (let step = 0; step < usable.length && chosen === -1; step++) {
        const index = (start + step) % usable.length;
        if (restingUntil[index] <= at) chosen = index;
      }
      if (chosen === -1) chosen = restingUntil.indexOf(Math.min(...restingUntil));
      if (affinity === undefined) turn = (chosen + 1) % usable.length;
      return credentials[chosen];
    },
    rest(index, untilMs) {
      if (index >= 0) restingUntil[index] = untilMs;
    },
    anotherAwake(index) {
      const at = now();
      return restingUntil.some((until, i) => i !== index && until <= at);
    },
    redact(text) {
      let out = text;
      for (const redaction of redactions) out = redaction(out);
      return out;
    },
  };
}
