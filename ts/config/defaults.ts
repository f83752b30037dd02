/**
 * Defaults more than one module (or native code) relies on, defined here once. This module
 * imports nothing, so any layer may use it. The native side's copies are checked against these
 * by test/unit/shared-constants.test.ts.
 */

/**
 * Requests one model may hold queued when its config sets no `max_queue_size` (Triton's 0 =
 * unlimited): `TritonConfig.maxQueueSizeHardLimit`'s default. Native code's own default is
 * `kDefaultMaxQueueSizeHardLimit` in cpp/core/model_config.h.
 */
export const DEFAULT_MAX_QUEUE_SIZE_HARD_LIMIT = 65536;

/** Seconds stop() lets requests in flight finish (Triton's `--exit-timeout-secs` default). */
export const DEFAULT_EXIT_TIMEOUT_SECS = 30;

/** The same in milliseconds: the default wait of every stop()/unload that drains requests. */
export const DEFAULT_EXIT_TIMEOUT_MS = DEFAULT_EXIT_TIMEOUT_SECS * 1000;
