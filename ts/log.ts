/**
 * The server's log (Triton's logging extension): info, warning and error lines switched on or
 * off, a verbose level, the default or ISO8601 format, stdout/stderr or a log file. The file is
 * chosen at start-up only: no file path is ever settable over the network.
 *
 * The file is written through a stream (no blocking write per line while serving); close()
 * resolves once every line written before it is in the file. Lines logged after close() (the
 * last lines of a shutdown) are appended synchronously, so none is lost at exit.
 */
import { appendFileSync, createWriteStream, type WriteStream } from 'node:fs';
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
  /** Resolves once the stream wrote everything and closed (set by the first close()). */
  #closing: Promise<void> | null = null;
  /** Lines logged while the stream closes: appended after its last line, in order. */
  #whileClosing: string[] | null = null;

  constructor(options: LoggerOptions = {}) {
    this.#settings = {
      log_file: options.logFile ?? '',
      log_info: options.logInfo ?? true,
      log_warning: options.logWarning ?? true,
      log_error: options.logError ?? true,
      log_verbose_level: options.logVerbose ?? 0,
      log_format: options.logFormat ?? 'default',
    };
    if (this.#settings.log_file) {
      this.#file = createWriteStream(this.#settings.log_file, { flags: 'a' });
      // An unwritable log file must not crash the server (an 'error' without a listener throws).
      this.#file.on('error', (err) => process.stderr.write(`infernode: cannot write the log file: ${err.message}\n`));
    }
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
          // Triton keeps the level as an int32.
          if (value > 2147483647) {
            throw invalidArg(`Unable to parse 'log_verbose_level', value is out of range [ 0, 2147483647 ], got: ${value}`);
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

  /**
   * Flushes and closes the log file (if any): resolves once every line logged before is in the
   * file. Safe to call more than once; later lines are appended synchronously.
   */
  close(): Promise<void> {
    if (this.#closing) return this.#closing;
    const file = this.#file;
    this.#file = null;
    if (!file) {
      this.#closing = Promise.resolve();
      return this.#closing;
    }
    this.#whileClosing = [];
    this.#closing = new Promise<void>((resolve) => {
      const closed = (): void => {
        const late = this.#whileClosing ?? [];
        this.#whileClosing = null;
        if (late.length > 0) appendLate(this.#settings.log_file, late.join(''));
        resolve();
      };
      // 'close' comes after 'finish' (every line flushed) and the descriptor's close; an
      // 'error' (disk full, file removed) must not keep a shutdown waiting.
      file.once('close', closed);
      file.once('error', closed);
      file.end();
    });
    return this.#closing;
  }

  #write(severity: string, message: string, toStderr: boolean): void {
    const now = new Date();
    const line = this.#settings.log_format === 'ISO8601'
      ? `${now.toISOString()} ${severity} ${process.pid}] ${message}\n`
      : `${severity}${pad(now.getMonth() + 1)}${pad(now.getDate())} ${pad(now.getHours())}:${pad(now.getMinutes())}:` +
        `${pad(now.getSeconds())}.${pad(now.getMilliseconds(), 3)} ${process.pid}] ${message}\n`;
    if (this.#file) this.#file.write(line);
    else if (this.#whileClosing) this.#whileClosing.push(line);
    else if (this.#settings.log_file) appendLate(this.#settings.log_file, line);
    else (toStderr ? process.stderr : process.stdout).write(line);
  }
}

/** A line logged after the file was closed: appended synchronously (nothing waits for it). */
function appendLate(file: string, line: string): void {
  try {
    appendFileSync(file, line);
  } catch {
    // The log file is gone or unwritable: a line at exit cannot be reported anywhere better.
  }
}
