/**
 * A request a translator cannot convert: the client's mistake, named by the field at fault. The route
 * answers it as a 400 in its own error shape (lib/http/errors.ts `fromTranslationError`).
 */
export class TranslationError extends Error {
  /** The field at fault, as a path into the request body, e.g. `messages[2].content[0].image_url.url`. */
  readonly param: string;

  constructor(message: string, param: string) {
    super(message);
    this.name = 'TranslationError';
    this.param = param;
  }
}
