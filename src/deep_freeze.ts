/** Records shared between requests (caches): nobody may change one, down to its nested arrays and objects. */
export function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) if (inner !== null && typeof inner === 'object') deepFreeze(inner as object);
  return Object.freeze(value);
}
