import * as z from "zod";

/**
 * The `z` of a config's `import { z } from "skillbake"` (see config.ts's shim): zod whole, as the library imports it.
 * The CLI's build puts src/cli/config-zod.ts in this module's place.
 */
export function zodForConfigs(): unknown {
  return z;
}
