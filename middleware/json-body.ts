/**
 * JSON body: POST bodies must be `application/json` (415 otherwise) and at most `limitBytes` (413);
 * bodies that are not JSON get 400. Parsed once, by express.json; the size as received goes on the
 * context (`bodyBytes`).
 */
import express, { type RequestHandler, type Response } from 'express';
import { bodyTooSlow, watchBodyRate } from '../lib/http/body-rate';
import { sendDeferredContinue } from '../lib/http/http-server';
import type { RequestContext } from '../lib/pipeline/context';
import { errors, GatewayError } from '../lib/http/errors';

export interface JsonBodyOptions {
  /** Largest accepted body, in bytes. */
  limitBytes: number;
  /** Slow-client guard window, in ms. Default 10000. */
  bodyTimeoutMs?: number;
  /** Bytes per second a body must average per window while incomplete (else 408); 0 turns it off. Default 1024. */
  minBytesPerSecond?: number;
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
  const parse = express.json({
    limit: options.limitBytes, strict: false, type: () => true,
    // The body as received: its size bounds the credit reservation, and the native proxy forwards
    // its bytes unchanged.
    verify: (_req, res, raw) => {
      const ctx = (res as Response).locals?.gateway as RequestContext | undefined;
      if (!ctx) return;
      ctx.bodyBytes = raw.length;
      ctx.rawBody = raw;
    },
  });
  const rate = { windowMs: options.bodyTimeoutMs ?? 10_000, minBytesPerSecond: options.minBytesPerSecond ?? 1024 };
  return function jsonBody(req, res, next) {
    if (req.method !== 'POST') return next();
    if (!JSON_TYPE.test(req.headers['content-type'] ?? '')) {
      return next(errors.unsupportedMediaType('POST requests must have content-type: application/json'));
    }
    // The key has been checked: a client waiting for `100 Continue` may now send its body.
    sendDeferredContinue(req, res);
    // The guard and the parser race; whichever settles first answers, the other is ignored.
    let settled = false;
    const stopWatch = watchBodyRate(req, rate, () => {
      if (settled) return;
      settled = true;
      next(bodyTooSlow(rate.minBytesPerSecond));
    });
    parse(req, res, (err?: unknown) => {
      stopWatch();
      if (settled) return;
      settled = true;
      if (err) return next(mapBodyParserError(err as { type?: string }, options.limitBytes));
      if (req.body === undefined) return next(errors.invalidRequest('request body is empty; a JSON object is required'));
      next();
    });
  };
}
