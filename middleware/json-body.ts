/**
 * JSON body: POST bodies must be `application/json` (415 otherwise) and at most `limitBytes` (413);
 * bodies that are not JSON get 400. Parsed once, by express.json.
 */
import express, { type RequestHandler } from 'express';
import { errors, GatewayError } from '../lib/errors';

export interface JsonBodyOptions {
  /** Largest accepted body, in bytes. */
  limitBytes: number;
}

/** Map a body-parser failure to the gateway error the client sees. */
export function mapBodyParserError(err: { type?: string; status?: number; message?: string }, limitBytes: number): GatewayError {
  switch (err.type) {
    case 'entity.too.large':
      return errors.tooLarge(`request body is larger than the limit of ${limitBytes} bytes`);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return errors.unsupportedMediaType('request body must be UTF-8 JSON (content-type: application/json)');
    case 'request.aborted':
    case 'request.size.invalid':
      return errors.invalidRequest('request body was incomplete');
    default:
      return errors.invalidRequest('request body is not valid JSON');
  }
}

/** `application/json`, optionally with parameters such as `; charset=utf-8`. */
const JSON_TYPE = /^\s*application\/json\s*(;|$)/i;

export function createJsonBody(options: JsonBodyOptions): RequestHandler {
  const parse = express.json({ limit: options.limitBytes, strict: false, type: () => true });
  return (req, res, next) => {
    if (req.method !== 'POST') return next();
    if (!JSON_TYPE.test(req.headers['content-type'] ?? '')) {
      return next(errors.unsupportedMediaType('POST requests must have content-type: application/json'));
    }
    parse(req, res, (err?: unknown) => {
      if (err) return next(mapBodyParserError(err as { type?: string }, options.limitBytes));
      if (req.body === undefined) return next(errors.invalidRequest('request body is empty; a JSON object is required'));
      next();
    });
  };
}
