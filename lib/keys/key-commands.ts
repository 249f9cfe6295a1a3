/**
 * The key CLI's commands (`npm run keys -- <command>`), run against a store: by the CLI itself, or by
 * the running gateway that owns the in-memory store's state file, for a CLI that reached it through
 * its key channel (key-control.ts). Output goes through `CliIo`, so either can print it.
 */
import { parseArgs } from 'node:util';
import type { GatewayConfig } from '../config';
import { DEVELOPMENT_KEY_RETIRED, retireDevelopmentKey } from './development-key';
import {
  createApiKey, DEFAULT_ROTATION_GRACE_MS, restoreApiKey, revokeApiKey, rotateApiKey, setKeyLimits,
} from '../store/key-admin';
import { isUtcMonth, utcMonth } from '../store/month';
import type { GatewayStore, KeyPatch, KeyRecord } from '../store/types';
import { changedFields, recordAudit } from '../audit/audit-log';

/**
 * Record a change the CLI made in the audit log, actor `cli` (whether it ran here on the store or in
 * the gateway that owns the state file, key-control.ts), with no address: it came from this machine.
 */
async function auditCli(store: GatewayStore, io: CliIo, action: string, key: KeyRecord, change: { before?: Record<string, unknown>; after?: Record<string, unknown> } = {}): Promise<void> {
  try {
    await recordAudit(store, { actor: 'cli', action, object: { type: 'key', id: key.id }, team: key.team ?? null, ip: null, ...change });
  } catch (err) {
    // The change is made: it is reported (a new secret shown once) and the missing entry named, as config-audit.ts does.
    io.stderr(`warning: ${action} of key ${key.id} is done, but its audit log entry was not written: ${(err as Error).message}\n`);
  }
}

export const USAGE = `usage: npm run keys -- <command> [options]

  create [--id ID] [--name NAME] [--rate-limit N] [--models ID,ID|all] [--cap CREDITS|none]
  list [--month YYYY-MM]
  rotate ID [--grace DURATION]      old secret keeps working for DURATION (default 24h; 0, 90s, 30m, 12h, 7d)
  revoke ID
  restore ID                        undo a revocation
  set-limits ID [--rate-limit N] [--models ID,ID|all] [--cap CREDITS|none] [--name NAME]
  usage ID [--month YYYY-MM]        this month's usage per model (UTC)

  --json                            machine-readable output
Store: Redis when REDIS_URL is set (keys under REDIS_PREFIX), else the in-memory store: through the
gateway running on its state file (GATEWAY_STATE_FILE, default .gateway-usage.json), else that file.
Keys declared in config.json take their secret and limits from the file: change them there.
`;

/** A mistake in the command line itself (exit status 2). */
export class UsageError extends Error {}

export interface CliIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

const OPTIONS = {
  id: { type: 'string' },
  name: { type: 'string' },
  'rate-limit': { type: 'string' },
  models: { type: 'string' },
  cap: { type: 'string' },
  grace: { type: 'string' },
  month: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/**
 * Parse a duration: a number with unit `ms`, `s`, `m`, `h` or `d`, or a bare `0`.
 * @returns milliseconds
 * @throws UsageError on anything else
 */
export function parseDuration(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(text.trim());
  if (!match || (match[2] === undefined && Number(match[1]) !== 0)) {
    throw new UsageError(`"${text}" is not a duration: use e.g. 0, 90s, 30m, 12h or 7d`);
  }
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[match[2] ?? 'ms']!;
  return Math.round(Number(match[1]) * unit);
}

/** A command line parsed: the command, its key id, any further positional argument (refused), the options. */
export interface KeysCommandLine {
  command?: string;
  id?: string;
  extra: string[];
  values: Values;
}

/**
 * What a command came to: its exit status (0 done, 1 refused, 2 bad usage), whether it changed the
 * store, and the command line as parsed (undefined when `argv` was not one).
 */
export interface CommandOutcome {
  status: number;
  changed: boolean;
  line?: KeysCommandLine;
}

/**
 * Parse a command line: the one parser of a key command, whether the CLI runs it or the gateway it
 * reached through its key channel does.
 * @throws UsageError when it is not one
 */
export function parseCommandLine(argv: string[]): KeysCommandLine {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const [command, id, ...extra] = parsed.positionals;
  return { command, id, extra, values: parsed.values };
}

/**
 * Run one command line against `store`, with `config` (the catalogue, the key groups, the defaults).
 * @param argv the command line, or what parseCommandLine made of it (the CLI has parsed it already)
 */
export async function executeKeysCommand(argv: string[] | KeysCommandLine, store: GatewayStore, config: GatewayConfig, io: CliIo): Promise<CommandOutcome> {
  let line: KeysCommandLine | undefined;
  try {
    line = Array.isArray(argv) ? parseCommandLine(argv) : argv;
    const { command, id, extra, values } = line;
    if (values.help || !command) {
      (values.help ? io.stdout : io.stderr)(USAGE);
      return { status: values.help ? 0 : 2, changed: false, line };
    }
    if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0]}"`);
    return { status: 0, changed: await runCommand(store, config, command, id, values, io), line };
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`${err.message}\n\n${USAGE}`);
      return { status: 2, changed: false, line };
    }
    io.stderr(`${(err as Error).message}\n`);
    return { status: 1, changed: false, line };
  }
}

export interface Values {
  id?: string;
  name?: string;
  'rate-limit'?: string;
  models?: string;
  cap?: string;
  grace?: string;
  month?: string;
  json?: boolean;
  help?: boolean;
}

/** @returns whether the store changed */
async function runCommand(store: GatewayStore, config: GatewayConfig, command: string, id: string | undefined, values: Values, io: CliIo): Promise<boolean> {
  const print = (human: string, json: unknown) => io.stdout(values.json ? `${JSON.stringify(json, null, 2)}\n` : `${human}\n`);
  const requireId = () => {
    if (!id) throw new UsageError(`"${command}" needs a key id`);
    return id;
  };
  switch (command) {
    case 'create': {
      if (id) throw new UsageError('give the id of a new key as --id ID');
      const limits = parseLimits(values, config);
      const issued = await createApiKey(store, {
        id: values.id,
        name: values.name,
        rateLimitPerMinute: limits.rateLimitPerMinute ?? config.defaults.rateLimitPerMinute,
        allowedModels: limits.allowedModels ?? null,
        monthlyCreditCap: limits.monthlyCreditCap ?? null,
      });
      await auditCli(store, io, 'key.create', issued.key, { after: {
        name: issued.key.name, keyGroup: issued.key.keyGroup, rateLimitPerMinute: issued.key.rateLimitPerMinute,
        allowedModels: issued.key.allowedModels, monthlyCreditCap: issued.key.monthlyCreditCap,
      } });
      print(`created key ${issued.key.id}\n${describeKey(issued.key)}\n\nsecret (shown once, store it now):\n  ${issued.secret}`, issued);
      if (await retireDevelopmentKey(store)) io.stderr(`${DEVELOPMENT_KEY_RETIRED}\n`);
      return true;
    }
    case 'list': {
      const month = parseMonth(values.month);
      const keys = await store.listKeys();
      const rows = await Promise.all(keys.map(async (key) => ({ ...key, month, spent: await store.getMonthSpend(key.id, month) })));
      print(rows.length === 0 ? 'no keys' : rows.map((row) => `${describeKey(row)}\n  spent in ${month}: ${row.spent} credits`).join('\n\n'), rows);
      return false;
    }
    case 'rotate': {
      const grace = values.grace === undefined ? DEFAULT_ROTATION_GRACE_MS : parseDuration(values.grace);
      const keyId = requireId();
      // The new secret carries the prefix of the key's own key group, or it would not authenticate.
      const keyGroup = (await store.getKey(keyId))?.keyGroup;
      const prefix = config.keyGroups.find((group) => group.id === keyGroup)?.keyPrefix;
      const issued = await rotateApiKey(store, keyId, grace, undefined, prefix);
      const until = new Date(Date.now() + grace).toISOString();
      await auditCli(store, io, 'key.rotate', issued.key, { after: { gracePeriodSeconds: grace / 1000 } });
      print(`rotated key ${issued.key.id}: the previous secret works until ${until}\n\nnew secret (shown once, store it now):\n  ${issued.secret}`,
        { ...issued, previousSecretExpiresAt: until });
      return true;
    }
    case 'revoke':
    case 'restore': {
      const before = await store.getKey(requireId());
      const key = await (command === 'revoke' ? revokeApiKey : restoreApiKey)(store, requireId());
      // A revoke of a revoked key changes nothing (as on the admin API), but one the file made is now a run-time one too.
      if (before?.revoked !== key.revoked || (before?.revokedAtRunTime ?? false) !== (key.revokedAtRunTime ?? false)) {
        await auditCli(store, io, `key.${command}`, key, { before: { revoked: before?.revoked ?? null }, after: { revoked: key.revoked } });
      }
      print(`${command === 'revoke' ? 'revoked' : 'restored'} key ${key.id}`, key);
      return true;
    }
    case 'set-limits': {
      const patch = parseLimits(values, config);
      if (values.name !== undefined) patch.name = values.name;
      if (Object.keys(patch).length === 0) throw new UsageError('set-limits needs at least one of --rate-limit, --models, --cap, --name');
      const current = await store.getKey(requireId());
      const key = await setKeyLimits(store, requireId(), patch);
      await auditCli(store, io, 'key.update', key, current ? changedFields(current, key, Object.keys(patch)) : { after: { ...patch } });
      print(`updated key ${key.id}\n${describeKey(key)}`, key);
      return true;
    }
    case 'usage': {
      const keyId = requireId();
      if (!(await store.getKey(keyId))) throw new Error(`key "${keyId}" does not exist`);
      const month = parseMonth(values.month);
      const usage = await store.getUsage(keyId, month);
      const spent = await store.getMonthSpend(keyId, month);
      const lines = usage.map((u) => `  ${u.model}: ${u.requests} requests, ${u.inputTokens} input + ${u.cacheCreationInputTokens} cache write + ` +
        `${u.cacheReadInputTokens} cache read + ${u.outputTokens} output tokens, ${u.credits} credits`);
      print(`usage of ${keyId} in ${month} (UTC): ${spent} credits\n${lines.join('\n') || '  none'}`, { id: keyId, month, spent, models: usage });
      return false;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

function parseLimits(values: Values, config: GatewayConfig): Pick<KeyPatch, 'rateLimitPerMinute' | 'allowedModels' | 'monthlyCreditCap' | 'name'> {
  const patch: Pick<KeyPatch, 'rateLimitPerMinute' | 'allowedModels' | 'monthlyCreditCap' | 'name'> = {};
  if (values['rate-limit'] !== undefined) {
    const rpm = Number(values['rate-limit']);
    if (!Number.isInteger(rpm) || rpm < 1) throw new UsageError('--rate-limit takes a whole number of requests per minute, 1 or more');
    patch.rateLimitPerMinute = rpm;
  }
  if (values.cap !== undefined) {
    const cap = values.cap === 'none' ? null : Number(values.cap);
    if (cap !== null && (!Number.isFinite(cap) || cap < 0 || values.cap.trim() === '')) throw new UsageError('--cap takes a number of credits (0 or more) or "none"');
    patch.monthlyCreditCap = cap;
  }
  if (values.models !== undefined) {
    if (values.models === 'all') {
      patch.allowedModels = null;
    } else {
      const models = values.models.split(',').map((m) => m.trim()).filter(Boolean);
      const known = new Set(config.models.map((m) => m.id));
      const unknown = models.filter((m) => !known.has(m));
      if (models.length === 0 || unknown.length > 0) {
        throw new UsageError(`--models takes catalogue IDs separated by commas, or "all"; not in the catalogue: ${unknown.join(', ') || '(none given)'}`);
      }
      patch.allowedModels = models;
    }
  }
  return patch;
}

function parseMonth(month: string | undefined): string {
  if (month === undefined) return utcMonth(Date.now());
  if (!isUtcMonth(month)) throw new UsageError(`--month takes YYYY-MM, not "${month}"`);
  return month;
}

function describeKey(key: KeyRecord): string {
  return [
    `${key.id}${key.name !== key.id ? ` (${key.name})` : ''}  ${key.last4 ? `...${key.last4}` : '(secret given as its hash)'}` +
      `${key.revoked ? '  REVOKED' : ''}${key.declaredIn ? `  (declared in ${key.declaredIn})` : ''}`,
    `  rate limit: ${key.rateLimitPerMinute}/min  models: ${key.allowedModels?.join(', ') ?? 'all'}  ` +
      `monthly credit cap: ${key.monthlyCreditCap ?? 'none'}`,
  ].join('\n');
}

