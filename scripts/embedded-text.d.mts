/**
 * The texts the source embeds, as the constants it declares for them (`__SKILLBAKE_RUNTIME__`: src/runtime/helpers.ts,
 * `__SKILLBAKE_SERVE_RUNTIME__`: src/runtime/serve.ts, `__SKILLBAKE_HASH_WORKER__`: src/compile/hash-worker.ts), ready
 * for a `define` setting.
 */
export function embeddedTexts(): Record<string, string>;
