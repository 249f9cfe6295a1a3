/**
 * People and teams (config `auth.oidc`, `auth.sessionTtl`, `teams[]`): who may sign in to the
 * dashboard and the admin API through the company's identity provider, and the teams whose members'
 * keys share a policy and caps. Resolved once at start and at each reload; lib/people/ acts on them.
 */
import { ConfigError } from './config-error';

/** OpenID Connect relying-party settings (config `auth.oidc`). */
export interface OidcConfig {
  /** The issuer's URL (discovery: `<issuer>/.well-known/openid-configuration`). */
  issuer: string;
  clientId: string;
  /** Name of the env variable holding the client secret; null: a public client (PKCE only). */
  clientSecretEnv: string | null;
  /** The client secret read from that variable at start (never logged); null: a public client. */
  clientSecret: string | null;
  /** Scopes asked for; always holds `openid`. Default `["openid", "email", "profile"]`. */
  scopes: string[];
  /** The ID-token (or userinfo) claim holding the user's groups. Default `groups`. */
  groupsClaim: string;
  /** Members of any of these groups are organisation admins (`org-admin`). */
  adminGroups: string[];
}

/** Sign-in settings (config `auth`). */
export interface AuthConfig {
  /** Null: no single sign-on; the admin API and dashboard take ADMIN_TOKEN only, as before. */
  oidc: OidcConfig | null;
  /** How long a signed-in session lasts, in seconds. Default 8 h (`auth.sessionTtl`, e.g. `"8h"` or 28800). */
  sessionTtlSeconds: number;
}

/** One team (config `teams[]`, or made through the admin API). */
export interface TeamConfig {
  /** `[A-Za-z0-9._-]{1,64}`. */
  id: string;
  name: string;
  /** Identity-provider groups whose members belong to this team (refreshed at each sign-in). */
  oidcGroups: string[];
  /** Identity-provider groups whose members administer this team (`team-admin`). */
  adminGroups: string[];
  /** The team's own cap: credits per UTC month over all its members' keys; null: none. */
  monthlyCreditCap: number | null;
  /** Each member's cap by default (credits per UTC month over the member's keys); null: none. */
  memberMonthlyCreditCap: number | null;
  /** Catalogue IDs the team's keys may use; null: every model. */
  allowedModels: string[] | null;
  /** Default requests per minute of its members' keys; null: `defaults.rateLimitPerMinute`. */
  rateLimitPerMinute: number | null;
  /**
   * Members' own caps (OIDC subject -> credits per UTC month), set through the admin API
   * (`PATCH /admin/v1/teams/{id}/members/{subject}`), never in config.json; each replaces
   * `memberMonthlyCreditCap` for that member. Absent: none.
   */
  memberCaps?: Readonly<Record<string, number>>;
}

/**
 * A team's fields besides its id and members' caps: what config.json and `PATCH /admin/v1/teams/{id}`
 * set, and what an audit entry of a team's change compares (lib/audit/config-audit.ts, lib/admin/team-routes.ts).
 */
export const TEAM_FIELDS = ['name', 'oidcGroups', 'adminGroups', 'monthlyCreditCap', 'memberMonthlyCreditCap', 'allowedModels', 'rateLimitPerMinute'] as const satisfies ReadonlyArray<keyof TeamConfig>;

const ID_PATTERN = '^[A-Za-z0-9._-]{1,64}$';
const groups = { type: 'array', items: { type: 'string', minLength: 1 } } as const;
const cap = { type: ['number', 'null'], minimum: 0 } as const;

/** JSON schema of config `auth`. */
export const authSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    sessionTtl: { anyOf: [{ type: 'integer', minimum: 60 }, { type: 'string', pattern: '^[0-9]+(s|m|h|d)$' }] },
    oidc: {
      type: 'object',
      required: ['issuer', 'clientId'],
      additionalProperties: false,
      properties: {
        issuer: { type: 'string', pattern: '^https?://' },
        clientId: { type: 'string', minLength: 1 },
        clientSecretEnv: { type: 'string', minLength: 1 },
        scopes: { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
        groupsClaim: { type: 'string', minLength: 1 },
        adminGroups: groups,
      },
    },
  },
} as const;

/** JSON schema of one team (config `teams[]` and the admin API's create). */
export const teamSchema = {
  type: 'object',
  required: ['id'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', pattern: ID_PATTERN },
    name: { type: 'string' },
    oidcGroups: groups,
    adminGroups: groups,
    monthlyCreditCap: cap,
    memberMonthlyCreditCap: cap,
    allowedModels: { type: ['array', 'null'], items: { type: 'string', minLength: 1 } },
    rateLimitPerMinute: { type: ['integer', 'null'], minimum: 1 },
  },
} as const;

/**
 * A team's fields as JSON in one fixed order (the stores keep and compare teams in this form), without
 * `memberCaps` (kept apart, lib/store/people-types.ts).
 */
export function formatTeam(team: TeamConfig): string {
  const { id, name, oidcGroups, adminGroups, monthlyCreditCap, memberMonthlyCreditCap, allowedModels, rateLimitPerMinute } = team;
  return JSON.stringify({ id, name, oidcGroups, adminGroups, monthlyCreditCap, memberMonthlyCreditCap, allowedModels, rateLimitPerMinute });
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/**
 * Resolve config `auth` (already shape-checked); the client secret is read from `env`.
 * @throws ConfigError when the session lifetime is under a minute
 */
export function resolveAuth(raw: Record<string, any> | undefined, env: Record<string, string | undefined> = {}): AuthConfig {
  const ttl = raw?.sessionTtl ?? '8h';
  const sessionTtlSeconds = typeof ttl === 'number' ? ttl : Number(ttl.slice(0, -1)) * UNIT_SECONDS[ttl.slice(-1)];
  if (sessionTtlSeconds < 60) throw new ConfigError(`invalid configuration: auth.sessionTtl: "${ttl}" is under a minute`);
  const oidc = raw?.oidc;
  return {
    sessionTtlSeconds,
    oidc: oidc ? {
      issuer: String(oidc.issuer).replace(/\/+$/, ''),
      clientId: oidc.clientId,
      clientSecretEnv: oidc.clientSecretEnv ?? null,
      clientSecret: oidc.clientSecretEnv ? env[oidc.clientSecretEnv] || null : null,
      scopes: [...new Set(['openid', ...(oidc.scopes ?? ['email', 'profile'])])],
      groupsClaim: oidc.groupsClaim ?? 'groups',
      adminGroups: oidc.adminGroups ?? [],
    } : null,
  };
}

/**
 * Resolve one team (already shape-checked) with its defaults.
 * @param where the field's path for messages, e.g. `teams.0`
 * @throws ConfigError when it names a model that is not in the catalogue
 */
export function resolveTeam(raw: Record<string, any>, where: string, modelIds: ReadonlySet<string>): TeamConfig {
  for (const model of raw.allowedModels ?? []) {
    if (!modelIds.has(model)) throw new ConfigError(`invalid configuration: ${where}.allowedModels: "${model}" is not a catalogue model id`);
  }
  return {
    id: raw.id,
    name: raw.name ?? raw.id,
    oidcGroups: raw.oidcGroups ?? [],
    adminGroups: raw.adminGroups ?? [],
    monthlyCreditCap: raw.monthlyCreditCap ?? null,
    memberMonthlyCreditCap: raw.memberMonthlyCreditCap ?? null,
    allowedModels: raw.allowedModels ?? null,
    rateLimitPerMinute: raw.rateLimitPerMinute ?? null,
  };
}

/**
 * Resolve config `teams` (already shape-checked).
 * @throws ConfigError on a duplicate id or an unknown model
 */
export function resolveTeams(raw: Array<Record<string, any>> | undefined, modelIds: ReadonlySet<string>): TeamConfig[] {
  const teams: TeamConfig[] = [];
  (raw ?? []).forEach((entry, index) => {
    if (teams.some((team) => team.id === entry.id)) throw new ConfigError(`invalid configuration: teams.${index}.id: duplicate id "${entry.id}"`);
    teams.push(resolveTeam(entry, `teams.${index}`, modelIds));
  });
  return teams;
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * Refuse at start a sign-in set-up that would be unsafe or cannot work: `auth.oidc` needs `baseUrl`
 * (the redirect URI is `<baseUrl>/dashboard/callback`), served over https (the session cookie is then
 * `Secure`) or plain http on a loopback host only; the issuer likewise; and the env variable named by
 * `clientSecretEnv` must be set.
 * @throws ConfigError saying how to fix it
 */
export function checkSignIn(auth: AuthConfig, baseUrl: string | null): void {
  const { oidc } = auth;
  if (!oidc) return;
  if (!baseUrl) throw new ConfigError('invalid configuration: auth.oidc needs baseUrl: the provider redirects to <baseUrl>/dashboard/callback');
  const plainRemote = (url: string) => {
    const { protocol, hostname } = new URL(url);
    return protocol !== 'https:' && !(protocol === 'http:' && LOOPBACK_HOSTS.has(hostname));
  };
  if (plainRemote(baseUrl)) {
    throw new ConfigError(`invalid configuration: baseUrl: "${baseUrl}" must be https with auth.oidc (session cookies are Secure); plain http is allowed only on a loopback host (127.0.0.1, localhost, [::1])`);
  }
  if (plainRemote(oidc.issuer)) {
    throw new ConfigError(`invalid configuration: auth.oidc.issuer: "${oidc.issuer}" must be https; plain http is allowed only on a loopback host`);
  }
  if (oidc.clientSecretEnv !== null && !oidc.clientSecret) {
    throw new ConfigError(`invalid configuration: auth.oidc.clientSecretEnv names env ${oidc.clientSecretEnv}, which is not set (or leave clientSecretEnv out for a public client)`);
  }
}
