/** Thrown when a configuration is missing, unparsable or invalid. The message names the field. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
