// The logger chainkit writes to: any pino-style logger.

/** Any pino-style logger: `logger.info(obj, msg)`. */
export interface Logger {
  /** Step inputs and outputs (redacted). */
  debug(obj: object, msg?: string): void;
  /** Chain start and end. */
  info(obj: object, msg?: string): void;
  /** Retries and timeouts. */
  warn(obj: object, msg?: string): void;
  /** Failed runs. */
  error(obj: object, msg?: string): void;
}
