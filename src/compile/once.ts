/** `make`, called at the first call of the function returned and not again: that call's value is every call's. */
export function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}

/**
 * An object with a property for each of `makers`, each made at its first read (by its maker, once) and the same
 * thereafter; enumerable, so that the object's keys are known without making any.
 */
export function lazyProperties<Makers extends Record<string, () => unknown>>(makers: Makers): { readonly [K in keyof Makers]: ReturnType<Makers[K]> } {
  const properties = {} as { [K in keyof Makers]: ReturnType<Makers[K]> };
  for (const [key, make] of Object.entries(makers)) Object.defineProperty(properties, key, { enumerable: true, get: once(make) });
  return properties;
}
