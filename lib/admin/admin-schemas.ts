/**
 * Request bodies of the admin API, as JSON schemas compiled once with ajv. A failure is a 400 whose
 * message names the field and says what is allowed.
 */
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { errors } from '../http/errors';
import { describeValidationError } from '../../middleware/validate-body';
import { teamSchema } from '../config/people';

/** Longest grace period a rotation may give the old secret: 30 days, in seconds. */
export const MAX_GRACE_PERIOD_SECONDS = 30 * 24 * 3600;
/** Grace period of a rotation that names none: 24 hours, in seconds. */
export const DEFAULT_GRACE_PERIOD_SECONDS = 24 * 3600;

/** `POST /admin/v1/keys`. */
export interface CreateKeyBody {
  id?: string;
  /** Key group (prefix family) of the new key. Default: the basic group `default`. */
  keyGroup?: string;
  name: string;
  rateLimitPerMinute?: number;
  allowedModels?: string[] | null;
  monthlyCreditCap?: number | null;
  /** Budget alert thresholds, percent of the monthly credit cap; null/absent: the config's `alerts.thresholds`. */
  alertThresholds?: number[] | null;
  /** The team (config `teams[]`) the key belongs to: its policy bounds the key's models and cap, its caps hold it; null: none. */
  team?: string | null;
  /** The member (OIDC subject) the key belongs to; null: none. */
  owner?: string | null;
}

/** `PATCH /admin/v1/keys/:id`: at least one field. */
export type PatchKeyBody = Partial<Omit<CreateKeyBody, 'id' | 'keyGroup'>>;

/** `POST /admin/v1/me/keys`: the caller's own key; its team defaults to their only team. */
export type CreateOwnKeyBody = Partial<Omit<CreateKeyBody, 'id' | 'keyGroup' | 'owner'>>;

/** `POST /admin/v1/teams/:id/members`: a member added by email (providers without groups). */
export interface AddMemberBody {
  email: string;
}

/** `POST /admin/v1/teams`: a team as config.json's `teams[]` writes it (lib/config/people.ts); only `id` is required. */
export interface CreateTeamBody {
  id: string;
  name?: string;
  oidcGroups?: string[];
  adminGroups?: string[];
  monthlyCreditCap?: number | null;
  memberMonthlyCreditCap?: number | null;
  allowedModels?: string[] | null;
  rateLimitPerMinute?: number | null;
}

/** `PATCH /admin/v1/teams/:id`: at least one field; never `id`. */
export type PatchTeamBody = Partial<Omit<CreateTeamBody, 'id'>>;

/** `PATCH /admin/v1/teams/:id/members/:subject`: the member's own cap, credits per UTC month; null: the team's default again. */
export interface MemberCapBody {
  monthlyCreditCap: number | null;
}

/** `POST /admin/v1/keys/:id/rotate`. */
export interface RotateKeyBody {
  /** Seconds the old secret keeps working. Default 86400 (24 h); 0 ends it at once. */
  gracePeriodSeconds?: number;
}

export interface AdminValidators {
  createKey(body: unknown): CreateKeyBody;
  patchKey(body: unknown): PatchKeyBody;
  createOwnKey(body: unknown): CreateOwnKeyBody;
  addMember(body: unknown): AddMemberBody;
  rotateKey(body: unknown): RotateKeyBody;
  createTeam(body: unknown): CreateTeamBody;
  patchTeam(body: unknown): PatchTeamBody;
  setMemberCap(body: unknown): MemberCapBody;
  /** Revocation (and its undoing, restore) takes no fields; an empty object (or no body) is accepted. */
  revokeKey(body: unknown): Record<string, never>;
}

/** The editable fields of a key. Whether `allowedModels` names catalogue IDs is checked per request (see `checkAllowedModels`). */
function keyFieldSchemas(): Record<string, object> {
  return {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    rateLimitPerMinute: { type: 'integer', minimum: 1, maximum: 1_000_000 },
    allowedModels: { type: ['array', 'null'], minItems: 1, uniqueItems: true, items: { type: 'string', minLength: 1 } },
    monthlyCreditCap: { type: ['number', 'null'], minimum: 0 },
    alertThresholds: { type: ['array', 'null'], minItems: 1, maxItems: 10, uniqueItems: true, items: { type: 'integer', minimum: 1, maximum: 100 } },
  };
}

/** A key's team and member (organisation admins' create and patch): null takes the key out. */
const KEY_PLACE_SCHEMAS = {
  team: { type: ['string', 'null'], pattern: '^[A-Za-z0-9._-]{1,64}$' },
  owner: { type: ['string', 'null'], minLength: 1, maxLength: 255 },
};

/** One readable sentence for an ajv error of an admin body. */
export function describeAdminValidationError(error: ErrorObject, schema: { properties?: Record<string, unknown> }): string {
  const allowed = Object.keys(schema.properties ?? {}).join(', ') || 'none';
  if (error.keyword === 'additionalProperties') {
    const where = error.instancePath ? `${error.instancePath.slice(1).replace(/\//g, '.')}: ` : '';
    return `${where}unknown field "${String(error.params.additionalProperty)}" (fields: ${allowed})`;
  }
  if (error.keyword === 'minProperties') return `give at least one field to change (fields: ${allowed})`;
  if (error.keyword === 'uniqueItems') return `${error.instancePath.slice(1)}: lists a model twice`;
  return describeValidationError(error).message;
}

/**
 * 400 unless every entry of `allowedModels` is a catalogue ID of the key's group, `modelIds` (aliases
 * are not: a whitelist names canonical models, so it does not move when an alias is repointed).
 */
export function checkAllowedModels(allowedModels: string[] | null | undefined, modelIds: readonly string[], keyGroup = 'default'): void {
  const unknown = (allowedModels ?? []).find((model) => !modelIds.includes(model));
  if (unknown !== undefined) {
    throw errors.invalidRequest(
      `allowedModels: "${unknown.slice(0, 100)}" is not a catalogue model id of key group "${keyGroup}"; choose from ${modelIds.join(', ')} (GET /admin/v1/models)`,
    );
  }
}

/** Compile the admin body validators. Each returns the body or throws a 400 GatewayError. */
export function createAdminValidators(): AdminValidators {
  const ajv = new Ajv({ allErrors: false, strict: true });
  const fields = keyFieldSchemas();
  const team = { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' };
  const schemas = {
    createKey: {
      type: 'object', additionalProperties: false, required: ['name'],
      properties: { id: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' }, keyGroup: { type: 'string', minLength: 1, maxLength: 64 }, ...fields, ...KEY_PLACE_SCHEMAS },
    },
    createOwnKey: { type: 'object', additionalProperties: false, properties: { ...fields, team } },
    addMember: {
      type: 'object', additionalProperties: false, required: ['email'],
      properties: { email: { type: 'string', minLength: 3, maxLength: 320, pattern: '^[^@\\s]+@[^@\\s]+$' } },
    },
    patchKey: { type: 'object', additionalProperties: false, minProperties: 1, properties: { ...fields, ...KEY_PLACE_SCHEMAS } },
    rotateKey: {
      type: 'object', additionalProperties: false,
      properties: { gracePeriodSeconds: { type: 'integer', minimum: 0, maximum: MAX_GRACE_PERIOD_SECONDS } },
    },
    revokeKey: { type: 'object', additionalProperties: false, properties: {} },
    // A team's fields as config.json's (one schema for both), a name of at most 100 characters.
    createTeam: { ...teamSchema, properties: { ...teamSchema.properties, name: { type: 'string', minLength: 1, maxLength: 100 } } },
    patchTeam: { type: 'object', additionalProperties: false, minProperties: 1, properties: (({ id: _id, ...rest }) => ({ ...rest, name: { type: 'string', minLength: 1, maxLength: 100 } }))(teamSchema.properties) },
    setMemberCap: { type: 'object', additionalProperties: false, required: ['monthlyCreditCap'], properties: { monthlyCreditCap: { type: ['number', 'null'], minimum: 0 } } },
  };
  const compile = <T>(schema: { properties?: Record<string, unknown> }) => {
    const validate: ValidateFunction = ajv.compile(schema);
    return (body: unknown): T => {
      if (validate(body)) return body as T;
      const error = validate.errors![0];
      if (error.instancePath === '' && error.keyword === 'type') throw errors.invalidRequest('request body must be a JSON object');
      throw errors.invalidRequest(describeAdminValidationError(error, schema));
    };
  };
  return {
    createKey: compile<CreateKeyBody>(schemas.createKey),
    patchKey: compile<PatchKeyBody>(schemas.patchKey),
    createOwnKey: compile<CreateOwnKeyBody>(schemas.createOwnKey),
    addMember: compile<AddMemberBody>(schemas.addMember),
    rotateKey: compile<RotateKeyBody>(schemas.rotateKey),
    revokeKey: compile<Record<string, never>>(schemas.revokeKey),
    createTeam: compile<CreateTeamBody>(schemas.createTeam),
    patchTeam: compile<PatchTeamBody>(schemas.patchTeam),
    setMemberCap: compile<MemberCapBody>(schemas.setMemberCap),
  };
}
