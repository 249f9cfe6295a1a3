/** How the Redis store reads what its scripts and hashes hold: key records, usage totals, script errors. */
import { fromCreditUnits } from './credits';
import type { KeyRecord, UsageTotals } from './types';

const USAGE_FIELDS = ['inputTokens', 'outputTokens', 'cacheCreationInputTokens', 'cacheReadInputTokens', 'credits', 'requests'] as const;

/** The usage totals per model of one `{<keyId>}:usage:<month>` hash (fields `<model>|<total>`; credits in credit units). */
export function decodeUsage(fields: Record<string, string>): UsageTotals[] {
  const byModel = new Map<string, UsageTotals>();
  for (const [field, value] of Object.entries(fields)) {
    const cut = field.lastIndexOf('|');
    const model = field.slice(0, cut);
    const name = field.slice(cut + 1) as (typeof USAGE_FIELDS)[number];
    if (!USAGE_FIELDS.includes(name)) continue;
    const totals = byModel.get(model) ?? {
      model, inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0, credits: 0, requests: 0,
    };
    totals[name] = name === 'credits' ? fromCreditUnits(Number(value)) : Number(value);
    byModel.set(model, totals);
  }
  return [...byModel.values()];
}

/** The fields of a key record the `{<id>}:key` hash holds, each JSON-encoded. */
const RECORD_FIELDS: Array<keyof KeyRecord> = [
  'id', 'name', 'last4', 'createdAt', 'revoked', 'rateLimitPerMinute', 'allowedModels', 'monthlyCreditCap', 'keyGroup',
  'declaredIn', 'fileRevoked', 'revokedAtRunTime', 'team', 'owner',
];

/** A key record as a flat `field, value, ...` list of JSON-encoded values (decodeRecord reads it back). */
export function encodeRecord(record: KeyRecord): string[] {
  return RECORD_FIELDS.flatMap((field) => (record[field] === undefined ? [] : [field, JSON.stringify(record[field])]));
}

/** A key record from a flat `field, value, ...` list of JSON-encoded values. */
export function decodeRecord(flat: string[]): KeyRecord {
  const record: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    // `version` counts changes to the record (the admission checks it); it is not a record field.
    if (flat[i] !== 'version') record[flat[i]] = JSON.parse(flat[i + 1]);
  }
  return record as unknown as KeyRecord;
}

/** Script error replies as the errors the store interface promises. */
export function translateScriptError(err: unknown, id: string): Error {
  const message = String((err as Error)?.message ?? err).replace(/^ERR /, '');
  if (message === 'exists') return new Error(`key "${id}" already exists`);
  if (message === 'missing') return new Error(`key "${id}" does not exist`);
  if (message === 'secret in use') return new Error('that secret is already in use');
  return err as Error;
}

/** A Redis URL with its password replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(unparsable URL)';
  }
}
