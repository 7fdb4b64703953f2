/** The JavaScript text of src/runtime/helpers.ts that generated bundle modules embed. */
export function runtimeText(): string;
