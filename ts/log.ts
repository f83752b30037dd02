/**
 * The server's log (Triton's logging extension): info, warning and error lines switched on or
 * off, a verbose level, the default or ISO8601 format, stdout/stderr or a log file. The file is
 * chosen at start-up only: no file path is ever settable over the network.
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { invalidArg } from './errors';

export type LogFormat = 'default' | 'ISO8601';

/** The settings as GET/POST /v2/logging shows them (Triton's names). */
export interface LogSettings {
  log_file: string;
  log_info: boolean;
  log_warning: boolean;
  log_error: boolean;
  log_verbose_level: number;
  log_format: LogFormat;
}

export interface LoggerOptions {
  logFile?: string;
  logInfo?: boolean;
  logWarning?: boolean;
  logError?: boolean;
  logVerbose?: number;
  logFormat?: LogFormat;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

export class Logger {
  #settings: LogSettings;
  #file: WriteStream | null = null;

  constructor(options: LoggerOptions = {}) {
    this.#settings = {
      log_file: options.logFile ?? '',
      log_info: options.logInfo ?? true,
      log_warning: options.logWarning ?? true,
      log_error: options.logError ?? true,
      log_verbose_level: options.logVerbose ?? 0,
      log_format: options.logFormat ?? 'default',
    };
    if (this.#settings.log_file) this.#file = createWriteStream(this.#settings.log_file, { flags: 'a' });
  }

  get settings(): LogSettings {
    return { ...this.#settings };
  }

  /** Applies a POST /v2/logging body; log_file is read-only. Returns the new settings. */
  update(changes: Record<string, unknown>): LogSettings {
    const next = { ...this.#settings };
    for (const [key, value] of Object.entries(changes)) {
      switch (key) {
        case 'log_info':
        case 'log_warning':
        case 'log_error':
          if (typeof value !== 'boolean') throw invalidArg(`log setting '${key}' must be a boolean`);
          next[key] = value;
          break;
        case 'log_verbose_level':
          if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
            throw invalidArg(`log setting 'log_verbose_level' must be a non-negative integer`);
          }
          next.log_verbose_level = value;
          break;
        case 'log_format':
          if (value !== 'default' && value !== 'ISO8601') throw invalidArg(`log setting 'log_format' must be 'default' or 'ISO8601'`);
          next.log_format = value;
          break;
        case 'log_file':
          throw invalidArg(`log setting 'log_file' cannot be changed over the network; start the server with --log-file`);
        default:
          throw invalidArg(`unknown log setting '${key}'`);
      }
    }
    this.#settings = next;
    return this.settings;
  }

  info(message: string): void {
    if (this.#settings.log_info) this.#write('I', message, false);
  }

  warning(message: string): void {
    if (this.#settings.log_warning) this.#write('W', message, true);
  }

  error(message: string): void {
    if (this.#settings.log_error) this.#write('E', message, true);
  }

  /** Logged when the verbose level is at least `level`. */
  verbose(level: number, message: string): void {
    if (this.#settings.log_verbose_level >= level) this.#write('V', message, false);
  }

  /** Closes the log file (if any). */
  close(): void {
    this.#file?.end();
    this.#file = null;
  }

  #write(severity: string, message: string, toStderr: boolean): void {
    const now = new Date();
    const line = this.#settings.log_format === 'ISO8601'
      ? `${now.toISOString()} ${severity} ${process.pid}] ${message}\n`
      : `${severity}${pad(now.getMonth() + 1)}${pad(now.getDate())} ${pad(now.getHours())}:${pad(now.getMinutes())}:` +
        `${pad(now.getSeconds())}.${pad(now.getMilliseconds(), 3)} ${process.pid}] ${message}\n`;
    if (this.#file) this.#file.write(line);
    else (toStderr ? process.stderr : process.stdout).write(line);
  }
}
