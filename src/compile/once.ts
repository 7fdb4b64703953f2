/** `make`, called at the first call of the function returned and not again: that call's value is every call's. */
export function once<T>(make: () => T): () => T {
  let made: { value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}
