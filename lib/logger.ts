/** The winston logger: one JSON object per line on stdout. Never give it a secret. */
import winston from 'winston';

export type Logger = winston.Logger;

/** A JSON-lines logger at `level` (error, warn, info, debug). */
export function createLogger(level = 'info'): Logger {
  return winston.createLogger({
    level,
    format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
    transports: [new winston.transports.Console()],
  });
}
